// ParallelRun: how this process takes part in a run split over processes (parallel.tensor_parallel and
// pipeline_parallel, --tp/--pp). Both 1: alone, and MPI is never touched. Otherwise one rank of the MPI world
// mpirun started (its size must be TP x PP): world rank 0 leads (its model sends each step to the others), every
// other rank only follows rank 0's steps and then ends. Built without MPI, anything above 1 is refused.
#pragma once

#include <pagoda/status.h>

#include <memory>
#include <string>

#include "core/collectives.h"
#include "core/config.h"
#include "loader/loaded_model.h"
#include "model/model_options.h"
#include "parallel/parallel_step.h"

namespace pagoda::cli {

class ParallelRun {
 public:
  // Errors: not launched by mpirun, a world whose size is not TP x PP, no MPI in this build.
  static Result<ParallelRun> join(const PagodaConfig& config);

  bool active() const { return world_ != nullptr; }
  // Processes of this run on this machine, sharing its RAM (1 when alone).
  int32_t ranks_on_this_machine() const { return ranks_on_this_machine_; }
  // The threads this rank's pool takes: `resolved` when set (> 0); otherwise (0: one per core) the cores shared
  // among the ranks on this machine, at least one each.
  int32_t threads_per_rank(int32_t resolved) const;
  // This rank's part of the model: its pipeline stage and tensor-parallel group, set on `options`.
  void set_model_options(ModelOptions& options) const;
  // Call after loading with set_model_options. Rank 0: its model becomes the step leader; returns false (run
  // the command). Any other rank: follows rank 0's steps with `num_threads` threads until it stops; returns
  // true (the command's work is done on this rank).
  bool follow_or_lead(LoadedModel& loaded, int32_t num_threads);
  // From now on, what communication_summary counts (it counts from the start without a call).
  void begin_measurement();
  // For rank 0's closing figures, e.g. "parallel tp 2 x pp 1: rank 0 spent 0.41 s of 4.56 s (9.0%) in
  // communication, 12.3 MB, over 120 steps: 3.4 ms and 102 KB per step"; empty when alone.
  std::string communication_summary(double elapsed_s) const;

 private:
  std::shared_ptr<void> session_;  // the MPI session, finalized when the last copy goes
  Collectives* world_ = nullptr;
  Collectives* tensor_group_ = nullptr;  // this rank's stage's group (null when tensor_parallel is 1)
  parallel::ParallelLayout layout_;
  int32_t ranks_on_this_machine_ = 1;
  const parallel::ParallelLeader* leader_ = nullptr;  // rank 0, once it leads: counts the steps
  // Totals at begin_measurement().
  double base_seconds_ = 0.0;
  int64_t base_bytes_ = 0;
  int64_t base_steps_ = 0;

  double seconds() const;
  int64_t bytes() const;
};

}  // namespace pagoda::cli
