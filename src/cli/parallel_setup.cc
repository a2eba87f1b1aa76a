// Joining the MPI world for --tp/--pp, and the leader/worker split.
#include "cli/parallel_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/thread_pool.h"

#ifdef PAGODA_HAVE_MPI
#include "parallel/mpi_collectives.h"
#endif

namespace pagoda::cli {

Result<ParallelRun> ParallelRun::join(const PagodaConfig& config) {
  ParallelRun run;
  const int32_t tp = config.parallel.tensor_parallel, pp = config.parallel.pipeline_parallel;
  run.layout_ = parallel::ParallelLayout{tp, pp};
  if (tp == 1 && pp == 1) return run;
#ifdef PAGODA_HAVE_MPI
  if (!parallel::launched_by_mpi())
    return make_error(fmt::format("--tp {} --pp {} needs {} processes: launch with mpirun -np {} pagoda ...", tp, pp,
                                  tp * pp, tp * pp));
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<parallel::MpiSession> session, parallel::MpiSession::start());
  if (session->size() != tp * pp)
    return make_error(
        fmt::format("--tp {} x --pp {} needs {} processes, mpirun started {}", tp, pp, tp * pp, session->size()));
  run.world_ = &session->world();
  run.ranks_on_this_machine_ = session->local_size();
  if (tp > 1) run.tensor_group_ = &session->split_groups(tp);
  run.session_ = std::shared_ptr<parallel::MpiSession>(std::move(session));
  return run;
#else
  return make_error(
      fmt::format("--tp {} --pp {}: this pagoda was built without MPI (install libopenmpi-dev and rebuild)", tp, pp));
#endif
}

int32_t ParallelRun::threads_per_rank(int32_t resolved) const {
  if (resolved > 0 || world_ == nullptr) return resolved;
  return std::max(1, ThreadPool::num_cores() / std::max(1, ranks_on_this_machine_));
}

void ParallelRun::set_model_options(ModelOptions& options) const {
  if (world_ == nullptr) return;
  options.tensor_parallel = tensor_group_;
  options.pipeline_stage = layout_.stage_of(world_->rank());
  options.pipeline_stages = layout_.pipeline_parallel;
}

bool ParallelRun::follow_or_lead(LoadedModel& loaded, int32_t num_threads) {
  if (world_ == nullptr) return false;
  if (world_->rank() != 0) {
    parallel::run_parallel_worker(*loaded.model, *world_, layout_, num_threads);
    return true;
  }
  auto leader = std::make_unique<parallel::ParallelLeader>(std::move(loaded.model), *world_, layout_);
  leader_ = leader.get();
  loaded.model = std::move(leader);
  return false;
}

double ParallelRun::seconds() const {
  return world_->seconds_communicating() + (tensor_group_ ? tensor_group_->seconds_communicating() : 0.0);
}

int64_t ParallelRun::bytes() const {
  return world_->bytes_communicated() + (tensor_group_ ? tensor_group_->bytes_communicated() : 0);
}

void ParallelRun::begin_measurement() {
  if (world_ == nullptr || leader_ == nullptr) return;
  base_seconds_ = seconds();
  base_bytes_ = bytes();
  base_steps_ = leader_->num_steps();
}

std::string ParallelRun::communication_summary(double elapsed_s) const {
  if (world_ == nullptr || leader_ == nullptr) return "";
  const int64_t num_steps = leader_->num_steps() - base_steps_;
  const double seconds = this->seconds() - base_seconds_;
  const int64_t bytes = this->bytes() - base_bytes_;
  const double steps = double(std::max<int64_t>(num_steps, 1));
  return fmt::format(
      "parallel tp {} x pp {}: rank 0 spent {:.3f} s of {:.3f} s ({:.1f}%) in communication, {:.2f} MB, over {} "
      "steps: {:.2f} ms and {:.1f} KB per step",
      layout_.tensor_parallel, layout_.pipeline_parallel, seconds, elapsed_s,
      elapsed_s > 0 ? 100.0 * seconds / elapsed_s : 0.0, double(bytes) / 1e6, num_steps, seconds * 1e3 / steps,
      double(bytes) / 1e3 / steps);
}

}  // namespace pagoda::cli
