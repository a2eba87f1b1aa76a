// repack_weights: at load, rewrites the model's Q4_0, Q8_0 and INT8 matrices into the 8-row interleaved layouts
// (quant/block_q4_0x8.h, block_q8_0x8.h, row_int8x8.h) that the faster kernels read, in one anonymous region that asks
// for transparent huge pages (fewer TLB misses while decode streams the weights). The views are pointed at the copies
// and the region is owned by ModelWeights; the file's pages are then no longer read. Only matrices whose rows come in
// whole groups of 8 are repacked; the embedding table keeps its plain rows for the lookup (a tied classifier gets
// its own copy). The copy costs private memory as big as the matrices (the file's pages are dropped for it): when
// that is more than 90% of MemAvailable, or the mapping is refused, nothing is repacked.
#pragma once

#include "kernels/kernels.h"
#include "model/model_weights.h"

namespace pagoda {

// How many matrices were repacked (0 when the kernel table has no Q4_0x8 kernels or no matrix is Q4_0, Q8_0 or INT8).
// drop_source_pages: the views point into read-only file mappings (TensorSet::file_mapped), whose pages each
// repacked matrix no longer needs are then dropped from the process (never done to a caller's buffer, where
// MADV_DONTNEED would zero it).
int64_t repack_weights(const kernels::KernelTable& kernels, ModelWeights& weights, bool drop_source_pages);

}  // namespace pagoda
