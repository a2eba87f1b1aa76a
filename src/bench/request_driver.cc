// The benchmarks' client side: arrivals, client-side static batches, and what each request's client saw.
#include "bench/request_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace pagoda::bench {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point at(Clock::time_point start, double offset_s) {
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offset_s));
}

// Appends `out` to what a request's client has received so far.
void merge(RequestOutput& all, RequestOutput& out) {
  all.request_id = out.request_id;
  all.new_tokens.insert(all.new_tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
  all.num_prompt_tokens = out.num_prompt_tokens;
  all.num_cached_tokens = out.num_cached_tokens;
  all.num_output_tokens = out.num_output_tokens;
  if (out.finished) {
    all.finished = true;
    all.finish_reason = out.finish_reason;
    all.timing = std::move(out.timing);
  }
}

// The client's view of a request that produced `all` (finished), of which the first `num_own` tokens were its
// answer and the rest padding.
DrivenResult result_of(const RequestOutput& all, int32_t num_own, int64_t client_arrival_us) {
  DrivenResult r;
  r.num_prompt_tokens = all.num_prompt_tokens;
  r.num_cached_tokens = all.num_cached_tokens;
  r.num_output_tokens = std::min(num_own, all.num_output_tokens);
  if (all.timing) r.timing = *all.timing;
  if (client_arrival_us >= 0) r.timing.arrival_us = client_arrival_us;
  if (int32_t(r.timing.token_us.size()) > r.num_output_tokens) {
    r.timing.token_us.resize(size_t(r.num_output_tokens));
    if (!r.timing.token_us.empty()) r.timing.finish_us = r.timing.token_us.back();
  }
  return r;
}

// Wakes the client when any stream of the current batch has a new output.
struct BatchSignal {
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t num_pushes = 0;
};

}  // namespace

Result<DriveReport> drive_requests(Engine& engine, std::vector<DrivenRequest> requests, BatchingMode mode) {
  const size_t num_requests = requests.size();
  if (mode != BatchingMode::kContinuous) {
    for (const DrivenRequest& r : requests)
      if (!r.request.sampling.ignore_eos)
        return make_error("static batching needs exact output lengths (ignore_eos) to know where members end");
  }
  DriveReport report;
  report.results.resize(num_requests);
  const Clock::time_point start = Clock::now();
  const int64_t start_us = engine.now_us();

  if (mode == BatchingMode::kContinuous) {
    // Those whose arrival time has come go in together (Engine::submit_batch), so requests arriving at the same
    // moment meet the scheduler at the same step however slowly this thread runs.
    std::vector<RequestHandle> handles;
    for (size_t i = 0; i < num_requests;) {
      std::this_thread::sleep_until(at(start, requests[i].arrival_s));
      std::vector<GenerateRequest> arrived;
      const size_t first = i;
      for (; i < num_requests && Clock::now() >= at(start, requests[i].arrival_s); ++i)
        arrived.push_back(std::move(requests[i].request));
      Result<std::vector<RequestHandle>> h = engine.submit_batch(std::move(arrived));
      if (!h.ok())
        return make_error(fmt::format("requests {} to {} were refused: {}", first, i - 1, h.status().message()));
      handles.insert(handles.end(), h->begin(), h->end());
    }
    for (size_t i = 0; i < num_requests; ++i) {
      const RequestOutput all = handles[i].stream->wait_all();
      report.results[i] = result_of(all, all.num_output_tokens, -1);
    }
  } else {
    const int32_t batch_size = engine.config().scheduler.max_num_seqs;
    std::deque<size_t> queued;
    size_t next = 0;  // the first request that has not arrived yet
    while (next < num_requests || !queued.empty()) {
      while (next < num_requests && Clock::now() >= at(start, requests[next].arrival_s)) queued.push_back(next++);
      if (queued.empty()) {
        std::this_thread::sleep_until(at(start, requests[next].arrival_s));
        continue;
      }
      std::vector<size_t> batch;
      while (!queued.empty() && int32_t(batch.size()) < batch_size) {
        batch.push_back(queued.front());
        queued.pop_front();
      }
      int32_t longest = 0;
      for (size_t i : batch) longest = std::max(longest, requests[i].request.sampling.max_tokens);
      // A padding row must outlast every member's answer, even one that began decoding a few steps later, so it
      // runs to the end of its context (as a fixed-shape batch's row would) and is cancelled once all are answered;
      // where the pool cannot hold a whole context, it runs to the batch's longest max_tokens.
      const EngineConfig& ec = engine.config();
      const bool whole_context_fits = (ec.max_seq_len + ec.kv.block_size - 1) / ec.kv.block_size <= ec.kv.num_blocks;
      auto signal = std::make_shared<BatchSignal>();
      std::vector<GenerateRequest> members;
      std::vector<int32_t> num_own;
      for (size_t i : batch) {
        GenerateRequest r = requests[i].request;
        num_own.push_back(r.sampling.max_tokens);
        if (mode == BatchingMode::kStatic)
          r.sampling.max_tokens = std::max(longest, whole_context_fits ? ec.max_seq_len - int32_t(r.prompt.size()) : 0);
        members.push_back(std::move(r));
      }
      // A fixed batch starts together: one submission, so its first step holds every member.
      Result<std::vector<RequestHandle>> queued = engine.submit_batch(std::move(members));
      if (!queued.ok())
        return make_error(
            fmt::format("the batch from request {} was refused: {}", batch.front(), queued.status().message()));
      std::vector<RequestHandle>& handles = *queued;
      for (RequestHandle& h : handles)
        h.stream->set_listener([signal] {
          {
            std::lock_guard<std::mutex> lock(signal->mutex);
            ++signal->num_pushes;
          }
          signal->changed.notify_all();
        });
      // Take outputs as they come; once every member has its own answer, the padding rows left are cancelled.
      std::vector<RequestOutput> all(batch.size());
      bool cancelled = false;
      uint64_t seen = 0;
      for (;;) {
        for (size_t j = 0; j < batch.size(); ++j)
          while (std::optional<RequestOutput> out = handles[j].stream->try_next()) merge(all[j], *out);
        bool answered = true, finished = true;
        for (size_t j = 0; j < batch.size(); ++j) {
          answered = answered && (all[j].finished || all[j].num_output_tokens >= num_own[j]);
          finished = finished && all[j].finished;
        }
        if (finished) break;
        if (answered && !cancelled) {
          for (size_t j = 0; j < batch.size(); ++j)
            if (!all[j].finished) engine.cancel(handles[j].id);
          cancelled = true;
        }
        std::unique_lock<std::mutex> lock(signal->mutex);
        signal->changed.wait(lock, [&] { return signal->num_pushes != seen; });
        seen = signal->num_pushes;
      }
      for (size_t j = 0; j < batch.size(); ++j) {
        handles[j].stream->set_listener(nullptr);
        const size_t i = batch[j];
        report.results[i] = result_of(all[j], num_own[j], start_us + int64_t(requests[i].arrival_s * 1e6));
        report.num_padding_tokens += all[j].num_output_tokens - report.results[i].num_output_tokens;
      }
    }
  }
  // Until the last answer: padding a cancel had not stopped yet is no part of the workload's time.
  int64_t last_us = start_us;
  for (const DrivenResult& r : report.results) last_us = std::max(last_us, r.timing.finish_us);
  report.duration_s = double(last_us - start_us) * 1e-6;
  return report;
}

}  // namespace pagoda::bench
