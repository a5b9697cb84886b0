// fleet's save and load: rank 0 writes, everyone leaves together.
#include "flotilla/common/strings.h"
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/inference_model.h"

namespace flotilla::fleet {

// Rank 0 runs `save` and publishes the outcome in the store under
// "save/<n>"; everyone meets at a barrier (so all return once `dir` is
// complete) and a failure on rank 0 is thrown on every rank.
void Fleet::SaveOnFirstWorker(const char* what, const std::function<void()>& save) {
  std::string key = StrCat("save/", saves_++);
  std::exception_ptr error;
  std::string message;
  if (is_first_worker()) {
    try {
      save();
    } catch (const std::exception& e) {
      error = std::current_exception();
      message = e.what();
    }
    if (store_) store_->set(key, comm::Bytes(message.begin(), message.end()));
  }
  barrier_worker();
  if (error) std::rethrow_exception(error);
  if (!store_ || is_first_worker()) return;
  comm::Bytes outcome = store_->get(key);
  FLOTILLA_CHECK(outcome.empty(), Unavailable, "fleet::", what, " failed on rank 0: ",
                 std::string(outcome.begin(), outcome.end()));
}

void Fleet::save_persistables(const Executor& exe, const std::string& dir, const Program* main,
                              const Scope* scope) {
  CheckInit("save_persistables");
  if (ps_mode()) {  // the servers hold the parameters: they save their tables
    if (is_first_worker()) SavePsTables(dir);
    return;
  }
  const Program& program = main != nullptr ? *main : main_program();
  const Scope& s = scope != nullptr ? *scope : global_scope();
  SaveOnFirstWorker("save_persistables", [&] { io::SavePersistables(exe, dir, program, s); });
}

void Fleet::save_inference_model(const Executor& exe, const std::string& dir,
                                 const std::vector<std::string>& feed_names,
                                 const std::vector<std::string>& fetch_names, const Program* main,
                                 const Scope* scope) {
  CheckInit("save_inference_model");
  const Program& program = main != nullptr ? *main : main_program();
  const Scope& s = scope != nullptr ? *scope : global_scope();
  if (ps_mode()) {  // Paddle's layout: the servers' tables in dir, the model in dir/dnn_plugin
    if (!is_first_worker()) return;
    SavePsTables(dir);
    io::SaveInferenceModel(StrCat(dir, "/", kPsInferenceModelDir), feed_names, fetch_names, exe, program, s);
    return;
  }
  SaveOnFirstWorker("save_inference_model", [&] { io::SaveInferenceModel(dir, feed_names, fetch_names, exe, program, s); });
}

void load_persistables(const Executor& exe, const std::string& dir, const Program& main, Scope* scope) {
  io::LoadPersistables(exe, dir, main, scope != nullptr ? *scope : global_scope());
}

}  // namespace flotilla::fleet
