// Chooses the kernel table once per process: cpuid (via the compiler's __builtin_cpu_supports) decides,
// and PAGODA_ISA=scalar|avx2 pins a choice for tests and comparisons.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels {
namespace {

constexpr KernelTable kScalarTable{
    Isa::kScalar, ref::matmul_f32, ref::matmul_f16, ref::matmul_bf16, ref::rmsnorm,
    ref::dot,     ref::axpy,       ref::silu_mul,
};

constexpr KernelTable kAvx2Table{
    Isa::kAvx2, avx2::matmul_f32, avx2::matmul_f16, avx2::matmul_bf16, avx2::rmsnorm,
    avx2::dot,  avx2::axpy,       avx2::silu_mul,
};

const KernelTable& choose() {
  const char* pinned = std::getenv("PAGODA_ISA");
  if (pinned != nullptr && *pinned != '\0') {
    if (std::strcmp(pinned, "scalar") == 0) return kScalarTable;
    if (std::strcmp(pinned, "avx2") == 0 && cpu_supports(Isa::kAvx2)) return kAvx2Table;
    std::fprintf(stderr, "pagoda: PAGODA_ISA=%s is not available on this CPU (use scalar or avx2); using %s\n",
                 pinned, cpu_supports(Isa::kAvx2) ? "avx2" : "scalar");
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
