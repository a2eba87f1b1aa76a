// cpuid leaves 1 and 7 (subleaves 0 and 1), XCR0 through xgetbv, and the AMX tile permission through arch_prctl.
#include "kernels/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace pagoda::kernels {
namespace {

bool bit(uint32_t reg, int b) { return ((reg >> b) & 1u) != 0; }

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(1, 0, eax, ebx, ecx, edx);
  const bool osxsave = bit(ecx, 27);
  f.fma = bit(ecx, 12);
  f.f16c = bit(ecx, 29);
  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    f.os_ymm = (xcr0 & 0x6) == 0x6;                // SSE and AVX state
    f.os_zmm = f.os_ymm && (xcr0 & 0xe0) == 0xe0;  // opmask, upper halves of zmm0-15, zmm16-31
    f.os_tiles = (xcr0 & 0x60000) == 0x60000;      // XTILECFG and XTILEDATA
  }
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const uint32_t max_subleaf = eax;
  f.avx2 = bit(ebx, 5);
  f.avx512f = bit(ebx, 16);
  f.avx512dq = bit(ebx, 17);
  f.avx512bw = bit(ebx, 30);
  f.avx512vl = bit(ebx, 31);
  f.avx512_vnni = bit(ecx, 11);
  f.amx_bf16 = bit(edx, 22);
  f.amx_tile = bit(edx, 24);
  f.amx_int8 = bit(edx, 25);
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx_vnni = bit(eax, 4);
    f.avx512_bf16 = bit(eax, 5);
  }
  return f;
}

// Linux's arch_prctl codes (asm/prctl.h) and the tile data's xsave component number, spelled out: older headers
// lack them.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

AmxPermission request_amx_permission(const CpuFeatures& f) {
  AmxPermission p;
  if (!(f.amx_tile && f.amx_int8)) return p;
  if (!f.os_tiles) {
    p.refusal = "the OS does not enable the tile state (XCR0)";
    return p;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    p.refusal = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM) refused: ") + std::strerror(errno);
    return p;
  }
  p.granted = true;
  return p;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const AmxPermission& amx_tile_permission() {
  static const AmxPermission permission = request_amx_permission(cpu_features());
  return permission;
}

std::string cpu_feature_names(const CpuFeatures& f) {
  std::string names;
  auto add = [&](bool present, const char* name) {
    if (!present) return;
    if (!names.empty()) names += ' ';
    names += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx_vnni, "avx_vnni");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.amx_tile, "amx_tile");
  add(f.amx_int8, "amx_int8");
  add(f.amx_bf16, "amx_bf16");
  return names;
}

}  // namespace pagoda::kernels
