// Chooses the kernel tables: which levels this CPU runs (cpu_features.h), which kernel sets each level layers
// (kernel_registry.h), and the one table a process uses (best_kernels, which PAGODA_ISA may pin to a level).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/cpu_features.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernels.h"

namespace pagoda::kernels {
namespace {

constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx};

bool has_avx2(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c && f.os_ymm; }
// What the avx_vnni_evex and avx512 sets are compiled for (-mavx512f/bw/vl/dq/vnni).
bool has_avx512_vnni(const CpuFeatures& f) {
  return has_avx2(f) && f.os_zmm && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512_vnni;
}

// Why a level cannot run here, or empty when it can.
std::string unavailable_reason(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kScalar: return {};
    case Isa::kAvx2: return has_avx2(f) ? std::string() : "needs AVX2, FMA and F16C";
    case Isa::kAvxVnni:
      return has_avx2(f) && (f.avx_vnni || has_avx512_vnni(f)) ? std::string()
                                                               : "needs AVX-VNNI or AVX512-VL with VNNI";
    case Isa::kAvx512: return has_avx512_vnni(f) ? std::string() : "needs AVX-512 F/BW/VL/DQ with VNNI";
    case Isa::kAmx: {
      if (!has_avx512_vnni(f) || !f.amx_tile || !f.amx_int8) return "needs AMX-TILE and AMX-INT8 with the avx512 level";
      const AmxPermission& permission = amx_tile_permission();
      return permission.granted ? std::string() : permission.refusal;
    }
  }
  return "unknown level";
}

// The kernel sets of a level, earliest first; a later one overrides what it provides.
std::vector<KernelSet> kernel_sets(Isa isa) {
  const CpuFeatures& f = cpu_features();
  std::vector<KernelSet> sets{KernelSet::kRef};
  if (isa >= Isa::kAvx2) sets.push_back(KernelSet::kAvx2);
  if (isa == Isa::kAvxVnni) sets.push_back(f.avx_vnni ? KernelSet::kAvxVnni : KernelSet::kAvxVnniEvex);
  if (isa >= Isa::kAvx512) {
    sets.push_back(KernelSet::kAvxVnniEvex);
    sets.push_back(KernelSet::kAvx512);
    if (f.avx512_bf16) sets.push_back(KernelSet::kAvx512Bf16);
  }
  if (isa >= Isa::kAmx) sets.push_back(KernelSet::kAmx);
  return sets;
}

template <class Fn>
void overlay(Fn& dst, Fn src) {
  if (src != nullptr) dst = src;
}

KernelTable build_table(Isa isa) {
  KernelTable t;
  t.isa = isa;
  for (KernelSet set : kernel_sets(isa)) {
    const VectorKernels& v = vector_kernels()[set];
    overlay(t.quantize_row_q8_0, v.quantize_row_q8_0);
    overlay(t.quantize_row_q8_K, v.quantize_row_q8_K);
    overlay(t.quantize_row_int8, v.quantize_row_int8);
    overlay(t.quantize_kv_row, v.quantize_kv_row);
    overlay(t.rmsnorm, v.rmsnorm);
    overlay(t.rmsnorm_q8_0, v.rmsnorm_q8_0);
    overlay(t.dot, v.dot);
    overlay(t.axpy, v.axpy);
    overlay(t.silu_mul, v.silu_mul);
    overlay(t.gelu_mul, v.gelu_mul);
    overlay(t.swiglu_oai_mul, v.swiglu_oai_mul);
    overlay(t.paged_attention, v.paged_attention);
    overlay(t.softmax, v.softmax);
    overlay(t.rope, v.rope);
    overlay(t.short_conv, v.short_conv);
    overlay(t.gated_delta_net, v.gated_delta_net);
    overlay(t.gated_delta_net_chunked, v.gated_delta_net_chunked);
    for (const WeightTypeTraits& traits : weight_type_traits()) {
      MatmulKernels& m = t.matmul[size_t(traits.dtype)];
      overlay(m.f32, traits.kernels[set].f32);
      overlay(m.q8_0, traits.kernels[set].q8_0);
      overlay(m.int8, traits.kernels[set].int8);
      overlay(m.q8_K, traits.kernels[set].q8_K);
      if (traits.layouts[set][0].has_value()) t.layouts[size_t(traits.dtype)] = traits.layouts[set];
    }
  }
  // A layout the table prefers must be one it can multiply (a registry mistake, caught by every test run).
  for (const auto& layouts : t.layouts)
    for (const std::optional<DType>& layout : layouts)
      PAGODA_CHECK(!layout || t.matmul_for(*layout).f32 != nullptr, "the {} table prefers {} but has no kernel for it",
                   isa_name(isa), dtype_name(*layout));
  return t;
}

const KernelTable& table_of(Isa isa) {
  static const std::vector<KernelTable> tables = [] {
    std::vector<KernelTable> all;
    for (Isa level : kAllIsas) all.push_back(build_table(level));
    return all;
  }();
  return tables[size_t(isa)];
}

const KernelTable& choose() {
  const Isa best = best_supported_isa();
  // A CPU with AMX whose tile state the OS refused falls back to avx512: said once, here, where the table is chosen.
  if (const AmxPermission& amx = amx_tile_permission(); !amx.granted && !amx.refusal.empty())
    std::fprintf(stderr, "pagoda: AMX not used (%s); using %s\n", amx.refusal.c_str(), isa_name(best).data());
  const char* pinned = std::getenv("PAGODA_ISA");
  if (pinned == nullptr || *pinned == '\0') return table_of(best);
  const std::optional<Isa> wanted = parse_isa(pinned);
  if (!wanted) {
    std::fprintf(stderr, "pagoda: PAGODA_ISA=%s is not a level (scalar, avx2, avx_vnni, avx512, amx); using %s\n",
                 pinned, isa_name(best).data());
    return table_of(best);
  }
  if (const std::string why = unavailable_reason(*wanted); !why.empty()) {
    std::fprintf(stderr, "pagoda: PAGODA_ISA=%s is not available here (%s); using %s\n", pinned, why.c_str(),
                 isa_name(best).data());
    return table_of(best);
  }
  return table_of(*wanted);
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avx_vnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (isa_name(isa) == name) return isa;
  return std::nullopt;
}

bool cpu_supports(Isa isa) { return unavailable_reason(isa).empty(); }

Isa best_supported_isa() {
  Isa best = Isa::kScalar;
  for (Isa isa : kAllIsas)
    if (cpu_supports(isa)) best = isa;
  return best;
}

const KernelTable* kernels_for(Isa isa) { return cpu_supports(isa) ? &table_of(isa) : nullptr; }

const KernelTable& best_kernels() {
  static const KernelTable& table = choose();  // chosen once; the table itself is immutable
  return table;
}

std::string isa_summary(const KernelTable& table) {
  const std::string features = cpu_feature_names(cpu_features());
  return std::string(isa_name(table.isa)) + " kernels (cpu: " + (features.empty() ? "no SIMD" : features) + ")";
}

}  // namespace pagoda::kernels
