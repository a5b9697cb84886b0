// The Fleet API of heterogeneous parameter-server jobs: heter workers serve
// the dense part of the split program; trainers pipeline their mini-batches
// through it (fleet/heter_split.h, fleet/heter_pipeline.h).
#include "fleet/ps/ps_ops.h"
#include "fleet/ps_job.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/common/tls_files.h"
#include "flotilla/ps/trainer_runtime.h"

namespace flotilla::fleet {

namespace {

// Trainer t hands its batches to heter worker t % H.
int TrainersOf(int heter_index, int heters, int trainers) {
  int n = 0;
  for (int t = 0; t < trainers; ++t) n += t % heters == heter_index ? 1 : 0;
  return n;
}

std::string ListenAddress(const std::string& endpoint) {
  return StrCat("0.0.0.0:", ParseHostPort(endpoint, "heter worker endpoint").port);
}

}  // namespace

bool Fleet::is_heter_worker() const {
  CheckInit("is_heter_worker");
  return role_->role == Role::kHeterWorker;
}

bool Fleet::is_heter_job() const {
  CheckInit("is_heter_job");
  return !role_->is_collective && !role_->heter_endpoints.empty();
}

const HeterSplit& Fleet::RequireHeter(const char* what) const {
  CheckInit(what);
  FLOTILLA_CHECK(ps_ != nullptr && ps_->heter != nullptr, InvalidArgument, what,
                 " needs a heterogeneous parameter-server job (heter workers listed in "
                 "PADDLE_HETER_TRAINER_IP_PORT_LIST) and distributed_optimizer(...).minimize() first");
  return *ps_->heter;
}

void Fleet::run_heter_worker() {
  const HeterSplit& split = RequireHeter("fleet::run_heter_worker");
  FLOTILLA_CHECK(is_heter_worker(), InvalidArgument, "fleet::run_heter_worker called on a ",
                 is_server() ? "server" : "trainer");
  Executor exe(CPUPlace());
  const int heters = static_cast<int>(role_->heter_endpoints.size());
  ps::HeterServerOptions opt;
  opt.endpoint = ListenAddress(role_->current_endpoint);
  opt.name = StrCat("heter worker ", role_->heter_index);
  opt.num_trainers = TrainersOf(role_->heter_index, heters, role_->worker_num);
  opt.token = internal::PsToken(ps_->transpiler->config().token, opt.name);
  opt.tls = TlsFilesFromEnv();
  auto run = [&](int, const ps::NamedTensors& in, const std::vector<std::string>& fetch) {
    FeedMap feed(in.begin(), in.end());
    std::vector<std::string> names = split.boundary_grads;
    names.insert(names.end(), fetch.begin(), fetch.end());
    std::vector<Tensor> values = exe.Run(split.heter, feed, names);
    ps::NamedTensors out;
    for (size_t i = 0; i < names.size(); ++i) out.emplace_back(names[i], std::move(values[i]));
    return out;
  };
  // A trainer that is done gets its answer once this worker's dense pushes
  // have reached the servers: it then pulls the trained parameters.
  auto flush = [](int) {
    if (auto rt = ps::CurrentTrainerRuntime(); rt != nullptr && rt->async != nullptr) rt->async->Flush();
  };
  ps::HeterServer server(opt, run, flush);
  server.Start();
  server.Run();
  log::Info("{}: ran {} mini-batches for {} trainer(s)", opt.name, server.batches(), opt.num_trainers);
}

std::vector<Tensor> Fleet::heter_train_step(Executor& exe, const FeedMap& feed,
                                            const std::vector<std::string>& fetch_list) {
  const HeterSplit& split = RequireHeter("fleet::heter_train_step");
  FLOTILLA_CHECK(is_worker(), InvalidArgument, "fleet::heter_train_step called on a ",
                 is_server() ? "server" : "heter worker");
  if (ps_->pipeline == nullptr) {
    const auto& heters = role_->heter_endpoints;
    const std::string& endpoint = heters[role_->worker_index % heters.size()];
    ps::HeterClientOptions opt;
    opt.token = internal::PsToken(ps_->transpiler->config().token, "fleet::heter_train_step");
    opt.tls = TlsFilesFromEnv();
    opt.timeout = std::chrono::milliseconds(env::GetIntInRange("FLOTILLA_PS_TIMEOUT_MS", 120000, 1, kMaxTimeoutMs));
    ps_->pipeline = std::make_unique<HeterPipeline>(
        split, std::make_unique<ps::HeterClient>(endpoint, role_->worker_index, opt), ps_->pipeline_depth);
    log::Info("fleet: trainer {} hands its mini-batches to heter worker {} ({} in flight)",
              role_->worker_index, endpoint, ps_->pipeline_depth);
  }
  return ps_->pipeline->Step(exe, feed, fetch_list);
}

void Fleet::heter_flush(Executor& exe, Scope* scope) {
  const HeterSplit& split = RequireHeter("fleet::heter_flush");
  if (ps_->pipeline != nullptr) {
    ps_->pipeline->Finish(exe);
    ps_->pipeline.reset();
  }
  // The dense parameters the heter workers trained, for evaluation here.
  const OpDesc& init = split.trainer_forward.global_block().op(0);
  auto names = init.Attr<std::vector<std::string>>("dense_names");
  auto widths = init.Attr<std::vector<int64_t>>("dense_row_widths");
  Scope& s = scope != nullptr ? *scope : global_scope();
  std::vector<ps::DenseVar> vars;
  for (size_t i = 0; i < names.size(); ++i) {
    vars.push_back({names[i], *s.GetVar(names[i]).GetMutableTensor(), widths[i]});
  }
  if (!vars.empty()) ps::RequireTrainerRuntime("fleet::heter_flush")->client->PullDense(vars);
}

bool is_heter_worker() { return default_fleet().is_heter_worker(); }
bool is_heter_job() { return default_fleet().is_heter_job(); }
void run_heter_worker() { default_fleet().run_heter_worker(); }
std::vector<Tensor> heter_train_step(Executor& exe, const FeedMap& feed,
                                     const std::vector<std::string>& fetch_list) {
  return default_fleet().heter_train_step(exe, feed, fetch_list);
}
void heter_flush(Executor& exe, Scope* scope) { default_fleet().heter_flush(exe, scope); }

}  // namespace flotilla::fleet
