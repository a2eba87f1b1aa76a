// Collectives: what the processes ("ranks") sharing one model need from each other: sums of their partial
// results, their slices gathered in order, rank 0's step plan sent to all, and hidden states passed from one
// pipeline stage to the next. An interface, so model/ needs no
// MPI: parallel/mpi_collectives implements it over MPI. As with MPI, every rank makes the same calls in the same
// order, with the same sizes; a call returns once this rank's part is done.
#pragma once

#include <cstdint>
#include <span>

namespace pagoda {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  // data[0..n) = the element-wise sum over every rank's data[0..n).
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
  // On rank 0, recv holds every rank's `send` back to back in rank order, rank r's being counts[r] floats
  // (counts has size() entries; recv their sum); other ranks' recv is not touched (may be null).
  virtual void gather_to_root(const float* send, std::span<const int64_t> counts, float* recv) = 0;
  // data[0..num_bytes) on every rank = rank 0's.
  virtual void broadcast(void* data, int64_t num_bytes) = 0;
  // Point to point, between pipeline stages: send returns at once, and data[0..num_bytes) must stay unchanged
  // until the next wait_sends() returns; recv waits for the matching send (messages between two ranks arrive in
  // the order they were sent, each received with its own size).
  virtual void send(int32_t to, const void* data, int64_t num_bytes) = 0;
  virtual void recv(int32_t from, void* data, int64_t num_bytes) = 0;
  virtual void wait_sends() = 0;
  // Seconds this rank has spent inside the calls above since it was created: the communication cost per step
  // (waits for slower ranks included), and the bytes it sent or received in them (a broadcast or reduction
  // counts its buffer once).
  virtual double seconds_communicating() const = 0;
  virtual int64_t bytes_communicated() const = 0;
};

}  // namespace pagoda
