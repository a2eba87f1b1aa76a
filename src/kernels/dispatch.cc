// Chooses the kernel table once per process: cpuid (via the compiler's __builtin_cpu_supports) decides,
// and PAGODA_ISA=scalar|avx2 pins a choice for tests and comparisons.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8.h"

namespace pagoda::kernels {
namespace {

// Designated initializers, so that a new KernelTable field cannot silently shift the others.
constexpr KernelTable kScalarTable{
    .isa = Isa::kScalar,
    .matmul_f32 = ref::matmul_f32,
    .matmul_f16 = ref::matmul_f16,
    .matmul_bf16 = ref::matmul_bf16,
    .matmul_q8_0 = ref::matmul_q8_0,
    .matmul_q4_0 = ref::matmul_q4_0,
    .matmul_q8_0_q8_0 = ref::matmul_q8_0_q8_0,
    .matmul_q4_0_q8_0 = ref::matmul_q4_0_q8_0,
    .matmul_q4_0x8 = ref::matmul_q4_0x8,
    .matmul_q4_0x8_q8_0 = ref::matmul_q4_0x8_q8_0,
    .matmul_q8_0x8 = ref::matmul_q8_0x8,
    .matmul_q8_0x8_q8_0 = ref::matmul_q8_0x8_q8_0,
    .quantize_row_q8_0 = quant::quantize_row_q8_0,
    .matmul_int8 = ref::matmul_int8,
    .matmul_int8_int8 = ref::matmul_int8_int8,
    .matmul_int8x8 = ref::matmul_int8x8,
    .matmul_int8x8_int8 = ref::matmul_int8x8_int8,
    .quantize_row_int8 = quant::quantize_int8_values,
    .matmul_awq_int4_g32 = ref::matmul_awq_int4_g32,
    .matmul_awq_int4_g64 = ref::matmul_awq_int4_g64,
    .matmul_awq_int4_g128 = ref::matmul_awq_int4_g128,
    .matmul_awq_int4_g32_q8_0 = ref::matmul_awq_int4_g32_q8_0,
    .matmul_awq_int4_g64_q8_0 = ref::matmul_awq_int4_g64_q8_0,
    .matmul_awq_int4_g128_q8_0 = ref::matmul_awq_int4_g128_q8_0,
    .matmul_awq_int4x8 = ref::matmul_awq_int4x8,
    .matmul_awq_int4x8_q8_0 = ref::matmul_awq_int4x8_q8_0,
    .rmsnorm = ref::rmsnorm,
    .rmsnorm_q8_0 = ref::rmsnorm_q8_0,
    .dot = ref::dot,
    .axpy = ref::axpy,
    .silu_mul = ref::silu_mul,
    .paged_attention = ref::paged_attention,
};

constexpr KernelTable kAvx2Table{
    .isa = Isa::kAvx2,
    .matmul_f32 = avx2::matmul_f32,
    .matmul_f16 = avx2::matmul_f16,
    .matmul_bf16 = avx2::matmul_bf16,
    .matmul_q8_0 = avx2::matmul_q8_0,
    .matmul_q4_0 = avx2::matmul_q4_0,
    .matmul_q8_0_q8_0 = avx2::matmul_q8_0_q8_0,
    .matmul_q4_0_q8_0 = avx2::matmul_q4_0_q8_0,
    .matmul_q4_0x8 = avx2::matmul_q4_0x8,
    .matmul_q4_0x8_q8_0 = avx2::matmul_q4_0x8_q8_0,
    .matmul_q8_0x8 = avx2::matmul_q8_0x8,
    .matmul_q8_0x8_q8_0 = avx2::matmul_q8_0x8_q8_0,
    .quantize_row_q8_0 = avx2::quantize_row_q8_0,
    .matmul_int8 = avx2::matmul_int8,
    .matmul_int8_int8 = avx2::matmul_int8_int8,
    .matmul_int8x8 = avx2::matmul_int8x8,
    .matmul_int8x8_int8 = avx2::matmul_int8x8_int8,
    .quantize_row_int8 = avx2::quantize_row_int8,
    .matmul_awq_int4_g32 = avx2::matmul_awq_int4_g32,
    .matmul_awq_int4_g64 = avx2::matmul_awq_int4_g64,
    .matmul_awq_int4_g128 = avx2::matmul_awq_int4_g128,
    .matmul_awq_int4_g32_q8_0 = avx2::matmul_awq_int4_g32_q8_0,
    .matmul_awq_int4_g64_q8_0 = avx2::matmul_awq_int4_g64_q8_0,
    .matmul_awq_int4_g128_q8_0 = avx2::matmul_awq_int4_g128_q8_0,
    .matmul_awq_int4x8 = avx2::matmul_awq_int4x8,
    .matmul_awq_int4x8_q8_0 = avx2::matmul_awq_int4x8_q8_0,
    .rmsnorm = avx2::rmsnorm,
    .rmsnorm_q8_0 = avx2::rmsnorm_q8_0,
    .dot = avx2::dot,
    .axpy = avx2::axpy,
    .silu_mul = avx2::silu_mul,
    .paged_attention = avx2::paged_attention,
};

const KernelTable& choose() {
  const char* pinned = std::getenv("PAGODA_ISA");
  if (pinned != nullptr && *pinned != '\0') {
    if (std::strcmp(pinned, "scalar") == 0) return kScalarTable;
    if (std::strcmp(pinned, "avx2") == 0 && cpu_supports(Isa::kAvx2)) return kAvx2Table;
    std::fprintf(stderr, "pagoda: PAGODA_ISA=%s is not available on this CPU (use scalar or avx2); using %s\n", pinned,
                 cpu_supports(Isa::kAvx2) ? "avx2" : "scalar");
  }
  return cpu_supports(Isa::kAvx2) ? kAvx2Table : kScalarTable;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
  }
  return "?";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }
  return false;
}

const KernelTable* kernels_for(Isa isa) {
  if (!cpu_supports(isa)) return nullptr;
  return isa == Isa::kAvx2 ? &kAvx2Table : &kScalarTable;
}

const KernelTable& best_kernels() {
  static const KernelTable& table = choose();  // chosen once; the table itself is immutable
  return table;
}

}  // namespace pagoda::kernels
