// fleet's training checkpoints (see flotilla/fleet/checkpoint.h).
#include "flotilla/fleet/checkpoint.h"

#include <filesystem>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/ps/trainer_runtime.h"

namespace flotilla::fleet {

namespace {

const Program& MainOf(Fleet& fleet, const CheckpointOptions& o) {
  return o.main != nullptr ? *o.main : fleet.main_program();
}

Scope& ScopeOf(const CheckpointOptions& o) { return o.scope != nullptr ? *o.scope : global_scope(); }

// Rank 0's newest step (-1: none), the same on every rank.
int64_t AgreedLatestStep(Fleet& fleet, const io::CheckpointManager& ckpt) {
  int64_t step = -1;
  if (fleet.is_first_worker()) step = ckpt.LatestStep().value_or(-1);
  if (auto group = fleet.process_group()) group->broadcast(&step, 1, DType::kInt64, /*root=*/0);
  return step;
}

// Where the servers' tables go inside a checkpoint directory.
constexpr char kPsTablesDir[] = "ps_tables";

// A parameter-server worker's gradients still queued (async) or deltas
// not pushed yet (GEO) go to the servers, so the tables saved include them.
void PushOutstanding(ps::TrainerRuntime& rt) {
  if (rt.async) rt.async->Flush();
  if (rt.geo) rt.geo->Sync();
}

// Every worker waits for the others: at the servers in a PS job (its
// workers may have no group of their own), else in the workers' group.
void BarrierWorkers(Fleet& fleet, ps::TrainerRuntime* rt) {
  if (rt != nullptr) {
    rt->client->Barrier();
  } else {
    fleet.barrier_worker();
  }
}

}  // namespace

void save_checkpoint(Fleet& fleet, const Executor&, const std::string& dir, int64_t step,
                     io::TrainingState state, const CheckpointOptions& options) {
  state.step = step;
  const auto rt = ps::CurrentTrainerRuntime();  // a parameter-server worker
  if (rt) {
    PushOutstanding(*rt);
    rt->client->Barrier();  // every worker's step is on the servers
  }
  std::exception_ptr error;
  if (fleet.is_first_worker()) {
    try {
      // The servers write their tables into the checkpoint before it is
      // committed: trainer state and tables appear together or not at all.
      auto tables = [&](const std::string& tmp) {
        // The temporary directory must exist: once a failed save removed
        // it, a server still saving fails rather than recreate it.
        if (rt) {
          rt->client->Save(std::filesystem::absolute(tmp + "/" + kPsTablesDir).string(),
                           /*parent_must_exist=*/true);
        }
      };
      io::CheckpointManager(dir, options.keep).Save(MainOf(fleet, options), ScopeOf(options), state, tables);
    } catch (const std::exception&) {
      error = std::current_exception();
    }
  }
  BarrierWorkers(fleet, rt.get());
  if (error) std::rethrow_exception(error);
}

std::optional<io::TrainingState> load_checkpoint(Fleet& fleet, const Executor&,
                                                 const std::string& dir,
                                                 const CheckpointOptions& options) {
  io::CheckpointManager ckpt(dir, options.keep);
  const auto rt = ps::CurrentTrainerRuntime();  // a parameter-server worker
  // PS workers may have no group: each reads the shared directory, where
  // nothing is being saved while the job starts.
  const int64_t step = rt ? ckpt.LatestStep().value_or(-1) : AgreedLatestStep(fleet, ckpt);
  if (step < 0) return std::nullopt;
  io::TrainingState state = ckpt.Load(MainOf(fleet, options), ScopeOf(options), step);
  if (rt) {
    const std::string tables = std::filesystem::absolute(ckpt.StepDir(step) + "/" + kPsTablesDir).string();
    FLOTILLA_CHECK(std::filesystem::is_directory(tables), NotFound, "checkpoint '", ckpt.StepDir(step),
                   "' holds no parameter-server tables (saved by a job without servers?)");
    rt->client->Barrier();  // nobody still pushes into the tables being replaced
    if (fleet.is_first_worker()) rt->client->Load(tables);
    rt->client->Barrier();
    // Values received or cached before the load are stale.
    if (rt->async) rt->async->Flush();
    if (rt->geo) rt->geo->Restart();
  }
  log::Info("resumed from checkpoint {}", ckpt.StepDir(step));
  return state;
}

void save_checkpoint(const Executor& exe, const std::string& dir, int64_t step,
                     io::TrainingState state, const CheckpointOptions& options) {
  save_checkpoint(default_fleet(), exe, dir, step, std::move(state), options);
}

std::optional<io::TrainingState> load_checkpoint(const Executor& exe, const std::string& dir,
                                                 const CheckpointOptions& options) {
  return load_checkpoint(default_fleet(), exe, dir, options);
}

}  // namespace flotilla::fleet
