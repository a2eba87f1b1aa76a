// The SIMD levels every kernel test runs on, as a value-parameterized fixture: one instance per level above scalar,
// each comparing that level's table with the scalar reference. A level this CPU (or this build) cannot run is
// skipped with GTEST_SKIP, so ctest reports it as skipped rather than passed.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kernels/kernels.h"

namespace pagoda::kernels {

inline const Isa kSimdLevels[] = {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx};
// Every level, scalar first, for tests that compare each table with itself.
inline const Isa kAllLevels[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx};

class SimdLevelTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    simd_ = kernels_for(GetParam());
    if (simd_ == nullptr) GTEST_SKIP() << isa_name(GetParam()) << " is not available on this CPU";
  }
  const KernelTable* simd_ = nullptr;
};

inline std::string simd_level_name(const ::testing::TestParamInfo<Isa>& info) {
  return std::string(isa_name(info.param));
}

}  // namespace pagoda::kernels

// Instantiates a SimdLevelTest-derived suite for every level of kSimdLevels.
#define PAGODA_TEST_EVERY_SIMD_LEVEL(suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(Isa, suite, ::testing::ValuesIn(::pagoda::kernels::kSimdLevels), \
                           ::pagoda::kernels::simd_level_name)
