// The process-wide fleet behind Paddle's module-level functions.
#include "flotilla/fleet/fleet.h"

namespace flotilla::fleet {

Fleet& default_fleet() {
  static auto* fleet = new Fleet();  // never destroyed: ops may run during exit
  return *fleet;
}

void init(const RoleMaker& role, FleetOptions options) { default_fleet().init(role, std::move(options)); }
bool is_worker() { return default_fleet().is_worker(); }
bool is_server() { return default_fleet().is_server(); }
bool is_first_worker() { return default_fleet().is_first_worker(); }
int worker_index() { return default_fleet().worker_index(); }
int worker_num() { return default_fleet().worker_num(); }
std::vector<std::string> worker_endpoints() { return default_fleet().worker_endpoints(); }
std::vector<std::string> server_endpoints() { return default_fleet().server_endpoints(); }
void barrier_worker() { default_fleet().barrier_worker(); }
Program& main_program() { return default_fleet().main_program(); }
Program& startup_program() { return default_fleet().startup_program(); }

DistributedOptimizer distributed_optimizer(optimizer::Optimizer& opt, DistributedStrategy strategy) {
  return default_fleet().distributed_optimizer(opt, std::move(strategy));
}

void save_persistables(const Executor& exe, const std::string& dir, const Program* main,
                       const Scope* scope) {
  default_fleet().save_persistables(exe, dir, main, scope);
}

void save_inference_model(const Executor& exe, const std::string& dir,
                          const std::vector<std::string>& feed_names,
                          const std::vector<std::string>& fetch_names, const Program* main,
                          const Scope* scope) {
  default_fleet().save_inference_model(exe, dir, feed_names, fetch_names, main, scope);
}

}  // namespace flotilla::fleet
