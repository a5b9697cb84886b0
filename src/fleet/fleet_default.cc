// The process-wide fleet behind Paddle's module-level functions, and
// fleet.util's file sharding.
#include "flotilla/fleet/fleet.h"

#include <algorithm>

#include "flotilla/common/enforce.h"

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

std::vector<std::string> FileShard(const std::vector<std::string>& files, int worker_index, int worker_num) {
  FLOTILLA_CHECK(worker_num >= 1 && worker_index >= 0 && worker_index < worker_num, InvalidArgument,
                 "get_file_shard: worker_index=", worker_index, " must be in [0, worker_num=", worker_num, ")");
  const size_t n = static_cast<size_t>(worker_num);
  const size_t i = static_cast<size_t>(worker_index);
  const size_t base = files.size() / n;
  const size_t longer = files.size() % n;  // the first `longer` blocks hold one more
  const size_t begin = i * base + std::min(i, longer);
  const size_t size = base + (i < longer ? 1 : 0);
  return {files.begin() + static_cast<std::ptrdiff_t>(begin),
          files.begin() + static_cast<std::ptrdiff_t>(begin + size)};
}

}  // namespace flotilla::fleet
