// The Fleet parameter-server API on top of the
// DistributeTranspiler: minimize() transpiles, servers run the pserver
// program, workers the rewritten main program.
#include <memory>

#include "fleet/ps/ps_ops.h"
#include "fleet/ps_job.h"
#include "fleet/strategy_proto.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/ps/trainer_runtime.h"

namespace flotilla::fleet {

namespace {

DistributeTranspilerConfig ConfigFor(const DistributedStrategy& strategy) {
  DistributeTranspilerConfig c;
  const proto::AsyncConfig& a = StrategyProto(strategy).a_sync_configs();
  if (!strategy.a_sync()) {
    c.mode = "sync";
  } else if (a.k_steps() > 0) {
    c.mode = "geo";
    c.geo_k_steps = a.k_steps();
  } else {
    c.mode = "async";
  }
  c.max_merge_var_num = a.max_merge_var_num();
  c.send_queue_size = a.send_queue_size();
  c.independent_recv_thread = a.independent_recv_thread();
  const proto::SparseTableConfigs& t = StrategyProto(strategy).sparse_table_configs();
  c.sparse.table_class = t.table_class();
  c.sparse.memory_budget_mb = t.memory_budget_mb();
  c.sparse.ssd_path = t.ssd_path();
  c.sparse.click_var = t.click_var();
  c.sparse.accessor = {.admit_count = t.admit_count(),
                       .admit_probability = t.admit_probability(),
                       .delete_after_unseen_passes = t.delete_after_unseen_passes(),
                       .delete_threshold = t.delete_threshold(),
                       .show_click_decay_rate = t.show_click_decay_rate(),
                       .nonclk_coeff = t.nonclk_coeff(),
                       .click_coeff = t.click_coeff()};
  return c;
}

}  // namespace

// The servers' clients: the trainers, then (heterogeneous jobs) the heter
// workers, which push and pull the dense parameters.
void Fleet::TranspilePs(Program& main, Program& startup, const DistributedStrategy& strategy) {
  ps_ = std::make_shared<PsJob>();
  ps_->transpiler = std::make_unique<DistributeTranspiler>(ConfigFor(strategy));
  const int heters = static_cast<int>(role_->heter_endpoints.size());
  int client_id = 0;
  if (role_->role == Role::kWorker) client_id = role_->worker_index;
  if (role_->role == Role::kHeterWorker) client_id = role_->worker_num + role_->heter_index;
  ps_->transpiler->transpile(client_id, Join(role_->server_endpoints, ","), role_->worker_num + heters,
                             ps_->transpiler->config().mode == "sync", &main, &startup);
  if (heters > 0 && role_->role != Role::kServer) {
    const proto::HeterConfigs& heter = StrategyProto(strategy).heter_configs();
    const auto& boundary = heter.boundary_vars();
    ps_->heter = std::make_unique<HeterSplit>(
        SplitHeterProgram(main, std::vector<std::string>(boundary.begin(), boundary.end())));
    ps_->pipeline_depth = heter.pipeline_depth();
  }
  log::Info("fleet: {} parameter-server job, {} table(s) on {} server(s){}",
            ps_->transpiler->config().mode, ps_->transpiler->tables().size(),
            role_->server_endpoints.size(), heters > 0 ? StrCat(", ", heters, " heter worker(s)") : "");
}

const DistributeTranspiler* Fleet::ps_transpiler() const {
  return ps_ != nullptr ? ps_->transpiler.get() : nullptr;
}

bool Fleet::SkipOutsidePs(const char* what) const {
  CheckInit(what);
  if (ps_mode()) return false;
  if (role_->non_distributed) {
    log::Warn("fleet::{}() does nothing in a non-distributed fleet (a script started without a launcher)", what);
    return true;
  }
  FLOTILLA_CHECK(main_ != nullptr, InvalidArgument, "fleet::", what, "() in a collective job before ",
                 "distributed_optimizer(...).minimize(): Fleet can not find suitable runtime handler");
  log::Warn("You should not call '{}' method for collective mode.", what);
  return true;
}

void Fleet::init_server(const std::string& model_dir) {
  if (SkipOutsidePs("init_server")) return;
  FLOTILLA_CHECK(is_server(), InvalidArgument, "fleet::init_server called on a worker");
  FLOTILLA_CHECK(ps_ != nullptr, InvalidArgument,
                 "fleet::init_server before distributed_optimizer(...).minimize()");
  const std::string& ep = role_->current_endpoint;
  ps_->pserver_program = ps_->transpiler->get_pserver_program(ep, model_dir);
  ps_->pserver_startup = ps_->transpiler->get_startup_program(ep, ps_->pserver_program);
  ps_->server_ready = true;
}

void Fleet::run_server() {
  if (SkipOutsidePs("run_server")) return;
  FLOTILLA_CHECK(ps_ != nullptr && ps_->server_ready, InvalidArgument,
                 "fleet::run_server before fleet::init_server");
  Executor exe(CPUPlace());
  exe.run(ps_->pserver_startup);
  exe.run(ps_->pserver_program);
}

void Fleet::init_worker(bool servers_loaded) {
  if (SkipOutsidePs("init_worker")) return;
  FLOTILLA_CHECK(!is_server(), InvalidArgument, "fleet::init_worker called on a server");
  FLOTILLA_CHECK(ps_ != nullptr, InvalidArgument,
                 "fleet::init_worker before distributed_optimizer(...).minimize()");
  OpDesc& init = main_->global_block().op(0);
  FLOTILLA_CHECK(init.type == "ps_trainer_init", Internal, "fleet::init_worker: the trainer "
                 "program does not start with ps_trainer_init");
  if (servers_loaded) init.Set("seed_servers", false);
  main_->BumpVersion();
  Program connect;
  connect.global_block().AppendOp(init);
  Executor exe(CPUPlace());
  exe.run(connect);
}

void Fleet::stop_worker() {
  if (SkipOutsidePs("stop_worker")) return;
  ps::FinishTrainerRuntime();
}

int64_t Fleet::shrink() {
  CheckInit("shrink");
  auto rt = ps::RequireTrainerRuntime("fleet::shrink");
  if (rt->async) rt->async->Flush();
  if (rt->geo) rt->geo->Sync();
  rt->client->Barrier();
  const int64_t dropped = is_first_worker() ? rt->client->Shrink() : 0;
  rt->client->Barrier();  // nobody pulls a row the shrink is about to drop
  return dropped;
}

void Fleet::prefetch_sparse(const FeedMap& next_feed) {
  CheckInit("prefetch_sparse");
  auto rt = ps::CurrentTrainerRuntime();
  const bool geo = rt != nullptr && rt->geo != nullptr, async = rt != nullptr && rt->async != nullptr;
  if (!(geo || async) || main_ == nullptr) return;
  const Block& b = main_->global_block();
  if (b.op_size() < 2 || b.op(1).type != "ps_prefetch_sparse") return;
  const OpDesc& op = b.op(1);
  const auto& ids = op.Inputs("Ids");
  const auto& tables = op.Attr<std::vector<std::string>>("table_names");
  const auto& padding = op.Attr<std::vector<int64_t>>("padding_idxs");
  std::vector<const Tensor*> fed;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = next_feed.find(ids[i]);
    FLOTILLA_CHECK(it != next_feed.end() && it->second.dtype() == DType::kInt64, InvalidArgument,
                   "fleet::prefetch_sparse: the feed needs int64 '", ids[i], "', the ids of sparse table '",
                   tables[i], "'");
    fed.push_back(&it->second);
  }
  if (async) return internal::PullAheadForLookups(tables, fed, padding);
  std::vector<std::vector<int64_t>> keys(ids.size());
  std::vector<ps::GeoCommunicator::TableKeys> next;
  for (size_t i = 0; i < ids.size(); ++i) {
    keys[i] = internal::WithoutPadding(fed[i]->data<int64_t>(), fed[i]->numel(), padding[i]);
    next.push_back({tables[i], keys[i]});
  }
  std::lock_guard<std::mutex> lock(internal::GeoMutex());
  rt->geo->PrefetchNext(next);
}

void Fleet::SavePsTables(const std::string& dir) {
  auto rt = ps::RequireTrainerRuntime("fleet::save_persistables");
  if (rt->geo) rt->geo->Wait();  // the last sync's deltas are in the tables saved
  rt->client->Save(dir);
}

void init_server(const std::string& model_dir) { default_fleet().init_server(model_dir); }
void run_server() { default_fleet().run_server(); }
void init_worker(bool servers_loaded) { default_fleet().init_worker(servers_loaded); }
void stop_worker() { default_fleet().stop_worker(); }
int64_t shrink() { return default_fleet().shrink(); }
void prefetch_sparse(const FeedMap& next_feed) { default_fleet().prefetch_sparse(next_feed); }

}  // namespace flotilla::fleet
