// MpiSession: MPI initialized and finalized around a run, and the Collectives of its ranks: the whole world
// (the step plan, pipeline hand-offs) and, under tensor parallelism, each pipeline stage's group (its heads'
// sums). Only this folder includes <mpi.h>. Errors are not left to MPI's abort: the world's handler returns
// them, and a failed call (a rank died, the link broke) ends this process with a message naming the call and
// the rank instead of waiting forever.
#pragma once

#include <pagoda/status.h>

#include <memory>

#include "core/collectives.h"

namespace pagoda::parallel {

// Whether this process was started by mpirun (or another launcher that sets the Open MPI / PMI variables).
bool launched_by_mpi();

class MpiSession {
 public:
  // MPI_Init_thread asking for MPI_THREAD_MULTIPLE (the engine's step thread makes the calls; the main thread
  // finalizes). An error when MPI cannot start or gives less than MPI_THREAD_SERIALIZED.
  static Result<std::unique_ptr<MpiSession>> start();
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  // Ranks on this machine (sharing its memory), this one included.
  int32_t local_size() const { return local_size_; }
  // Every rank, as Collectives; valid while the session lives.
  Collectives& world() { return *world_; }
  // The ranks whose world rank / group_size is the same (a pipeline stage's tensor-parallel group, ranked by
  // world rank); every rank must call it once, with the same group_size. Valid while the session lives.
  Collectives& split_groups(int32_t group_size);

 private:
  MpiSession() = default;
  int32_t rank_ = 0;
  int32_t size_ = 1;
  int32_t local_size_ = 1;
  std::unique_ptr<Collectives> world_;
  std::unique_ptr<Collectives> group_;
};

}  // namespace pagoda::parallel
