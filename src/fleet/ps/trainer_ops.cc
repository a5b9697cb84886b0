// ps_trainer_init, ps_send, ps_barrier, ps_recv, ps_geo_step: the trainer
// side of a transpiled parameter-server program.
#include <algorithm>
#include <mutex>

#include "fleet/ps/ps_ops.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/tls_files.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/ps/trainer_runtime.h"

namespace flotilla::fleet {

namespace {

using ps::DenseVar;
using ps::PsMode;
using ps::TrainerRuntime;

using Strings = std::vector<std::string>;

// The dense parameters named by the op, sharing the scope's buffers.
std::vector<DenseVar> ScopeDenseVars(const ExecutionContext& ctx) {
  auto names = ctx.Attr<Strings>("dense_names");
  auto widths = ctx.Attr<std::vector<int64_t>>("dense_row_widths");
  std::vector<DenseVar> vars;
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor* t = ctx.scope().GetVar(names[i]).GetMutableTensor();
    FLOTILLA_CHECK(t->numel() > 0, InvalidArgument, ctx.Where(), ": parameter '", names[i],
                   "' has no value (run the startup program first)");
    vars.push_back({names[i], *t, widths[i]});
  }
  return vars;
}

ps::PsClientOptions ClientOptions(const ExecutionContext& ctx) {
  ps::PsClientOptions opt;
  int64_t timeout_ms = ctx.AttrOr<int64_t>("rpc_timeout_ms", 0);
  if (timeout_ms <= 0) timeout_ms = env::GetIntInRange("FLOTILLA_PS_TIMEOUT_MS", 30000, 1, kMaxTimeoutMs);
  opt.retry_timeout = std::chrono::milliseconds(timeout_ms);
  opt.rpc_timeout = std::chrono::milliseconds(timeout_ms);
  // Retries of an unreachable server (1 s apart once backed off) last the
  // whole timeout: a server loading a large table before it listens is waited for.
  opt.max_attempts = std::max<int>(opt.max_attempts, static_cast<int>(timeout_ms / 1000) + 5);
  opt.token = internal::PsToken(ctx);
  opt.tls = TlsFilesFromEnv();
  opt.min_block_size = ctx.AttrOr<int64_t>("min_block_size", ps::kMinBlockSize);
  return opt;
}

// Trainer 0 writes the rows of the is_sparse (not distributed) tables it
// holds, so every table starts from the single-process values.
void SeedSparse(const ExecutionContext& ctx, ps::PsClient& client) {
  for (const auto& name : ctx.Attr<Strings>("seed_sparse_names")) {
    const Tensor& w = ctx.scope().GetVar(name).GetTensor();
    std::vector<int64_t> keys(static_cast<size_t>(w.dim(0)));
    for (size_t k = 0; k < keys.size(); ++k) keys[k] = static_cast<int64_t>(k);
    client.InitSparse(name, keys, w);
  }
}

void StartAsync(const ExecutionContext& ctx, TrainerRuntime& rt, std::vector<DenseVar>& vars) {
  ps::CommunicatorOptions opt;
  opt.send_queue_size = ctx.AttrOr<int32_t>("send_queue_size", 16);
  opt.max_merge_var_num = ctx.AttrOr<int32_t>("max_merge_var_num", 1);
  opt.independent_recv_thread = ctx.AttrOr<bool>("independent_recv_thread", false);
  rt.async = std::make_shared<ps::AsyncCommunicator>(rt.client, opt);
  for (auto& v : vars) rt.async->AddDense(v.name, v.value.dims(), v.row_width);
  for (const auto& name : ctx.Attr<Strings>("sparse_names")) rt.async->AddSparse(name);
  rt.async->Start();
}

void StartGeo(const ExecutionContext& ctx, TrainerRuntime& rt, std::vector<DenseVar>& vars) {
  ps::GeoOptions opt;
  opt.k_steps = ctx.AttrOr<int32_t>("k_steps", 100);
  rt.geo = std::make_shared<ps::GeoCommunicator>(rt.client, opt);
  for (auto& v : vars) rt.geo->AddDense(v.name, v.value, v.row_width);
  for (const auto& name : ctx.Attr<Strings>("sparse_names")) rt.geo->AddSparse(name);
  rt.geo->Init();
}

void RegisterCloseHookOnce() {
  static std::once_flag once;
  std::call_once(once, [] { Executor::AddCloseHook([] { ps::FinishTrainerRuntime(); }); });
}

// The trainer's PS state is shared by every thread running its program
// (train_from_dataset's workers): these serialise what must happen once.
std::mutex init_mu;  // the first run's connect and seed
// Sync mode: a step's push, barrier and pull form one round per trainer.
// ps_send takes the lock for its thread and ps_recv releases it, so two
// threads never push into one round; a thread that dies in between
// releases it on exit.
std::mutex sync_round_mu;
thread_local std::unique_lock<std::mutex> sync_round;

void EnterSyncRound() {
  if (!sync_round.owns_lock()) sync_round = std::unique_lock<std::mutex>(sync_round_mu);
}

void LeaveSyncRound() {
  if (sync_round.owns_lock()) sync_round.unlock();
}

void TrainerInitKernel(ExecutionContext& ctx) {
  if (ps::CurrentTrainerRuntime() != nullptr) return;
  std::lock_guard<std::mutex> once(init_mu);
  if (ps::CurrentTrainerRuntime() != nullptr) return;
  RegisterCloseHookOnce();
  auto rt = std::make_shared<TrainerRuntime>();
  rt->mode = ps::ParsePsMode(ctx.Attr<std::string>("mode"));
  int trainer_id = ctx.Attr<int32_t>("trainer_id");
  rt->client = std::make_shared<ps::PsClient>(ctx.Attr<Strings>("endpoints"), trainer_id,
                                              ctx.Attr<int32_t>("trainers"), ClientOptions(ctx));
  std::vector<DenseVar> vars = ScopeDenseVars(ctx);
  bool seed = ctx.AttrOr<bool>("seed_servers", true) && trainer_id == 0;
  if (seed) SeedSparse(ctx, *rt->client);
  if (rt->mode == PsMode::kGeo) {
    // GEO's Init() seeds from trainer 0's tensors: when the servers hold a
    // loaded model, fetch it into them first so the seed is that model.
    if (!ctx.AttrOr<bool>("seed_servers", true)) {
      rt->client->Barrier();
      rt->client->PullDense(vars);
    }
    StartGeo(ctx, *rt, vars);
  } else {
    if (seed) rt->client->InitDense(vars);
    rt->client->Barrier();
    rt->client->PullDense(vars);
    if (rt->mode == PsMode::kAsync) {
      // Async pushes apply at once: nobody pushes before everyone has the
      // seed, so every trainer's first step sees the initial parameters.
      rt->client->Barrier();
      StartAsync(ctx, *rt, vars);
    }
  }
  ps::InstallTrainerRuntime(rt);
  log::Info("ps: trainer {} connected to {} server(s), {} mode", trainer_id,
            rt->client->num_servers(), ps::PsModeName(rt->mode));
}

// GEO: sparse SGD on the locally cached rows (Paddle's GEO runs SGD only).
// Rows are not merged first: SGD applied per repeated row is merged SGD.
void GeoSparseSgd(ps::GeoCommunicator& geo, const std::string& name, const SelectedRows& grad,
                  float lr) {
  if (grad.rows().empty()) return;
  geo.SgdSparse(name, grad.rows(), grad.value(), lr);
}

// The step's learning rate of each table: its optimizer's rate variable
// (a constant, or a schedule the program computes), sent with the push.
float RateOf(const ExecutionContext& ctx, const char* slot, size_t i) {
  return ctx.Input(slot, i).data<float>()[0];
}

void SendDense(const ExecutionContext& ctx, TrainerRuntime& rt) {
  auto names = ctx.Attr<Strings>("dense_names");
  auto widths = ctx.Attr<std::vector<int64_t>>("dense_row_widths");
  std::vector<const Tensor*> grads = ctx.MultiInput("Grad");
  if (rt.mode == PsMode::kAsync) {
    for (size_t i = 0; i < names.size(); ++i) {
      rt.async->SendDense(names[i], *grads[i], RateOf(ctx, "LearningRate", i));
    }
    return;
  }
  std::vector<DenseVar> vars;
  for (size_t i = 0; i < names.size(); ++i) {
    vars.push_back({names[i], *grads[i], widths[i], RateOf(ctx, "LearningRate", i)});
  }
  if (!vars.empty()) rt.client->PushDense(vars);
}

void SendSparse(const ExecutionContext& ctx, TrainerRuntime& rt) {
  auto names = ctx.Attr<Strings>("sparse_names");
  for (size_t i = 0; i < names.size(); ++i) {
    const SelectedRows& g = ctx.InputVar("SparseGrad", i)->GetSelectedRows();
    const float lr = RateOf(ctx, "SparseLearningRate", i);
    if (rt.mode == PsMode::kSync) {
      rt.client->PushSparse(names[i], g, lr);
    } else if (rt.mode == PsMode::kAsync) {
      rt.async->SendSparse(names[i], g, lr);
    } else {
      std::lock_guard<std::mutex> lock(internal::GeoMutex());
      GeoSparseSgd(*rt.geo, names[i], g, lr);
    }
  }
}

void SendKernel(ExecutionContext& ctx) {
  auto rt = ps::RequireTrainerRuntime("op 'ps_send'");
  if (rt->mode == PsMode::kSync) EnterSyncRound();
  if (rt->mode != PsMode::kGeo) SendDense(ctx, *rt);
  SendSparse(ctx, *rt);
}

void BarrierKernel(ExecutionContext&) { ps::RequireTrainerRuntime("op 'ps_barrier'")->client->Barrier(); }

void RecvKernel(ExecutionContext& ctx) {
  auto rt = ps::RequireTrainerRuntime("op 'ps_recv'");
  std::vector<DenseVar> vars = ScopeDenseVars(ctx);
  if (rt->mode == PsMode::kAsync) {
    for (auto& v : vars) rt->async->RecvDense(v.name, ctx.scope().GetVar(v.name).GetMutableTensor());
  } else if (!vars.empty()) {
    rt->client->PullDense(vars);
  }
  LeaveSyncRound();
}

void GeoStepKernel(ExecutionContext&) {
  auto rt = ps::RequireTrainerRuntime("op 'ps_geo_step'");
  std::lock_guard<std::mutex> lock(internal::GeoMutex());
  rt->geo->Step();
}

}  // namespace

namespace internal {

std::mutex& GeoMutex() {
  static std::mutex mu;
  return mu;
}

void RegisterPsTrainerOps() {
  auto& r = OpRegistry::Global();
  auto cpu = [](KernelFn fn) { return std::map<Place::Kind, KernelFn>{{Place::Kind::kCPU, fn}}; };
  r.Register({.type = "ps_trainer_init", .kernels = cpu(TrainerInitKernel)});
  r.Register({.type = "ps_send", .kernels = cpu(SendKernel)});
  r.Register({.type = "ps_barrier", .kernels = cpu(BarrierKernel)});
  r.Register({.type = "ps_recv", .kernels = cpu(RecvKernel)});
  r.Register({.type = "ps_geo_step", .kernels = cpu(GeoStepKernel)});
}

}  // namespace internal

}  // namespace flotilla::fleet
