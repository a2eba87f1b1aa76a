// The kernel registry: what each kernel set (one source folder, or one compilation of it) provides, written as
// one traits entry per weight dtype (its matmul entry points per set, and the in-memory layout each set wants it
// in) plus one set of vector ops per set. dispatch.cc layers the sets of a level into its KernelTable, a later set
// overriding an earlier one only where it provides something, so a new instruction set adds only what it speeds
// up. Internal to the kernels library: callers use kernels.h.
#pragma once

#include <array>
#include <optional>
#include <span>

#include "kernels/kernels.h"

namespace pagoda::kernels {

// In the order they layer: ref/, avx2/, avx_vnni/ (compiled twice: with AVX-VNNI's VEX encoding, and with AVX512-VL
// + VNNI's EVEX one for CPUs that have vpdpbusd only there), avx512/, avx512/bf16 (the files that need AVX512-BF16,
// layered only where the CPU has it), amx/.
enum class KernelSet : uint8_t { kRef, kAvx2, kAvxVnni, kAvxVnniEvex, kAvx512, kAvx512Bf16, kAmx };

template <class T>
struct PerKernelSet {
  T ref{}, avx2{}, avx_vnni{}, avx_vnni_evex{}, avx512{}, avx512_bf16{}, amx{};
  const T& operator[](KernelSet set) const {
    switch (set) {
      case KernelSet::kRef: return ref;
      case KernelSet::kAvx2: return avx2;
      case KernelSet::kAvxVnni: return avx_vnni;
      case KernelSet::kAvxVnniEvex: return avx_vnni_evex;
      case KernelSet::kAvx512: return avx512;
      case KernelSet::kAvx512Bf16: return avx512_bf16;
      case KernelSet::kAmx: return amx;
    }
    return ref;
  }
};

// Preferred in-memory layouts of a weight dtype, best first (empty: keep the file's).
using Layouts = std::array<std::optional<DType>, 2>;

struct WeightTypeTraits {
  DType dtype;
  PerKernelSet<MatmulKernels> kernels{};  // an empty entry (or empty form) leaves the earlier set's in place
  PerKernelSet<Layouts> layouts{};        // an empty entry leaves the earlier set's choice in place
};

// One entry per weight dtype that has kernels.
std::span<const WeightTypeTraits> weight_type_traits();
// The vector ops per set (null fields leave the earlier set's in place).
const PerKernelSet<VectorKernels>& vector_kernels();

}  // namespace pagoda::kernels
