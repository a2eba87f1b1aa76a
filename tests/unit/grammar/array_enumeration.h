// Test helper for the grammar module: every compact JSON array of up to n items out of a small alphabet, each checked
// against the independent validator (schema_validator.h). Owns the enumeration only; compiling is the caller's.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar_test_util.h"
#include "schema_validator.h"

namespace pagoda::grammar::testing {

// Every compact array of up to `max_len` items out of `alphabet` (JSON texts): `g` accepts it exactly when the
// validator does (a failure names the text). Returns how many the validator accepted.
inline int32_t expect_arrays_match_validator(const std::shared_ptr<const CompiledGrammar>& g,
                                             const nlohmann::ordered_json& schema,
                                             const std::vector<std::string>& alphabet, int32_t max_len) {
  int32_t accepted = 0;
  std::vector<size_t> digits;
  for (int32_t len = 0; len <= max_len; ++len) {
    digits.assign(size_t(len), 0);
    while (true) {
      std::string text = "[";
      for (size_t i = 0; i < digits.size(); ++i) text += (i ? "," : "") + alphabet[digits[i]];
      text += "]";
      const bool valid = validate(schema, nlohmann::ordered_json::parse(text)).empty();
      EXPECT_EQ(matches(g, text), valid) << text << "\nschema " << schema.dump();
      accepted += valid;
      size_t i = 0;
      while (i < digits.size() && ++digits[i] == alphabet.size()) digits[i++] = 0;
      if (i == digits.size()) break;
    }
  }
  return accepted;
}

}  // namespace pagoda::grammar::testing
