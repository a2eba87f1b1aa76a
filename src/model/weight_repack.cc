// repack_weights: one huge-page-advised anonymous mapping for every repacked matrix.
#include "model/weight_repack.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/system_memory.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_iq4_x8.h"
#include "quant/block_kquant_x8.h"
#include "quant/block_legacy_x8.h"
#include "quant/block_q4_0x8.h"
#include "quant/block_q8_0x8.h"
#include "quant/row_int8x8.h"

namespace pagoda {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kMatrixAlign = 64;

constexpr size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// An anonymous mapping of `bytes` (a multiple of 2 MiB) starting on a 2 MiB boundary, so huge pages can cover all
// of it; unmapped when the last view's owner goes. nullptr when the system refuses it.
std::shared_ptr<uint8_t> map_anonymous(size_t bytes) {
  const size_t mapped = bytes + kHugePage;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* aligned = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(p), kHugePage));
  // Advice only: where THP is off this is a no-op and the weights still work on 4 KiB pages.
  (void)::madvise(aligned, bytes, MADV_HUGEPAGE);
  return std::shared_ptr<uint8_t>(aligned, [p, mapped](uint8_t*) { ::munmap(p, mapped); });
}

// The source pages of a file mapping are no longer read: drop them from the mapping so they stop counting in the
// process's memory (they stay in the page cache, and would simply fault back in if anything touched them). Only whole
// pages inside the range, so no neighbouring tensor loses a page it still reads (even that would only cost a fault).
void release_source_pages(const void* data, size_t bytes) {
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(data) + page - 1) / page * page;
  const uintptr_t end = (uintptr_t(data) + bytes) / page * page;
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

int64_t repack_weights(const kernels::KernelTable& kernels, ModelWeights& weights, bool drop_source_pages) {
  struct Repack {
    WeightView* view;
    DType layout;
  };
  std::vector<Repack> repacks;
  // Matrices whose rows the fused ops split as one range laid end to end (Q, K, V; gate, up) share one group size,
  // so that a split at a multiple of it in the whole range is one in each matrix.
  auto consider = [&](std::initializer_list<WeightView*> together) {
    int64_t max_group_rows = 16;
    for (WeightView* w : together)
      if (w->data != nullptr)
        max_group_rows = std::min(max_group_rows,
                                  dtype_interleave_rows(preferred_layout(kernels, w->dtype, w->num_rows, w->num_cols)));
    for (WeightView* w : together) {
      if (w->data == nullptr) continue;  // a matrix another pipeline stage holds
      const DType layout = preferred_layout(kernels, w->dtype, w->num_rows, w->num_cols, max_group_rows);
      if (layout != w->dtype) repacks.push_back({w, layout});
    }
  };
  for (LayerWeights& lw : weights.layers) {
    consider({&lw.wq, &lw.wk, &lw.wv});
    consider({&lw.w_gate, &lw.w_up});
    consider({&lw.wo});
    consider({&lw.w_down});
    consider({&lw.router});
    for (ExpertWeights& e : lw.experts) {
      consider({&e.w_gate, &e.w_up});
      consider({&e.w_down});
    }
    consider({&lw.shared_expert.w_gate, &lw.shared_expert.w_up});  // null views when the layer has none
    consider({&lw.shared_expert.w_down});
    consider({&lw.per_layer_gate});  // null views without per-layer embeddings
    consider({&lw.per_layer_proj});
    consider({&lw.conv_in});  // null views outside a short-convolution layer
    consider({&lw.conv_out});
    consider({&lw.dn_qkv});  // null views outside a gated DeltaNet layer
    consider({&lw.dn_z});
    consider({&lw.dn_out});
    consider({&lw.mla_q_a});  // null views outside a latent attention layer
    consider({&lw.mla_q_b});
    consider({&lw.mla_kv_a});
    for (WeightView& w : lw.mla_k_b) consider({&w});
    for (WeightView& w : lw.mla_v_b) consider({&w});
  }
  consider({&weights.per_layer_model_proj});
  consider({&weights.output});  // a copy even when it is token_embd's data
  if (repacks.empty()) return 0;
  size_t total = 0;
  for (const Repack& r : repacks)
    total = round_up(total, kMatrixAlign) + size_t(layout_bytes(r.layout, r.view->num_rows, r.view->num_cols));
  // The copy is private memory as big as the matrices; a model that only fits as page cache keeps its file layout.
  const size_t available = size_t(available_ram_bytes().value_or(0));
  if (available != 0 && total > available / 10 * 9) return 0;
  const size_t region_bytes = round_up(total, kHugePage);
  std::shared_ptr<uint8_t> region = map_anonymous(region_bytes);
  if (region == nullptr) return 0;
  size_t offset = 0;
  for (const Repack& r : repacks) {
    WeightView* w = r.view;
    offset = round_up(offset, kMatrixAlign);
    uint8_t* dst = region.get() + offset;
    const size_t source_bytes = size_t(w->num_rows * w->row_bytes());
    const size_t repacked_bytes = size_t(layout_bytes(r.layout, w->num_rows, w->num_cols));
    repack_matrix(w->dtype, r.layout, w->data, dst, w->num_rows, w->num_cols);
    w->dtype = r.layout;
    if (drop_source_pages && w->data != weights.token_embd.data) release_source_pages(w->data, source_bytes);
    w->data = dst;
    offset += repacked_bytes;
  }
  (void)::mprotect(region.get(), region_bytes, PROT_READ);  // the weights are read-only from here on, as a file's
  weights.owned_storage.push_back(std::move(region));
  return int64_t(repacks.size());
}

