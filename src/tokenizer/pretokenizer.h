// PreTokenizer: splits text into the pieces byte-level BPE merges within, with a Hugging Face Split regex
// (behavior "Isolated": every match is a piece, and so is any gap between matches). Runs the regex with ICU.
// Owns the compiled pattern; immutable and thread-safe after create (each split makes its own matcher).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/status.h"

#include <unicode/uversion.h>

U_NAMESPACE_BEGIN
class RegexPattern;
U_NAMESPACE_END

namespace pagoda {

// The split regexes of the three byte-level BPE families, exactly as their tokenizer.json files write them.
inline constexpr std::string_view kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kLlama3SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class PreTokenizer {
 public:
  // Compiles `regex` (Oniguruma syntax as HF writes it; \s and \S mean Unicode White_Space as in Oniguruma,
  // not ICU's narrower \s). Fails with ICU's reason when the pattern does not compile.
  static Result<PreTokenizer> create(std::string regex);
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // The pieces of `text` in order; they concatenate back to `text`. Bytes that are not valid UTF-8 stay in the
  // pieces (they match as U+FFFD would), so byte-level BPE still encodes every byte.
  std::vector<std::string_view> split(std::string_view text) const;
  const std::string& regex() const { return regex_; }

 private:
  PreTokenizer(std::string regex, std::unique_ptr<U_ICU_NAMESPACE::RegexPattern> pattern);

  std::string regex_;
  std::unique_ptr<U_ICU_NAMESPACE::RegexPattern> pattern_;
};

}  // namespace pagoda
