// Decoding K-quant super-blocks to plain integers, and repacking rows of them into BlockQ*_Kx8 groups and back: the
// integers and fp16 scales move unchanged, so repacking loses nothing.
#include "quant/block_kquant_x8.h"

#include "core/check.h"

namespace pagoda::quant {
namespace {

void scales_and_mins(const uint8_t* packed, DecodedSuperBlock& out) {
  for (int j = 0; j < 8; ++j) {
    uint8_t scale = 0, min = 0;
    kquant_scale_min(packed, j, &scale, &min);
    out.scales[j] = int8_t(scale);
    out.mins[j] = min;
  }
}

// The low 4 bits of block j of a decoded row into a group's four words (BlockQ4_Kx8::qs).
void put_nibbles(const DecodedSuperBlock& s, int j, int64_t r, uint8_t* words) {
  for (int word = 0; word < 4; ++word)
    for (int k = 0; k < 4; ++k) {
      const int i = 32 * j + 4 * word + k;
      words[32 * word + 4 * r + k] = uint8_t((s.q[i] & 15) | (s.q[i + 16] & 15) << 4);
    }
}

void get_nibbles(const uint8_t* words, int j, int64_t r, DecodedSuperBlock& s) {
  for (int word = 0; word < 4; ++word)
    for (int k = 0; k < 4; ++k) {
      const int i = 32 * j + 4 * word + k;
      const uint8_t byte = words[32 * word + 4 * r + k];
      s.q[i] = byte & 15;
      s.q[i + 16] = byte >> 4;
    }
}

// The low 2 bits of block j of a decoded row into a group's two words (BlockQ2_Kx8::qs), and back (or-ing them in).
void put_bit_pairs(const DecodedSuperBlock& s, int j, int64_t r, uint8_t* words) {
  for (int word = 0; word < 2; ++word)
    for (int k = 0; k < 4; ++k) {
      uint8_t byte = 0;
      for (int p = 0; p < 4; ++p) byte = uint8_t(byte | (s.q[32 * j + 8 * p + 4 * word + k] & 3) << (2 * p));
      words[32 * word + 4 * r + k] = byte;
    }
}

void get_bit_pairs(const uint8_t* words, int j, int64_t r, DecodedSuperBlock& s) {
  for (int word = 0; word < 2; ++word)
    for (int k = 0; k < 4; ++k) {
      const uint8_t byte = words[32 * word + 4 * r + k];
      for (int p = 0; p < 4; ++p) s.q[32 * j + 8 * p + 4 * word + k] |= uint8_t((byte >> (2 * p)) & 3);
    }
}

template <class Group>
void put_scales_and_mins(const DecodedSuperBlock& s, int64_t r, Group& g) {
  g.d[r] = s.d;
  g.dmin[r] = s.dmin;
  for (int j = 0; j < 8; ++j) {
    g.scales[j][r] = uint8_t(s.scales[j]);
    g.mins[j][r] = s.mins[j];
  }
}

template <class Group>
void get_scales_and_mins(const Group& g, int64_t r, DecodedSuperBlock& s) {
  s.d = g.d[r];
  s.dmin = g.dmin[r];
  for (int j = 0; j < 8; ++j) {
    s.scales[j] = int8_t(g.scales[j][r]);
    s.mins[j] = g.mins[j][r];
  }
}

void pack_row(const DecodedSuperBlock& s, int64_t r, BlockQ4_Kx8& g) {
  put_scales_and_mins(s, r, g);
  for (int j = 0; j < 8; ++j) put_nibbles(s, j, r, g.qs[j]);
}

void pack_row(const DecodedSuperBlock& s, int64_t r, BlockQ5_Kx8& g) {
  put_scales_and_mins(s, r, g);
  for (int j = 0; j < 8; ++j) {
    put_nibbles(s, j, r, g.qs[j]);
    for (int k = 0; k < 4; ++k) {
      uint8_t bits = 0;
      for (int word = 0; word < 4; ++word) {
        const int i = 32 * j + 4 * word + k;
        bits = uint8_t(bits | ((s.q[i] >> 4) & 1) << word | ((s.q[i + 16] >> 4) & 1) << (4 + word));
      }
      g.qh[j][4 * r + k] = bits;
    }
  }
}

void pack_row(const DecodedSuperBlock& s, int64_t r, BlockQ6_Kx8& g) {
  g.d[r] = s.d;
  for (int sub = 0; sub < 16; ++sub) g.scales[sub][r] = s.scales[sub];
  for (int j = 0; j < 8; ++j) {
    put_nibbles(s, j, r, g.ql[j]);
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 4; ++k) {
        uint8_t bits = 0;
        for (int word = 0; word < 4; ++word)
          bits = uint8_t(bits | ((s.q[32 * j + 16 * h + 4 * word + k] >> 4) & 3) << (2 * word));
        g.qh[j][32 * h + 4 * r + k] = bits;
      }
  }
}

void pack_row(const DecodedSuperBlock& s, int64_t r, BlockQ2_Kx8& g) {
  g.d[r] = s.d;
  g.dmin[r] = s.dmin;
  for (int sub = 0; sub < 16; ++sub) g.scales[sub][r] = uint8_t(s.scales[sub] | s.mins[sub] << 4);
  for (int j = 0; j < 8; ++j) put_bit_pairs(s, j, r, g.qs[j]);
}

void pack_row(const DecodedSuperBlock& s, int64_t r, BlockQ3_Kx8& g) {
  g.d[r] = s.d;
  for (int sub = 0; sub < 16; ++sub) g.scales[sub][r] = s.scales[sub];
  for (int j = 0; j < 8; ++j) {
    put_bit_pairs(s, j, r, g.qs[j]);
    for (int k = 0; k < 4; ++k) {
      uint8_t bits = 0;
      for (int b = 0; b < 8; ++b) bits = uint8_t(bits | ((s.q[32 * j + 4 * b + k] >> 2) & 1) << b);
      g.qh[j][4 * r + k] = bits;
    }
  }
}

void pack_row(const DecodedSuperBlock& s, int64_t r, BlockQ7_Kx8& g) {
  g.d[r] = s.d;
  for (int sub = 0; sub < 16; ++sub) g.scales[sub][r] = s.scales[sub];
  for (int j = 0; j < 8; ++j)
    for (int w = 0; w < 8; ++w)
      for (int k = 0; k < 4; ++k) g.qs[j][32 * w + 4 * r + k] = s.q[32 * j + 4 * w + k];
}

template <class Plain, class Group>
void repack(const Plain* src, Group* dst, int64_t num_rows, int64_t num_blocks) {
  PAGODA_CHECK(num_rows % kX8Rows == 0, "repacking K-quants needs whole groups of {} rows, got {}", kX8Rows, num_rows);
  DecodedSuperBlock s;
  for (int64_t g = 0; g < num_rows / kX8Rows; ++g)
    for (int64_t b = 0; b < num_blocks; ++b)
      for (int64_t r = 0; r < kX8Rows; ++r) {
        decode_super_block(src[(g * kX8Rows + r) * num_blocks + b], s);
        pack_row(s, r, dst[g * num_blocks + b]);
      }
}

}  // namespace

