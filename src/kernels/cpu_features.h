// CpuFeatures: what this CPU and its OS let a process execute, read once from cpuid and xgetbv. The dispatcher
// (dispatch.cc) is its only decision-maker; nothing here picks kernels. AMX also needs Linux's permission for the
// tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), asked for once, process-wide, by
// amx_tile_permission() when the dispatcher first considers the amx level.
#pragma once

#include <string>

namespace pagoda::kernels {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx_vnni = false;  // the VEX-encoded 256-bit vpdpbusd (Alder Lake, Sapphire Rapids, Zen 5)
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  // The OS saves the state the instructions use (XCR0): ymm for AVX, opmask and zmm for AVX-512, tiles for AMX.
  bool os_ymm = false, os_zmm = false, os_tiles = false;
};

// This CPU's features, read on first call.
const CpuFeatures& cpu_features();

// Whether Linux lets this process use the AMX tile data state: asks for it on the first call (the CPU must have AMX
// and the OS must save its state in XCR0). The answer and, when refused, why (the errno of arch_prctl) are kept.
struct AmxPermission {
  bool granted = false;
  std::string refusal;  // empty when granted or when the CPU has no AMX to ask for
};
const AmxPermission& amx_tile_permission();

// The names of the features present, space-separated, in cpuinfo's spelling ("avx2 fma f16c avx512f ...").
std::string cpu_feature_names(const CpuFeatures& f);

}  // namespace pagoda::kernels
