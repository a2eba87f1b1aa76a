// The AMX INT8x16 kernel's tile loops (kernels/amx/matmul_int8x16_tiles.h) on a plain C++ model of the tiles, so
// that a CPU without AMX checks them bit for bit against the scalar reference: token counts around the 16-token
// tiles and their pairs, odd numbers of row groups, inputs that end inside a 64-byte block, row slices, -128
// weights. The hardware path itself runs in the kernel tests' amx instances, skipped where the CPU has no AMX.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/amx/matmul_int8x16_tiles.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels {
namespace {

// Eight tiles of 16 rows x 64 bytes with tdpbssd's arithmetic (int32 wrapping, hence the unsigned sums).
struct ModelTiles {
  struct Tile {
    alignas(64) uint8_t bytes[16][64];
  };
  static inline thread_local Tile tiles[8];
  static inline thread_local bool configured = false;

  static void configure() { configured = true; }
  static void release() { configured = false; }
  template <int kTile>
  static void zero() {
    ASSERT_TRUE(configured);
    std::memset(tiles[kTile].bytes, 0, sizeof(Tile::bytes));
  }
  template <int kTile>
  static void load(const void* base, int64_t stride) {
    ASSERT_TRUE(configured);
    for (int r = 0; r < 16; ++r) std::memcpy(tiles[kTile].bytes[r], static_cast<const uint8_t*>(base) + r * stride, 64);
  }
  template <int kTile>
  static void store(void* base, int64_t stride) {
    ASSERT_TRUE(configured);
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<uint8_t*>(base) + r * stride, tiles[kTile].bytes[r], 64);
  }
  template <int kC, int kA, int kB>
  static void dpbssd() {
    ASSERT_TRUE(configured);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        uint32_t c;
        std::memcpy(&c, tiles[kC].bytes[m] + 4 * n, 4);
        for (int k = 0; k < 16; ++k)
          for (int i = 0; i < 4; ++i)
            c += uint32_t(int32_t(int8_t(tiles[kA].bytes[m][4 * k + i])) *
                          int32_t(int8_t(tiles[kB].bytes[k][4 * n + i])));
        std::memcpy(tiles[kC].bytes[m] + 4 * n, &c, 4);
      }
  }
};

TEST(AmxTilesTest, TileLoopsGiveThePlainInt8KernelsBits) {
  std::mt19937 rng(25);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t num_in : {4, 64, 100, 192}) {
    for (int64_t num_out : {16, 48, 64}) {
      for (int64_t num_tokens : {1, 15, 16, 17, 32, 33, 50}) {
        SCOPED_TRACE(testing::Message() << "num_in " << num_in << " num_out " << num_out << " tokens " << num_tokens);
        const int64_t row_bytes = quant::int8_row_bytes(num_in);
        std::vector<float> wf(size_t(num_out * num_in)), x(size_t(num_tokens * num_in));
        for (float& v : wf) v = dist(rng);
        for (float& v : x) v = 3.0f * dist(rng);
        std::vector<uint8_t> plain(size_t(num_out * row_bytes)), packed(plain.size());
        for (int64_t o = 0; o < num_out; ++o)
          quant::quantize_row_int8(wf.data() + o * num_in, plain.data() + o * row_bytes, num_in);
        for (size_t i = 0; i < plain.size(); i += 13) plain[i] = i % row_bytes >= 4 ? 0x80 : plain[i];  // some -128
        quant::repack_int8x16(plain.data(), packed.data(), num_out, num_in);
        std::vector<int8_t> xq(x.size());
        std::vector<float> xs(static_cast<size_t>(num_tokens));
        for (int64_t t = 0; t < num_tokens; ++t)
          xs[size_t(t)] = quant::quantize_int8_values(x.data() + t * num_in, xq.data() + t * num_in, num_in);
        for (size_t i = 0; i < xq.size(); i += 29) xq[i] = -128;

        std::vector<float> want(size_t(num_tokens * num_out)), got(want.size(), NAN), sliced(want.size(), NAN);
        ref::matmul_int8_int8(plain.data(), xq.data(), xs.data(), want.data(), num_out, num_in, num_tokens, num_out);
        detail::matmul_int8x16_tiles<ModelTiles>(packed.data(), xq.data(), xs.data(), got.data(), num_out, num_in,
                                                 num_tokens, num_out);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
        for (int64_t begin = 0; begin < num_out; begin += 16)
          detail::matmul_int8x16_tiles<ModelTiles>(packed.data() + begin * row_bytes, xq.data(), xs.data(),
                                                   sliced.data() + begin, 16, num_in, num_tokens, num_out);
        ASSERT_EQ(std::memcmp(sliced.data(), want.data(), sliced.size() * sizeof(float)), 0);
        EXPECT_FALSE(ModelTiles::configured) << "the tiles are released at the end";
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