void decode_super_block(const BlockQ2_K& b, DecodedSuperBlock& out) {
  out.d = b.d;
  out.dmin = b.dmin;
  for (int sub = 0; sub < 16; ++sub) {
    out.scales[sub] = int8_t(b.scales[sub] & 15);
    out.mins[sub] = uint8_t(b.scales[sub] >> 4);
  }
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 4; ++g)
      for (int m = 0; m < 32; ++m) out.q[128 * h + 32 * g + m] = uint8_t((b.qs[32 * h + m] >> (2 * g)) & 3);
}

void decode_super_block(const BlockQ3_K& b, DecodedSuperBlock& out) {
  out.d = b.d;
  out.dmin = 0;
  int scales[16];
  q3_K_scales(b.scales, scales);
  for (int sub = 0; sub < 16; ++sub) {
    out.scales[sub] = int8_t(scales[sub]);
    out.mins[sub] = 0;
  }
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 4; ++g)
      for (int m = 0; m < 32; ++m)
        out.q[128 * h + 32 * g + m] =
            uint8_t(((b.qs[32 * h + m] >> (2 * g)) & 3) | ((b.hmask[m] >> (4 * h + g)) & 1) << 2);
}

void decode_super_block(const BlockQ4_K& b, DecodedSuperBlock& out) {
  out.d = b.d;
  out.dmin = b.dmin;
  scales_and_mins(b.scales, out);
  for (int p = 0; p < 4; ++p)
    for (int l = 0; l < 32; ++l) {
      out.q[64 * p + l] = b.qs[32 * p + l] & 15;
      out.q[64 * p + 32 + l] = b.qs[32 * p + l] >> 4;
    }
}

void decode_super_block(const BlockQ5_K& b, DecodedSuperBlock& out) {
  out.d = b.d;
  out.dmin = b.dmin;
  scales_and_mins(b.scales, out);
  for (int p = 0; p < 4; ++p)
    for (int l = 0; l < 32; ++l) {
      out.q[64 * p + l] = uint8_t((b.qs[32 * p + l] & 15) | ((b.qh[l] >> (2 * p)) & 1) << 4);
      out.q[64 * p + 32 + l] = uint8_t((b.qs[32 * p + l] >> 4) | ((b.qh[l] >> (2 * p + 1)) & 1) << 4);
    }
}

