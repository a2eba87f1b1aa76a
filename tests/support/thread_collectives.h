// ThreadCollectives: Collectives among T threads of one process, for testing what runs over MPI in production
// (a tensor-parallel model's shards, the step protocol) without mpirun. ThreadGroup holds the shared state;
// each thread uses its own rank's ThreadCollectives. Every collective call is three barriers: post, combine,
// release; a send copies into the receiver's mailbox, so it never waits.
#pragma once

#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/collectives.h"

namespace pagoda::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int32_t size) : size_(size), barrier_(size), posted_(size_t(size), nullptr) {}
  int32_t size() const { return size_; }

 private:
  friend class ThreadCollectives;
  int32_t size_;
  std::barrier<> barrier_;
  std::vector<const void*> posted_;
  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_cv_;
  std::map<std::pair<int32_t, int32_t>, std::deque<std::vector<uint8_t>>> mailboxes_;  // (from, to) -> messages
};

class ThreadCollectives final : public Collectives {
 public:
  ThreadCollectives(ThreadGroup& group, int32_t rank) : group_(group), rank_(rank) {}
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return group_.size(); }

  void all_reduce_sum(float* data, int64_t n) override {
    post(data);
    // Sum in rank order on every rank, so all of them get the same bits.
    std::vector<float> sum(static_cast<size_t>(n), 0.0f);
    for (const void* p : group_.posted_)
      for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += static_cast<const float*>(p)[i];
    group_.barrier_.arrive_and_wait();  // everyone has read everyone's data
    std::memcpy(data, sum.data(), sizeof(float) * size_t(n));
    group_.barrier_.arrive_and_wait();
  }

  void gather_to_root(const float* send, std::span<const int64_t> counts, float* recv) override {
    post(send);
    if (rank_ == 0) {
      for (size_t r = 0; r < counts.size(); ++r) {
        std::memcpy(recv, group_.posted_[r], sizeof(float) * size_t(counts[r]));
        recv += counts[r];
      }
    }
    group_.barrier_.arrive_and_wait();
    group_.barrier_.arrive_and_wait();
  }

  void broadcast(void* data, int64_t num_bytes) override {
    post(data);
    if (rank_ != 0) std::memcpy(data, group_.posted_[0], size_t(num_bytes));
    group_.barrier_.arrive_and_wait();
    group_.barrier_.arrive_and_wait();
  }

  void send(int32_t to, const void* data, int64_t num_bytes) override {
    const auto* bytes = static_cast<const uint8_t*>(data);
    std::lock_guard<std::mutex> lock(group_.mailbox_mutex_);
    group_.mailboxes_[{rank_, to}].emplace_back(bytes, bytes + num_bytes);
    group_.mailbox_cv_.notify_all();
    bytes_ += num_bytes;
  }

  void recv(int32_t from, void* data, int64_t num_bytes) override {
    std::unique_lock<std::mutex> lock(group_.mailbox_mutex_);
    auto& box = group_.mailboxes_[{from, rank_}];
    group_.mailbox_cv_.wait(lock, [&] { return !box.empty(); });
    if (int64_t(box.front().size()) != num_bytes) throw std::logic_error("recv: message of another size");
    std::memcpy(data, box.front().data(), size_t(num_bytes));
    box.pop_front();
    bytes_ += num_bytes;
  }

  void wait_sends() override {}

  double seconds_communicating() const override { return 0.0; }
  int64_t bytes_communicated() const override { return bytes_; }

 private:
  void post(const void* p) {
    group_.posted_[size_t(rank_)] = p;
    group_.barrier_.arrive_and_wait();
  }

  ThreadGroup& group_;
  int32_t rank_;
  int64_t bytes_ = 0;  // point to point only
};

}  // namespace pagoda::testing
