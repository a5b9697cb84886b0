// fleet's training checkpoints (see flotilla/fleet/checkpoint.h).
#include "flotilla/fleet/checkpoint.h"

#include "flotilla/common/logging.h"

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

}  // namespace

void save_checkpoint(Fleet& fleet, const Executor&, const std::string& dir, int64_t step,
                     io::TrainingState state, const CheckpointOptions& options) {
  state.step = step;
  std::exception_ptr error;
  if (fleet.is_first_worker()) {
    try {
      io::CheckpointManager(dir, options.keep).Save(MainOf(fleet, options), ScopeOf(options), state);
    } catch (const std::exception&) {
      error = std::current_exception();
    }
  }
  fleet.barrier_worker();
  if (error) std::rethrow_exception(error);
}

std::optional<io::TrainingState> load_checkpoint(Fleet& fleet, const Executor&,
                                                 const std::string& dir,
                                                 const CheckpointOptions& options) {
  io::CheckpointManager ckpt(dir, options.keep);
  const int64_t step = AgreedLatestStep(fleet, ckpt);
  if (step < 0) return std::nullopt;
  io::TrainingState state = ckpt.Load(MainOf(fleet, options), ScopeOf(options), step);
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
