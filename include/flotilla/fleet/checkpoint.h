// Training checkpoints for jobs that must survive restarts (elastic jobs):
// fleet's side of io::CheckpointManager.
//
//   io::TrainingState state;
//   if (auto resumed = fleet::load_checkpoint(exe, "ckpt")) state = *resumed;
//   for (int64_t step = state.step; step < steps; ++step) {
//     exe.run(fleet::main_program(), feed);
//     if ((step + 1) % 10 == 0) fleet::save_checkpoint(exe, "ckpt", step + 1, state);
//   }
//
// What is saved: every persistable variable of the program (parameters and
// optimizer state such as velocities and learning rates) and the
// TrainingState (step, RNG seed, reader position, the caller's JSON). In a
// parameter-server job also every server's tables (dense blocks, sparse
// rows with their optimizer state, ssd tables' rows on disk), written by
// the servers into the checkpoint directory before it is committed, after
// every worker's queued gradients reached them: a checkpoint has the
// trainers' and the servers' state of one step, or does not exist.
// Loading has the servers load their tables back (call it after
// init_worker()); the servers must see `dir` at the same path.
// Rank 0 writes; the others wait at a barrier, so the checkpoint is complete
// on every rank's return. Loading reads the newest complete checkpoint on
// every rank, so `dir` must be visible to all ranks (one machine, or a shared
// file system). A save that fails throws on rank 0 (its process then fails
// the job); the previous checkpoints stay intact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "flotilla/fleet/fleet.h"
#include "flotilla/io/checkpoint_manager.h"

namespace flotilla::fleet {

struct CheckpointOptions {
  int keep = 3;                    // newest checkpoints kept
  const Program* main = nullptr;   // default: fleet's main_program()
  Scope* scope = nullptr;          // default: global_scope()
};

// Saves step `step` (state.step is set to it) into dir/step-<step>.
void save_checkpoint(Fleet& fleet, const Executor& exe, const std::string& dir, int64_t step,
                     io::TrainingState state = {}, const CheckpointOptions& options = {});
void save_checkpoint(const Executor& exe, const std::string& dir, int64_t step,
                     io::TrainingState state = {}, const CheckpointOptions& options = {});

// Loads the newest checkpoint of `dir` into the scope on every rank and
// returns its state; nullopt (nothing loaded) when `dir` holds none. Rank 0
// picks the step and broadcasts it, so every rank loads the same one (a rank
// that cannot see it throws NotFound naming the directory). Blocking: every
// worker must call it.
std::optional<io::TrainingState> load_checkpoint(Fleet& fleet, const Executor& exe,
                                                 const std::string& dir,
                                                 const CheckpointOptions& options = {});
std::optional<io::TrainingState> load_checkpoint(const Executor& exe, const std::string& dir,
                                                 const CheckpointOptions& options = {});

}  // namespace flotilla::fleet
