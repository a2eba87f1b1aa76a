// AMX-INT8 entry points for INT8x16 weights: amx/matmul_int8x16_tiles.h on the hardware tiles, the avx512 kernel
// for decode-sized calls. Unverified on AMX hardware so far (the development machines had none); the tile loops are
// checked against the reference through a C++ model of the tiles (tests/unit/kernels/amx_tiles_test.cc).
#include <immintrin.h>

#include <cstdint>

#include "kernels/amx/amx_kernels.h"
#include "kernels/amx/matmul_int8x16_tiles.h"
#include "kernels/avx512/avx512_kernels.h"

namespace pagoda::kernels::amx {
namespace {

// Palette 1, tiles 0-7 all 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// GCC's _tile_* macros paste the tile number into the instruction text, so each number is spelled out.
#define PAGODA_FOR_TILE(kTile, STMT) \
  if constexpr (kTile == 0) {        \
    STMT(0);                         \
  } else if constexpr (kTile == 1) { \
    STMT(1);                         \
  } else if constexpr (kTile == 2) { \
    STMT(2);                         \
  } else if constexpr (kTile == 3) { \
    STMT(3);                         \
  } else if constexpr (kTile == 4) { \
    STMT(4);                         \
  } else if constexpr (kTile == 5) { \
    STMT(5);                         \
  } else if constexpr (kTile == 6) { \
    STMT(6);                         \
  } else {                           \
    static_assert(kTile == 7);       \
    STMT(7);                         \
  }

struct HardwareTiles {
  static void configure() {
    TileConfig config;
    for (int t = 0; t < 8; ++t) config.colsb[t] = uint16_t(detail::kTileBytes), config.rows[t] = uint8_t(16);
    _tile_loadconfig(&config);
  }
  static void release() { _tile_release(); }
  template <int kTile>
  static void zero() {
#define PAGODA_TILE_ZERO(t) _tile_zero(t)
    PAGODA_FOR_TILE(kTile, PAGODA_TILE_ZERO)
#undef PAGODA_TILE_ZERO
  }
  template <int kTile>
  static void load(const void* base, int64_t stride) {
#define PAGODA_TILE_LOAD(t) _tile_loadd(t, base, stride)
    PAGODA_FOR_TILE(kTile, PAGODA_TILE_LOAD)
#undef PAGODA_TILE_LOAD
  }
  template <int kTile>
  static void store(void* base, int64_t stride) {
#define PAGODA_TILE_STORE(t) _tile_stored(t, base, stride)
    PAGODA_FOR_TILE(kTile, PAGODA_TILE_STORE)
#undef PAGODA_TILE_STORE
  }
  // The four products of matmul_int8x16_tiles: C tile 2i + j from A tile 4 + i and B tile 6 + j.
  template <int kC, int kA, int kB>
  static void dpbssd() {
    static_assert(kA == 4 + kC / 2 && kB == 6 + kC % 2);
    if constexpr (kC == 0) {
      _tile_dpbssd(0, 4, 6);
    } else if constexpr (kC == 1) {
      _tile_dpbssd(1, 4, 7);
    } else if constexpr (kC == 2) {
      _tile_dpbssd(2, 5, 6);
    } else {
      static_assert(kC == 3);
      _tile_dpbssd(3, 5, 7);
    }
  }
};
#undef PAGODA_FOR_TILE

// Below this many tokens a tile pass computes mostly padding rows: the avx512 kernel's broadcasts are cheaper.
constexpr int64_t kMinTileTokens = 16;

}  // namespace

void matmul_int8x16_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                         int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  if (num_tokens < kMinTileTokens) {
    avx512::matmul_int8x16_int8(w, xq, x_scales, y, num_out, num_in, num_tokens, y_stride);
    return;
  }
  detail::matmul_int8x16_tiles<HardwareTiles>(w, xq, x_scales, y, num_out, num_in, num_tokens, y_stride);
}

void matmul_int8x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(avx512::quantize_row_int8, x, num_in, num_tokens);
  matmul_int8x16_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::amx
