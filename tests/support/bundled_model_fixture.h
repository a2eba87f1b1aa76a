// BundledModelTest: a test suite's fixture holding the bundled stories260K (model and tokenizer), loaded once per
// suite with the best kernels.
#pragma once

#include <gtest/gtest.h>

#include "kernels/kernels.h"
#include "loader/loaded_model.h"

namespace pagoda {

class BundledModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = load_model("", kernels::best_kernels());
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    loaded_ = new LoadedModel(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete loaded_;
    loaded_ = nullptr;
  }

  inline static LoadedModel* loaded_ = nullptr;
};

}  // namespace pagoda
