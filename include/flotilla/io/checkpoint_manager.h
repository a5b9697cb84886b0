// CheckpointManager: numbered training checkpoints for jobs that resume.
//
//   io::CheckpointManager ckpt("ckpt", /*keep=*/3);
//   io::TrainingState state;
//   if (auto latest = ckpt.LatestStep()) state = ckpt.Load(main, scope);  // resume
//   for (int64_t step = state.step; step < steps; ++step) {
//     ...train...
//     if ((step + 1) % every == 0) ckpt.Save(main, scope, {step + 1, seed, position});
//   }
//
// Layout: <dir>/step-<N>/ is a checkpoint directory (checkpoint.h: MANIFEST,
// one file per persistable variable — parameters and optimizer state — and
// Flotilla's marker file) plus STATE.json with the TrainingState, the
// MANIFEST's CRC32C and a CRC32C of its own. A save fills
// "<dir>/step-<N>.tmp.<pid>.<random>" and renames it into place, so a step
// directory is either complete or absent; after the save only the newest
// `keep` step directories remain.
// What a save or prune killed part-way leaves behind ("step-N.tmp.<pid>.<random>",
// "step-N.old.<pid>.<random>") is ignored by loads and removed by the next save.
// Clean-up removes only directories carrying Flotilla's marker (or a
// MANIFEST of an older release): a user's "step-9/notes.txt" stays, and no
// link is followed. `dir` must not be a symbolic link nor writable by
// others without the sticky bit (InvalidArgument saying why, on Save).
// A training loop that restarts (an elastic job's new world) calls
// LatestStep()/Load() and continues from the step saved: the newest step
// that verifies. Each newer step skipped (no STATE.json, an edited
// STATE.json, a tensor file that is not the one saved) is named in a
// warning with the reason.
//
// Failures as in checkpoint.h (Unavailable for I/O, Corruption for damaged
// files, NotFound when a requested checkpoint is absent). Not safe against
// two processes saving into the same directory at once (fleet's
// save_checkpoint lets rank 0 alone write).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/framework/program.h"
#include "flotilla/framework/scope.h"
#include "flotilla/io/reader.h"

namespace flotilla {
class SafeDir;
}  // namespace flotilla

namespace flotilla::io {

// What a training loop needs besides the variables to pick up where it was.
struct TrainingState {
  int64_t step = 0;        // steps completed
  uint64_t rng_seed = 0;   // the seed the data pipeline continues from
  ReaderPosition reader;   // pass and batches consumed in it
  std::string extra;       // the caller's own JSON (may be empty)
};

class CheckpointManager {
 public:
  // `keep` >= 1 newest checkpoints survive each save (InvalidArgument otherwise).
  explicit CheckpointManager(std::string dir, int keep = 3);

  // Saves every persistable variable of `program` from `scope` and `state`
  // as step-<state.step>, replacing one of that step; then prunes. Returns
  // the checkpoint's directory. `also`, when set, writes more into the
  // checkpoint before it is committed: it gets the temporary directory
  // (renamed into place with everything else, or removed on failure).
  std::string Save(const Program& program, const Scope& scope, const TrainingState& state,
                   const std::function<void(const std::string& dir)>& also = {});

  // The steps saved, oldest first (step directories holding STATE.json;
  // leftovers of interrupted saves are ignored). Not verified.
  std::vector<int64_t> Steps() const;
  // The newest step that verifies (Verify); a warning names each newer
  // step directory skipped, with the reason. nullopt when none verifies.
  std::optional<int64_t> LatestStep() const;
  // "" when step-<step> verifies without reading its tensors whole:
  // STATE.json is there, passes its checksum and names this step and this
  // MANIFEST; the MANIFEST passes its checksum; every file is there with
  // the size and CRC32C trailer its entry names. Else the reason.
  std::string Verify(int64_t step) const;

  // Loads step `step` into `scope` and returns its state: NotFound or
  // Corruption naming the directory and the reason when it does not
  // verify. Without `step`, the newest step that verifies and loads; each
  // newer one skipped is named in a warning (NotFound when none loads).
  TrainingState Load(const Program& program, Scope& scope,
                     std::optional<int64_t> step = std::nullopt) const;

  std::string StepDir(int64_t step) const;
  const std::string& dir() const { return dir_; }

 private:
  void Prune(const SafeDir& root) const;
  void RemoveLeftovers(const SafeDir& root) const;
  TrainingState ReadState(int64_t step) const;  // verified as Verify says
  TrainingState LoadStep(const Program& program, Scope& scope, int64_t step) const;

  std::string dir_;
  int keep_;
};

}  // namespace flotilla::io
