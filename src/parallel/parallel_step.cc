// The step message (a fixed header, then every array of the BatchView in one int32 buffer), and one rank's part
// of a step.
#include "parallel/parallel_step.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "core/check.h"
#include "kv/kv_storage.h"
#include "parallel/micro_batch.h"

namespace pagoda::parallel {
namespace {

static_assert(sizeof(TokenId) == 4 && sizeof(Pos) == 4 && sizeof(BlockId) == 4 && sizeof(KvBlockCopy) == 8);

enum HeaderField : size_t {
  kKind,  // 1 = a step follows, 0 = stop
  kNumTokens,
  kNumSeqs,
  kMaxBlocksPerSeq,
  kNumLogitsRows,
  kNumCopies,
  kKvNumSlots,
  kKvBlockSize,
  kKvDType,
  kWsMaxTokens,
  kWsMaxContext,
  kWsMaxLogitsRows,
  kWsNumThreads,  // rank 0's, for the record: each rank sizes its own pool
  kWsRopeContext,
  kNumHeaderFields,
};
using Header = std::array<int64_t, kNumHeaderFields>;

int64_t payload_size(const Header& h) {
  return 3 * h[kNumTokens] + (h[kNumSeqs] + 1) + h[kNumSeqs] + h[kNumSeqs] * h[kMaxBlocksPerSeq] + h[kNumLogitsRows] +
         2 * h[kNumCopies];
}

void append(std::vector<int32_t>& out, const void* data, size_t count) {
  const size_t at = out.size();
  out.resize(at + count);
  if (count > 0) std::memcpy(out.data() + at, data, count * sizeof(int32_t));
}

// This rank's part of one step. Tensor parallel only: the part's forward (its collectives meet the other
// ranks'). Pipeline: each micro-batch in turn, its hidden states from the stage before (or its tokens, on the
// first stage) and to the stage after (or, on the last, its logits to rank 0). On rank 0 the step's logits end
// up in ws.logits, in batch.logits_rows order; the returned view is only meaningful there.
LogitsView run_step(const Model& part, Collectives& world, const ParallelLayout& layout, const BatchView& batch,
                    const KvCacheView& kv, Workspace& ws, ThreadPool& pool, StageBuffers& buffers) {
  if (layout.pipeline_parallel == 1) return part.forward(batch, kv, ws, pool);
  const int32_t me = world.rank(), stage = layout.stage_of(me), tp_rank = layout.tp_rank_of(me);
  const bool last = stage == layout.pipeline_parallel - 1;
  const int64_t dim = part.config().dim, vocab = part.config().vocab_size;
  const std::vector<MicroBatch> micro = split_micro_batches(batch, layout.pipeline_parallel);
  if (buffers.sends.size() < micro.size()) buffers.sends.resize(micro.size());
  for (size_t m = 0; m < micro.size(); ++m) {
    const BatchView mb = micro[m].view(batch);
    const int64_t n = mb.num_tokens();
    const float* hidden_in = nullptr;
    if (stage > 0) {
      world.recv(layout.world_rank(stage - 1, tp_rank), ws.x.data(), n * dim * int64_t(sizeof(float)));
      hidden_in = ws.x.data();
    }
    const float* hidden = part.forward_hidden(mb, hidden_in, kv, ws, pool);
    std::vector<float>& out = buffers.sends[m];  // stays put until wait_sends()
    if (!last) {
      out.assign(hidden, hidden + n * dim);
      world.send(layout.world_rank(stage + 1, tp_rank), out.data(), int64_t(out.size() * sizeof(float)));
      continue;
    }
    const LogitsView logits = part.forward_logits(mb, ws, pool);  // every rank of the stage takes part
    if (tp_rank == 0 && logits.num_rows > 0) {
      out.assign(logits.data, logits.data + int64_t(logits.num_rows) * vocab);
      world.send(0, out.data(), int64_t(out.size() * sizeof(float)));
    }
  }
  if (me == 0) {
    // The last stage's logits, micro-batch after micro-batch, each row to its place in the step's order.
    const int32_t from = layout.world_rank(layout.pipeline_parallel - 1, 0);
    for (const MicroBatch& m : micro) {
      const int64_t rows = int64_t(m.logits_rows.size());
      if (rows == 0) continue;
      buffers.logits.resize(size_t(rows * vocab));
      world.recv(from, buffers.logits.data(), rows * vocab * int64_t(sizeof(float)));
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(ws.logits.data() + int64_t(m.step_logits_idx[size_t(r)]) * vocab, buffers.logits.data() + r * vocab,
                    sizeof(float) * size_t(vocab));
    }
  }
  world.wait_sends();
  return LogitsView{ws.logits.data(), int32_t(batch.logits_rows.size()), int32_t(vocab)};
}

}  // namespace

ParallelLeader::ParallelLeader(std::unique_ptr<Model> part, Collectives& world, ParallelLayout layout)
    : part_(std::move(part)), world_(world), layout_(layout) {
  PAGODA_CHECK(world_.rank() == 0, "the leader is rank 0");
  PAGODA_CHECK(world_.size() == layout_.num_ranks(), "{} ranks for tensor parallel {} x pipeline parallel {}",
               world_.size(), layout_.tensor_parallel, layout_.pipeline_parallel);
}

ParallelLeader::~ParallelLeader() {
  Header stop{};
  world_.broadcast(stop.data(), sizeof(stop));
}

LogitsView ParallelLeader::forward(const BatchView& batch, const KvCacheView& kv, Workspace& ws,
                                   ThreadPool& pool) const {
  // The steps sent to the other ranks carry no hidden rows: an engine over ranks is created without pooling.
  PAGODA_CHECK(batch.hidden_rows.empty(), "pooling (embeddings) does not run over --tp/--pp ranks");
  ++num_steps_;
  Header h{};
  h[kKind] = 1;
  h[kNumTokens] = batch.num_tokens();
  h[kNumSeqs] = batch.num_seqs();
  h[kMaxBlocksPerSeq] = batch.block_tables.max_blocks_per_seq;
  h[kNumLogitsRows] = int64_t(batch.logits_rows.size());
  h[kNumCopies] = int64_t(batch.block_copies.size());
  h[kKvNumSlots] = kv.num_slots;
  h[kKvBlockSize] = kv.block_size;
  h[kKvDType] = int64_t(kv.k_dtype) * 256 + int64_t(kv.v_dtype);  // K type and V type
  h[kWsMaxTokens] = ws.max_tokens;
  h[kWsMaxContext] = ws.max_context;
  h[kWsMaxLogitsRows] = ws.max_logits_rows;
  h[kWsNumThreads] = ws.num_threads;
  h[kWsRopeContext] = ws.rope_context;
  PAGODA_CHECK(batch.seq_starts.size() == size_t(h[kNumSeqs] + 1) && batch.context_lens.size() == size_t(h[kNumSeqs]));
  std::vector<int32_t> payload;
  payload.reserve(size_t(payload_size(h)));
  append(payload, batch.tokens.data(), batch.tokens.size());
  append(payload, batch.positions.data(), batch.positions.size());
  append(payload, batch.slot_ids.data(), batch.slot_ids.size());
  append(payload, batch.seq_starts.data(), batch.seq_starts.size());
  append(payload, batch.context_lens.data(), batch.context_lens.size());
  append(payload, batch.block_tables.data, size_t(h[kNumSeqs] * h[kMaxBlocksPerSeq]));
  append(payload, batch.logits_rows.data(), batch.logits_rows.size());
  append(payload, batch.block_copies.data(), 2 * batch.block_copies.size());
  PAGODA_CHECK(int64_t(payload.size()) == payload_size(h));
  world_.broadcast(h.data(), sizeof(h));
  world_.broadcast(payload.data(), int64_t(payload.size() * sizeof(int32_t)));
  return run_step(*part_, world_, layout_, batch, kv, ws, pool, buffers_);
}

const float* ParallelLeader::forward_hidden(const BatchView&, const float*, const KvCacheView&, Workspace&,
                                            ThreadPool&) const {
  PAGODA_CHECK(false, "ParallelLeader::forward_hidden: a leader runs whole steps");
  return nullptr;
}

LogitsView ParallelLeader::forward_logits(const BatchView&, Workspace&, ThreadPool&) const {
  PAGODA_CHECK(false, "ParallelLeader::forward_logits: a leader runs whole steps");
  return {};
}

void run_parallel_worker(const Model& part, Collectives& world, ParallelLayout layout, int32_t num_threads) {
  PAGODA_CHECK(world.rank() != 0, "rank 0 leads");
  std::optional<KvStorage> kv;
  std::optional<Workspace> ws;
  std::optional<ThreadPool> pool;
  StageBuffers buffers;
  Header shape{};  // the KV shape the current storage was made for
  std::vector<int32_t> payload;
  std::vector<KvBlockCopy> copies;
  while (true) {
    Header h{};
    world.broadcast(h.data(), sizeof(h));
    if (h[kKind] == 0) return;
    payload.resize(size_t(payload_size(h)));
    world.broadcast(payload.data(), int64_t(payload.size() * sizeof(int32_t)));
    const bool same_kv = kv && shape[kKvNumSlots] == h[kKvNumSlots] && shape[kKvBlockSize] == h[kKvBlockSize] &&
                         shape[kKvDType] == h[kKvDType];
    if (!same_kv) {
      kv.reset();
      kv.emplace(part.config().kv_shape(), int32_t(h[kKvNumSlots] / h[kKvBlockSize]), int32_t(h[kKvBlockSize]),
                 KvCacheTypes(KvDType(h[kKvDType] / 256), KvDType(h[kKvDType] % 256)));
    }
    if (!pool) pool.emplace(num_threads);  // 0: every core, as the engine's pool
    if (!ws || ws->max_tokens != h[kWsMaxTokens] || ws->max_context != h[kWsMaxContext] ||
        ws->max_logits_rows != h[kWsMaxLogitsRows]) {
      ws.reset();
      ws.emplace(part.config(), int32_t(h[kWsMaxTokens]), int32_t(h[kWsMaxContext]), int32_t(h[kWsMaxLogitsRows]),
                 pool->num_threads());
    }
    ws->rope_context = int32_t(h[kWsRopeContext]);
    shape = h;

    const int32_t* p = payload.data();
    auto take = [&p](int64_t count) {
      const int32_t* at = p;
      p += count;
      return at;
    };
    const size_t n = size_t(h[kNumTokens]), s = size_t(h[kNumSeqs]);
    BatchView batch;
    batch.tokens = {take(int64_t(n)), n};
    batch.positions = {take(int64_t(n)), n};
    batch.slot_ids = {take(int64_t(n)), n};
    batch.seq_starts = {take(int64_t(s) + 1), s + 1};
    batch.context_lens = {take(int64_t(s)), s};
    batch.block_tables.num_seqs = int32_t(s);
    batch.block_tables.max_blocks_per_seq = int32_t(h[kMaxBlocksPerSeq]);
    batch.block_tables.data = take(int64_t(s) * h[kMaxBlocksPerSeq]);
    batch.logits_rows = {take(h[kNumLogitsRows]), size_t(h[kNumLogitsRows])};
    copies.resize(size_t(h[kNumCopies]));
    if (!copies.empty())
      std::memcpy(static_cast<void*>(copies.data()), take(2 * h[kNumCopies]), copies.size() * sizeof(KvBlockCopy));
    batch.block_copies = copies;
    for (const KvBlockCopy& c : copies) kv->copy_block(c.src_block_id, c.dst_block_id);
    run_step(part, world, layout, batch, kv->view(), *ws, *pool, buffers);
  }
}

}  // namespace pagoda::parallel
