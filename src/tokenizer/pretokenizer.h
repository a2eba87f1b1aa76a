// PreTokenizer: splits text into the pieces byte-level BPE merges within, with one or more split regexes run
// with ICU. Each regex splits every piece the previous one made (behavior "Isolated": every match is a piece,
// and so is any gap between matches), as llama.cpp's unicode_regex_split chains them; a Hugging Face
// tokenizer.json has one. Owns the compiled patterns; immutable and thread-safe after create.
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

// Whose regex syntax a pattern is written in; both become ICU patterns with the writer's meaning.
enum class RegexDialect {
  // Hugging Face tokenizers (Oniguruma): \s is Unicode White_Space.
  kOniguruma,
  // llama.cpp's tables (std::regex ECMAScript over its collapsed text): \s is Unicode White_Space, \d \w \b are
  // ASCII, $ is only the end of the piece, and \p{Lu} \p{Ll} \p{Lt} \p{Lm} \p{Lo} all mean any letter (llama.cpp
  // collapses every letter to one category).
  kEcmaScript,
};

class PreTokenizer {
 public:
  // Compiles `regexes` (applied in order). Fails with ICU's reason when a pattern does not compile.
  static Result<PreTokenizer> create(std::vector<std::string> regexes, RegexDialect dialect);
  // One Hugging Face (Oniguruma) regex.
  static Result<PreTokenizer> create(std::string regex);
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // The pieces of `text` in order; they concatenate back to `text`. Bytes that are not valid UTF-8 stay in the
  // pieces (they match as U+FFFD would), so byte-level BPE still encodes every byte.
  std::vector<std::string_view> split(std::string_view text) const;
  const std::vector<std::string>& regexes() const { return regexes_; }

 private:
  PreTokenizer(std::vector<std::string> regexes, std::vector<std::unique_ptr<U_ICU_NAMESPACE::RegexPattern>> patterns);

  std::vector<std::string> regexes_;
  std::vector<std::unique_ptr<U_ICU_NAMESPACE::RegexPattern>> patterns_;
};

}  // namespace pagoda
