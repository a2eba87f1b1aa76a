// repack_weights: one huge-page-advised anonymous mapping for every repacked matrix.
#include "model/weight_repack.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"
#include "quant/block_q4_0x8.h"
#include "quant/block_q8_0x8.h"
#include "quant/row_int8x8.h"

namespace pagoda {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kMatrixAlign = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// An anonymous mapping, unmapped when the last view's owner goes.
std::shared_ptr<uint8_t> map_anonymous(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  PAGODA_CHECK(p != MAP_FAILED, "cannot map {} bytes for the repacked weights", bytes);
  // Advice only: where THP is off this is a no-op and the weights still work on 4 KiB pages.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [bytes](uint8_t* q) { ::munmap(q, bytes); });
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
  if (w.num_rows % 8 != 0) return false;
  if (w.dtype == DType::kInt8) return w.num_cols % 4 == 0;
  return (w.dtype == DType::kQ4_0 || w.dtype == DType::kQ8_0) && w.num_cols % 32 == 0;
}

}  // namespace

int64_t repack_weights(const kernels::KernelTable& kernels, ModelWeights& weights, bool drop_source_pages) {
  if (kernels.matmul_q4_0x8_q8_0 == nullptr || kernels.matmul_q8_0x8_q8_0 == nullptr ||
      kernels.matmul_int8x8_int8 == nullptr)
    return 0;
  std::vector<WeightView*> views;
  for (LayerWeights& lw : weights.layers)
    for (WeightView* w : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
      if (repackable(*w)) views.push_back(w);
  if (repackable(weights.output)) views.push_back(&weights.output);  // a copy even when it is token_embd's data
  if (views.empty()) return 0;
  size_t total = 0;
  for (const WeightView* w : views) total = round_up(total, kMatrixAlign) + size_t(w->num_rows * w->row_bytes());
  std::shared_ptr<uint8_t> region = map_anonymous(round_up(total, kHugePage));
  size_t offset = 0;
  for (WeightView* w : views) {
    offset = round_up(offset, kMatrixAlign);
    uint8_t* dst = region.get() + offset;
    if (w->dtype == DType::kQ4_0) {
      quant::repack_q4_0x8(static_cast<const quant::BlockQ4_0*>(w->data), reinterpret_cast<quant::BlockQ4_0x8*>(dst),
                           w->num_rows, w->num_cols / 32);
      w->dtype = DType::kQ4_0x8;
    } else if (w->dtype == DType::kInt8) {
      quant::repack_int8x8(w->data, dst, w->num_rows, w->num_cols);
      w->dtype = DType::kInt8x8;
    } else {
      quant::repack_q8_0x8(static_cast<const quant::BlockQ8_0*>(w->data), reinterpret_cast<quant::BlockQ8_0x8*>(dst),
                           w->num_rows, w->num_cols / 32);
      w->dtype = DType::kQ8_0x8;
    }
    const size_t bytes = size_t(w->num_rows * w->row_bytes());
    if (drop_source_pages && w->data != weights.token_embd.data) release_source_pages(w->data, bytes);  // lookup
    w->data = dst;
    offset += bytes;
  }
  weights.owned_storage.push_back(std::move(region));
  return int64_t(views.size());
}

}  // namespace pagoda
