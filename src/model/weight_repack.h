// repack_weights: at load, rewrites the model's matrices into the in-memory layouts the kernel table prefers for
// their dtypes (KernelTable::layouts: the 8- and 16-row interleaved quant/block_q4_0x8.h, block_q8_0x8.h,
// block_awq_int4x8.h, row_int8x8.h), in one anonymous region that asks for transparent huge pages (fewer TLB misses
// while decode streams the weights). The views are pointed at the copies and the region is owned by ModelWeights;
// the file's pages are then no longer read. Only matrices whose rows come in whole groups are repacked; the embedding table keeps its plain rows for the lookup (a tied classifier gets
// its own copy). The copy costs private memory as big as the matrices (the file's pages are dropped for it): when
// that is more than 90% of MemAvailable, or the mapping is refused, nothing is repacked.
#pragma once

#include "kernels/kernels.h"
#include "model/model_weights.h"

namespace pagoda {

// How many matrices were repacked (0 when the table prefers no other layout for any of them).
// drop_source_pages: the views point into read-only file mappings (TensorSet::file_mapped), whose pages each
// repacked matrix no longer needs are then dropped from the process (never done to a caller's buffer, where
// MADV_DONTNEED would zero it).
int64_t repack_weights(const kernels::KernelTable& kernels, ModelWeights& weights, bool drop_source_pages);

// The layout `kernels` multiplies a [num_rows, num_cols] matrix of `dtype` in best, of the preferred ones whose shape
// constraints the matrix meets (whole row groups of at most max_group_rows, whole words or blocks); `dtype` itself
// when there is none.
DType preferred_layout(const kernels::KernelTable& kernels, DType dtype, int64_t num_rows, int64_t num_cols,
                       int64_t max_group_rows = 16);
// Bytes of the matrix in `layout` (the file's for every layout but AWQ INT4x8, which repeats scales per 32 values).
int64_t layout_bytes(DType layout, int64_t num_rows, int64_t num_cols);
// src: the matrix in `dtype` -> dst: layout_bytes(layout, ...) bytes in `layout` (one preferred_layout returned).
void repack_matrix(DType dtype, DType layout, const void* src, void* dst, int64_t num_rows, int64_t num_cols);

}  // namespace pagoda
