#include <sched.h>

#include <algorithm>

#include "fleet/collective_pass.h"
#include "fleet/strategy_proto.h"
#include "flotilla/common/logging.h"
#include "flotilla/core/math.h"
#include "flotilla/fleet/fleet.h"

namespace flotilla::fleet {

void ApplyExecutionStrategy(const DistributedStrategy& strategy, Program& program) {
  strategy.Validate();
  const proto::ExecutionStrategy& exec = StrategyProto(strategy).exec_strategy();
  program.set_run_settings({.iterations = exec.num_iteration_per_run(),
                            .drop_scope_every = exec.has_num_iteration_per_drop_scope()
                                                    ? exec.num_iteration_per_drop_scope()
                                                    : 0});
  if (!exec.has_num_threads()) return;
  cpu_set_t cpus;
  const int available = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  math::SetBlasThreads(std::min(exec.num_threads(), std::max(available, 1)));
}

DistributedOptimizer::DistributedOptimizer(Fleet& fleet, optimizer::Optimizer& opt,
                                           DistributedStrategy strategy)
    : fleet_(fleet), opt_(opt), strategy_(std::move(strategy)) {}

optimizer::MinimizeResult DistributedOptimizer::minimize(const Variable& loss, Program* startup,
                                                         const std::vector<std::string>& parameter_list,
                                                         const std::set<std::string>& no_grad_set) {
  Program& start = startup != nullptr ? *startup : default_startup_program();
  ApplyExecutionStrategy(strategy_, *loss.block()->program());
  optimizer::MinimizeResult result;
  result.params_grads = opt_.backward(loss, &start, parameter_list, no_grad_set);
  result.optimize_ops = opt_.apply_gradients(result.params_grads);
  Program& main = *loss.block()->program();
  fleet_.main_ = &main;
  fleet_.startup_ = &start;
  if (fleet_.ps_mode()) {  // parameter servers: transpile instead of all-reduce
    fleet_.TranspilePs(main, start, strategy_);
    result.optimize_ops.clear();  // the transpiler moved them to the servers
    return result;
  }
  if (fleet_.group_ == nullptr) return result;  // one worker: nothing to synchronise
  int ring = fleet_.TrainingRing(strategy_);
  CollectivePassResult pass = ApplyCollectivePass(main, start, result.params_grads, strategy_, ring);
  buckets_.clear();
  for (const Bucket& b : pass.buckets) buckets_.push_back(b.vars);
  // The optimizer ops may have moved into a conditional block.
  if (strategy_.gradient_merge()) result.optimize_ops.clear();
  log::Info("fleet: {} all-reduce bucket(s) over {} communicator(s)", buckets_.size(),
            strategy_.comm_num());
  return result;
}

}  // namespace flotilla::fleet