DType preferred_layout(const kernels::KernelTable& kernels, DType dtype, int64_t num_rows, int64_t num_cols,
                       int64_t max_group_rows) {
  for (const std::optional<DType>& layout : kernels.layouts[size_t(dtype)]) {
    if (!layout) continue;
    const int64_t group_rows = dtype_interleave_rows(*layout);
    if (group_rows > max_group_rows || num_rows % group_rows != 0) continue;
    if ((*layout == DType::kInt8x8 || *layout == DType::kInt8x16) && num_cols % 4 != 0) continue;  // 4-value words
    if (num_cols % dtype_block_size(*layout) != 0) continue;
    return *layout;
  }
  return dtype;
}

int64_t layout_bytes(DType layout, int64_t num_rows, int64_t num_cols) {
  return num_rows * dtype_row_bytes(layout, num_cols);
}

void repack_matrix(DType dtype, DType layout, const void* src, void* dst, int64_t num_rows, int64_t num_cols) {
  switch (layout) {
    case DType::kQ4_0x8:
      PAGODA_CHECK(dtype == DType::kQ4_0, "{} cannot be repacked into q4_0x8", dtype_name(dtype));
      quant::repack_q4_0x8(static_cast<const quant::BlockQ4_0*>(src), static_cast<quant::BlockQ4_0x8*>(dst), num_rows,
                           num_cols / 32);
      return;
    case DType::kQ8_0x8:
      PAGODA_CHECK(dtype == DType::kQ8_0, "{} cannot be repacked into q8_0x8", dtype_name(dtype));
      quant::repack_q8_0x8(static_cast<const quant::BlockQ8_0*>(src), static_cast<quant::BlockQ8_0x8*>(dst), num_rows,
                           num_cols / 32);
      return;
    case DType::kAwqInt4x8:
      PAGODA_CHECK(dtype_is_awq_int4(dtype) && !dtype_is_row_interleaved(dtype),
                   "{} cannot be repacked into awq_int4x8", dtype_name(dtype));
      quant::repack_awq_int4x8(src, static_cast<quant::BlockAwqInt4x8*>(dst), num_rows, num_cols,
                               dtype_block_size(dtype));
      return;
    case DType::kQ4_0x16:
      PAGODA_CHECK(dtype == DType::kQ4_0, "{} cannot be repacked into q4_0x16", dtype_name(dtype));
      quant::repack_q4_0x16(static_cast<const quant::BlockQ4_0*>(src), static_cast<quant::BlockQ4_0x16*>(dst), num_rows,
                            num_cols / 32);
      return;
    case DType::kQ8_0x16:
      PAGODA_CHECK(dtype == DType::kQ8_0, "{} cannot be repacked into q8_0x16", dtype_name(dtype));
      quant::repack_q8_0x16(static_cast<const quant::BlockQ8_0*>(src), static_cast<quant::BlockQ8_0x16*>(dst), num_rows,
                            num_cols / 32);
      return;
    case DType::kAwqInt4x16:
      PAGODA_CHECK(dtype_is_awq_int4(dtype) && !dtype_is_row_interleaved(dtype),
                   "{} cannot be repacked into awq_int4x16", dtype_name(dtype));
      quant::repack_awq_int4x16(src, static_cast<quant::BlockAwqInt4x16*>(dst), num_rows, num_cols,
                                dtype_block_size(dtype));
      return;
    case DType::kInt8x16:
      PAGODA_CHECK(dtype == DType::kInt8, "{} cannot be repacked into int8x16", dtype_name(dtype));
      quant::repack_int8x16(src, dst, num_rows, num_cols);
      return;
    case DType::kInt8x8:
      PAGODA_CHECK(dtype == DType::kInt8, "{} cannot be repacked into int8x8", dtype_name(dtype));
      quant::repack_int8x8(src, dst, num_rows, num_cols);
      return;
    case DType::kQ2_Kx8:
      PAGODA_CHECK(dtype == DType::kQ2_K, "{} cannot be repacked into q2_Kx8", dtype_name(dtype));
      quant::repack_q2_Kx8(static_cast<const quant::BlockQ2_K*>(src), static_cast<quant::BlockQ2_Kx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kQ3_Kx8:
      PAGODA_CHECK(dtype == DType::kQ3_K, "{} cannot be repacked into q3_Kx8", dtype_name(dtype));
      quant::repack_q3_Kx8(static_cast<const quant::BlockQ3_K*>(src), static_cast<quant::BlockQ3_Kx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kQ4_Kx8:
      PAGODA_CHECK(dtype == DType::kQ4_K, "{} cannot be repacked into q4_Kx8", dtype_name(dtype));
      quant::repack_q4_Kx8(static_cast<const quant::BlockQ4_K*>(src), static_cast<quant::BlockQ4_Kx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kQ5_Kx8:
      PAGODA_CHECK(dtype == DType::kQ5_K, "{} cannot be repacked into q5_Kx8", dtype_name(dtype));
      quant::repack_q5_Kx8(static_cast<const quant::BlockQ5_K*>(src), static_cast<quant::BlockQ5_Kx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kQ6_Kx8:
      PAGODA_CHECK(dtype == DType::kQ6_K, "{} cannot be repacked into q6_Kx8", dtype_name(dtype));
      quant::repack_q6_Kx8(static_cast<const quant::BlockQ6_K*>(src), static_cast<quant::BlockQ6_Kx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kQ7_Kx8:
      PAGODA_CHECK(dtype == DType::kQ7_K, "{} cannot be repacked into q7_Kx8", dtype_name(dtype));
      quant::repack_q7_Kx8(static_cast<const quant::BlockQ7_K*>(src), static_cast<quant::BlockQ7_Kx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kIQ4_NLx8:
      PAGODA_CHECK(dtype == DType::kIQ4_NL, "{} cannot be repacked into iq4_nlx8", dtype_name(dtype));
      quant::repack_iq4_nlx8(static_cast<const quant::BlockIQ4_NL*>(src), static_cast<quant::BlockIQ4_NLx8*>(dst), num_rows,
                           num_cols / 32);
      return;
    case DType::kIQ4_XSx8:
      PAGODA_CHECK(dtype == DType::kIQ4_XS, "{} cannot be repacked into iq4_xsx8", dtype_name(dtype));
      quant::repack_iq4_xsx8(static_cast<const quant::BlockIQ4_XS*>(src), static_cast<quant::BlockIQ4_XSx8*>(dst), num_rows,
                           num_cols / quant::kQK_K);
      return;
    case DType::kMXFP4x8:
      PAGODA_CHECK(dtype == DType::kMXFP4, "{} cannot be repacked into mxfp4x8", dtype_name(dtype));
      quant::repack_mxfp4x8(static_cast<const quant::BlockMXFP4*>(src), static_cast<quant::BlockMXFP4x8*>(dst), num_rows,
                           num_cols / 32);
      return;
    case DType::kQ4_1x8:
      PAGODA_CHECK(dtype == DType::kQ4_1, "{} cannot be repacked into q4_1x8", dtype_name(dtype));
      quant::repack_q4_1x8(static_cast<const quant::BlockQ4_1*>(src), static_cast<quant::BlockQ4_1x8*>(dst), num_rows,
                           num_cols / 32);
      return;
    case DType::kQ5_1x8:
      PAGODA_CHECK(dtype == DType::kQ5_1, "{} cannot be repacked into q5_1x8", dtype_name(dtype));
      quant::repack_q5_1x8(static_cast<const quant::BlockQ5_1*>(src), static_cast<quant::BlockQ5_1x8*>(dst), num_rows,
                           num_cols / 32);
      return;
    default: PAGODA_CHECK(false, "no repacking into {}", dtype_name(layout));
  }
}

}  // namespace pagoda
