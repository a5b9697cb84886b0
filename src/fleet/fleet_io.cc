// fleet's save and load: rank 0 writes, everyone leaves together.
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/inference_model.h"

namespace flotilla::fleet {

namespace {

// Runs `save` on the first worker, then meets the others at a barrier (so
// they return only once `dir` is complete). A failure on rank 0 is
// rethrown after the barrier so the others are not left waiting.
template <typename Fn>
void SaveOnFirstWorker(Fleet& fleet, Fn save) {
  std::exception_ptr error;
  if (fleet.is_first_worker()) {
    try {
      save();
    } catch (...) {
      error = std::current_exception();
    }
  }
  fleet.barrier_worker();
  if (error) std::rethrow_exception(error);
}

}  // namespace

void Fleet::save_persistables(const Executor& exe, const std::string& dir, const Program* main,
                              const Scope* scope) {
  CheckInit("save_persistables");
  const Program& program = main != nullptr ? *main : main_program();
  const Scope& s = scope != nullptr ? *scope : global_scope();
  SaveOnFirstWorker(*this, [&] { io::SavePersistables(exe, dir, program, s); });
}

void Fleet::save_inference_model(const Executor& exe, const std::string& dir,
                                 const std::vector<std::string>& feed_names,
                                 const std::vector<std::string>& fetch_names, const Program* main,
                                 const Scope* scope) {
  CheckInit("save_inference_model");
  const Program& program = main != nullptr ? *main : main_program();
  const Scope& s = scope != nullptr ? *scope : global_scope();
  SaveOnFirstWorker(*this, [&] { io::SaveInferenceModel(dir, feed_names, fetch_names, exe, program, s); });
}

void load_persistables(const Executor& exe, const std::string& dir, const Program& main, Scope* scope) {
  io::LoadPersistables(exe, dir, main, scope != nullptr ? *scope : global_scope());
}

}  // namespace flotilla::fleet
