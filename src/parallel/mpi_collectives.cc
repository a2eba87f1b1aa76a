// Collectives over an MPI communicator, timed and counted; MPI errors end the process with a clear message.
#include "parallel/mpi_collectives.h"

#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace pagoda::parallel {
namespace {

constexpr int kPointToPointTag = 7;

class MpiComm final : public Collectives {
 public:
  // `world_rank` names this process in error messages whatever the communicator.
  MpiComm(MPI_Comm comm, int32_t world_rank) : comm_(comm), world_rank_(world_rank) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &size);
    rank_ = rank;
    size_ = size;
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiComm() override {
    wait_sends();
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
  }

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }

  void all_reduce_sum(float* data, int64_t n) override {
    Timer t(*this, n * int64_t(sizeof(float)));
    check(MPI_Allreduce(MPI_IN_PLACE, data, to_int(n), MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
  }

  void gather_to_root(const float* send, std::span<const int64_t> counts, float* recv) override {
    std::vector<int> sizes, offsets;
    int64_t offset = 0;
    for (int64_t c : counts) {
      sizes.push_back(to_int(c));
      offsets.push_back(to_int(offset));
      offset += c;
    }
    Timer t(*this, (rank_ == 0 ? offset : counts[size_t(rank_)]) * int64_t(sizeof(float)));
    check(MPI_Gatherv(send, sizes[size_t(rank_)], MPI_FLOAT, recv, sizes.data(), offsets.data(), MPI_FLOAT, 0, comm_),
          "MPI_Gatherv");
  }

  void broadcast(void* data, int64_t num_bytes) override {
    Timer t(*this, num_bytes);
    check(MPI_Bcast(data, to_int(num_bytes), MPI_BYTE, 0, comm_), "MPI_Bcast");
  }

  void send(int32_t to, const void* data, int64_t num_bytes) override {
    Timer t(*this, num_bytes);
    MPI_Request request;
    check(MPI_Isend(data, to_int(num_bytes), MPI_BYTE, to, kPointToPointTag, comm_, &request), "MPI_Isend");
    pending_.push_back(request);
  }

  void recv(int32_t from, void* data, int64_t num_bytes) override {
    Timer t(*this, num_bytes);
    MPI_Status status;
    check(MPI_Recv(data, to_int(num_bytes), MPI_BYTE, from, kPointToPointTag, comm_, &status), "MPI_Recv");
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (count != num_bytes)
      fail("MPI_Recv", fmt::format("expected {} bytes from rank {}, got {}", num_bytes, from, count));
  }

  void wait_sends() override {
    if (pending_.empty()) return;
    Timer t(*this, 0);
    check(MPI_Waitall(int(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    pending_.clear();
  }

  double seconds_communicating() const override { return seconds_; }
  int64_t bytes_communicated() const override { return bytes_; }

 private:
  struct Timer {
    Timer(MpiComm& c, int64_t bytes) : comm(c), start(std::chrono::steady_clock::now()) { comm.bytes_ += bytes; }
    ~Timer() { comm.seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
    MpiComm& comm;
    std::chrono::steady_clock::time_point start;
  };

  int to_int(int64_t n) const {
    if (n < 0 || n > int64_t(INT_MAX)) fail("MPI", fmt::format("a message of {} elements", n));
    return int(n);
  }

  void check(int rc, const char* call) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail(call, std::string(text, size_t(len)) + " (another rank has probably died)");
  }

  [[noreturn]] void fail(const char* call, const std::string& why) const {
    std::fprintf(stderr, "pagoda: rank %d: %s failed: %s; exiting\n", world_rank_, call, why.c_str());
    std::fflush(stderr);
    std::_Exit(1);  // the other ranks are gone or stuck: no orderly MPI shutdown is possible
  }

  MPI_Comm comm_;
  int32_t world_rank_;
  int32_t rank_ = 0;
  int32_t size_ = 1;
  std::vector<MPI_Request> pending_;
  double seconds_ = 0.0;
  int64_t bytes_ = 0;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

Result<std::unique_ptr<MpiSession>> MpiSession::start() {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return make_error("MPI could not start (MPI_Init_thread failed)");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return make_error("this MPI library does not allow MPI calls from the engine's thread (MPI_THREAD_SERIALIZED)");
  }
  std::unique_ptr<MpiSession> s(new MpiSession());
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  s->rank_ = rank;
  s->size_ = size;
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    int local = 1;
    MPI_Comm_size(node, &local);
    s->local_size_ = local;
    MPI_Comm_free(&node);
  }
  s->world_ = std::make_unique<MpiComm>(MPI_COMM_WORLD, rank);
  return s;
}

Collectives& MpiSession::split_groups(int32_t group_size) {
  MPI_Comm comm;
  if (MPI_Comm_split(MPI_COMM_WORLD, rank_ / group_size, rank_, &comm) != MPI_SUCCESS) {
    std::fprintf(stderr, "pagoda: rank %d: MPI_Comm_split failed; exiting\n", rank_);
    std::_Exit(1);
  }
  group_ = std::make_unique<MpiComm>(comm, rank_);
  return *group_;
}

MpiSession::~MpiSession() {
  group_.reset();
  world_.reset();
  MPI_Finalize();
}

}  // namespace pagoda::parallel