void decode_super_block(const BlockQ6_K& b, DecodedSuperBlock& out) {
  out.d = b.d;
  out.dmin = 0;
  for (int s = 0; s < 16; ++s) out.scales[s] = b.scales[s];
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t a = b.ql[64 * h + l], c = b.ql[64 * h + 32 + l], high = b.qh[32 * h + l];
      out.q[128 * h + l] = uint8_t((a & 15) | (high & 3) << 4);
      out.q[128 * h + 32 + l] = uint8_t((c & 15) | ((high >> 2) & 3) << 4);
      out.q[128 * h + 64 + l] = uint8_t((a >> 4) | ((high >> 4) & 3) << 4);
      out.q[128 * h + 96 + l] = uint8_t((c >> 4) | ((high >> 6) & 3) << 4);
    }
}

void decode_super_block(const BlockQ7_K& b, DecodedSuperBlock& out) {
  out.d = b.d;
  out.dmin = 0;
  for (int s = 0; s < 16; ++s) out.scales[s] = b.scales[s];
  for (int i = 0; i < kQK_K; ++i) out.q[i] = b.q[i];
}

void repack_q2_Kx8(const BlockQ2_K* src, BlockQ2_Kx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}
void repack_q3_Kx8(const BlockQ3_K* src, BlockQ3_Kx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}
void repack_q4_Kx8(const BlockQ4_K* src, BlockQ4_Kx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}
void repack_q5_Kx8(const BlockQ5_K* src, BlockQ5_Kx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}
void repack_q6_Kx8(const BlockQ6_K* src, BlockQ6_Kx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}

void repack_q7_Kx8(const BlockQ7_K* src, BlockQ7_Kx8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}

void decode_super_block(const BlockQ2_Kx8& group, int64_t r, DecodedSuperBlock& out) {
  out = DecodedSuperBlock{};
  out.d = group.d[r];
  out.dmin = group.dmin[r];
  for (int sub = 0; sub < 16; ++sub) {
    out.scales[sub] = int8_t(group.scales[sub][r] & 15);
    out.mins[sub] = uint8_t(group.scales[sub][r] >> 4);
  }
  for (int j = 0; j < 8; ++j) get_bit_pairs(group.qs[j], j, r, out);
}

void decode_super_block(const BlockQ3_Kx8& group, int64_t r, DecodedSuperBlock& out) {
  out = DecodedSuperBlock{};
  out.d = group.d[r];
  for (int sub = 0; sub < 16; ++sub) out.scales[sub] = group.scales[sub][r];
  for (int j = 0; j < 8; ++j) {
    get_bit_pairs(group.qs[j], j, r, out);
    for (int k = 0; k < 4; ++k)
      for (int b = 0; b < 8; ++b) out.q[32 * j + 4 * b + k] |= uint8_t(((group.qh[j][4 * r + k] >> b) & 1) << 2);
  }
}

void decode_super_block(const BlockQ4_Kx8& group, int64_t r, DecodedSuperBlock& out) {
  get_scales_and_mins(group, r, out);
  for (int j = 0; j < 8; ++j) get_nibbles(group.qs[j], j, r, out);
}

void decode_super_block(const BlockQ5_Kx8& group, int64_t r, DecodedSuperBlock& out) {
  get_scales_and_mins(group, r, out);
  for (int j = 0; j < 8; ++j) {
    get_nibbles(group.qs[j], j, r, out);
    for (int k = 0; k < 4; ++k) {
      const uint8_t bits = group.qh[j][4 * r + k];
      for (int word = 0; word < 4; ++word) {
        const int i = 32 * j + 4 * word + k;
        out.q[i] = uint8_t(out.q[i] | ((bits >> word) & 1) << 4);
        out.q[i + 16] = uint8_t(out.q[i + 16] | ((bits >> (4 + word)) & 1) << 4);
      }
    }
  }
}

void decode_super_block(const BlockQ6_Kx8& group, int64_t r, DecodedSuperBlock& out) {
  out.d = group.d[r];
  out.dmin = 0;
  for (int sub = 0; sub < 16; ++sub) out.scales[sub] = group.scales[sub][r];
  for (int j = 0; j < 8; ++j) {
    get_nibbles(group.ql[j], j, r, out);
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 4; ++k) {
        const uint8_t bits = group.qh[j][32 * h + 4 * r + k];
        for (int word = 0; word < 4; ++word) {
          const int i = 32 * j + 16 * h + 4 * word + k;
          out.q[i] = uint8_t(out.q[i] | ((bits >> (2 * word)) & 3) << 4);
        }
      }
  }
}

void decode_super_block(const BlockQ7_Kx8& group, int64_t r, DecodedSuperBlock& out) {
  out.d = group.d[r];
  out.dmin = 0;
  for (int sub = 0; sub < 16; ++sub) out.scales[sub] = group.scales[sub][r];
  for (int j = 0; j < 8; ++j)
    for (int w = 0; w < 8; ++w)
      for (int k = 0; k < 4; ++k) out.q[32 * j + 4 * w + k] = group.qs[j][32 * w + 4 * r + k];
}

}  // namespace pagoda::quant
