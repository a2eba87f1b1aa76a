// repack_weights: one huge-page-advised anonymous mapping for every repacked matrix.
#include "model/weight_repack.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/system_memory.h"
#include "quant/block_awq_int4x8.h"
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

bool repackable(const WeightView& w) {
  if (w.data == nullptr) return false;  // a matrix another pipeline stage holds
  if (w.num_rows % 8 != 0) return false;
  if (w.dtype == DType::kInt8) return w.num_cols % 4 == 0;
  if (w.dtype == DType::kAwqInt4G32 || w.dtype == DType::kAwqInt4G64 || w.dtype == DType::kAwqInt4G128) return true;
  return (w.dtype == DType::kQ4_0 || w.dtype == DType::kQ8_0) && w.num_cols % 32 == 0;
}

// Bytes per row once repacked: the same as the file's for every layout but AWQ's (scales repeated per 32 values).
int64_t repacked_row_bytes(const WeightView& w) {
  return dtype_is_awq_int4(w.dtype) ? dtype_row_bytes(DType::kAwqInt4x8, w.num_cols) : w.row_bytes();
}

}  // namespace

int64_t repack_weights(const kernels::KernelTable& kernels, ModelWeights& weights, bool drop_source_pages) {
  if (kernels.matmul_q4_0x8_q8_0 == nullptr || kernels.matmul_q8_0x8_q8_0 == nullptr ||
      kernels.matmul_int8x8_int8 == nullptr || kernels.matmul_awq_int4x8_q8_0 == nullptr)
    return 0;
  std::vector<WeightView*> views;
  for (LayerWeights& lw : weights.layers)
    for (WeightView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
      if (repackable(*w)) views.push_back(w);
  if (repackable(weights.output)) views.push_back(&weights.output);  // a copy even when it is token_embd's data
  if (views.empty()) return 0;
  size_t total = 0;
  for (const WeightView* w : views)
    total = round_up(total, kMatrixAlign) + size_t(w->num_rows * repacked_row_bytes(*w));
  // The copy is private memory as big as the matrices; a model that only fits as page cache keeps its file layout.
  const size_t available = size_t(available_ram_bytes().value_or(0));
  if (available != 0 && total > available / 10 * 9) return 0;
  const size_t region_bytes = round_up(total, kHugePage);
  std::shared_ptr<uint8_t> region = map_anonymous(region_bytes);
  if (region == nullptr) return 0;
  size_t offset = 0;
  for (WeightView* w : views) {
    offset = round_up(offset, kMatrixAlign);
    uint8_t* dst = region.get() + offset;
    const size_t source_bytes = size_t(w->num_rows * w->row_bytes());
    const size_t repacked_bytes = size_t(w->num_rows * repacked_row_bytes(*w));
    if (w->dtype == DType::kQ4_0) {
      quant::repack_q4_0x8(static_cast<const quant::BlockQ4_0*>(w->data), reinterpret_cast<quant::BlockQ4_0x8*>(dst),
                           w->num_rows, w->num_cols / 32);
      w->dtype = DType::kQ4_0x8;
    } else if (dtype_is_awq_int4(w->dtype)) {
      quant::repack_awq_int4x8(w->data, reinterpret_cast<quant::BlockAwqInt4x8*>(dst), w->num_rows, w->num_cols,
                               dtype_block_size(w->dtype));
      w->dtype = DType::kAwqInt4x8;
    } else if (w->dtype == DType::kInt8) {
      quant::repack_int8x8(w->data, dst, w->num_rows, w->num_cols);
      w->dtype = DType::kInt8x8;
    } else {
      quant::repack_q8_0x8(static_cast<const quant::BlockQ8_0*>(w->data), reinterpret_cast<quant::BlockQ8_0x8*>(dst),
                           w->num_rows, w->num_cols / 32);
      w->dtype = DType::kQ8_0x8;
    }
    if (drop_source_pages && w->data != weights.token_embd.data) release_source_pages(w->data, source_bytes);
    w->data = dst;
    offset += repacked_bytes;
  }
  (void)::mprotect(region.get(), region_bytes, PROT_READ);  // the weights are read-only from here on, as a file's
  weights.owned_storage.push_back(std::move(region));
  return int64_t(views.size());
}

}  // namespace pagoda
