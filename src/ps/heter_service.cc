#include "flotilla/ps/heter_service.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>

#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/trace/standard_metrics.h"
#include "ps/credentials.h"
#include "ps/heter.grpc.pb.h"
#include "ps/rpc_status.h"
#include "ps/service.h"

namespace flotilla::ps {

namespace {

void ToProto(const NamedTensors& tensors, rpc::HeterBatch* out) {
  for (const auto& [name, t] : tensors) {
    rpc::HeterTensor* p = out->add_tensors();
    p->set_name(name);
    p->set_dtype(static_cast<int32_t>(t.dtype()));
    for (int64_t d : t.dims()) p->add_dims(d);
    p->set_data(static_cast<const char*>(t.raw_data()), t.nbytes());
    for (const LoDLevel& level : t.lod()) p->add_lod()->mutable_offsets()->Add(level.begin(), level.end());
  }
}

NamedTensors FromProto(const rpc::HeterBatch& in, const std::string& who) {
  NamedTensors out;
  for (const auto& p : in.tensors()) {
    const DType dtype = static_cast<DType>(p.dtype());
    Tensor t(dtype, Dims(p.dims().begin(), p.dims().end()));
    FLOTILLA_CHECK(p.data().size() == t.nbytes(), InvalidArgument, who, ": tensor '", p.name(),
                   "' of shape ", DimsToString(t.dims()), " carries ", p.data().size(),
                   " bytes, expected ", t.nbytes());
    std::memcpy(t.raw_mutable_data(dtype), p.data().data(), t.nbytes());
    LoD lod;
    for (const auto& level : p.lod()) lod.emplace_back(level.offsets().begin(), level.offsets().end());
    CheckLoD(lod, t.rank() ? t.dim(0) : -1, who + ": tensor '" + p.name() + "'");
    t.set_lod(std::move(lod));
    out.emplace_back(p.name(), std::move(t));
  }
  return out;
}

}  // namespace

// ---- server ----

struct HeterServer::State final : rpc::HeterService::Service {
  HeterServerOptions options;
  std::string wire_token;  // WireToken(options.token): what requests must carry
  Handler handler;
  OnDone on_done;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex run_mu;  // serialises the handler
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> done;        // guarded by mu
  bool stop = false;         // guarded by mu
  std::atomic<int64_t> batches{0};

  template <typename Fn>
  grpc::Status Guarded(grpc::ServerContext* ctx, Fn&& fn) {
    if (!wire_token.empty()) {
      auto it = ctx->client_metadata().find(kTokenMetadata);
      const bool ok = it != ctx->client_metadata().end() &&
                      SecretEquals(std::string_view(it->second.data(), it->second.size()), wire_token);
      if (!ok) {
        trace::RecordAuthRefusal("ps");
        log::Warn("{}: refused a request from {} (missing or wrong job secret)", options.name, ctx->peer());
        return {grpc::StatusCode::PERMISSION_DENIED,
                StrCat("request refused by ", options.name, ": missing or wrong job secret "
                       "(FLOTILLA_JOB_SECRET_FILE / FLOTILLA_JOB_SECRET must be the job's)")};
      }
    }
    try {
      fn();
      return grpc::Status::OK;
    } catch (const Error& e) {
      return {StatusCodeOf(e.code()), StrCat(options.name, ": ", e.what())};
    } catch (const std::exception& e) {
      return {grpc::StatusCode::INTERNAL, StrCat(options.name, ": ", e.what())};
    }
  }

  grpc::Status RunBatch(grpc::ServerContext* ctx, const rpc::HeterBatch* req, rpc::HeterBatch* resp) override {
    return Guarded(ctx, [&] {
      NamedTensors inputs = FromProto(*req, options.name);
      NamedTensors outputs;
      {
        std::lock_guard<std::mutex> lock(run_mu);
        outputs = handler(req->trainer_id(), inputs, {req->fetch().begin(), req->fetch().end()});
      }
      ++batches;
      resp->set_trainer_id(req->trainer_id());
      resp->set_batch_id(req->batch_id());
      ToProto(outputs, resp);
    });
  }

  grpc::Status TrainerDone(grpc::ServerContext* ctx, const rpc::HeterDone* req, rpc::HeterAck*) override {
    return Guarded(ctx, [&] {
      {
        std::lock_guard<std::mutex> lock(run_mu);
        if (on_done) on_done(req->trainer_id());
      }
      std::lock_guard<std::mutex> lock(mu);
      done.insert(req->trainer_id());
      cv.notify_all();
    });
  }
};

HeterServer::HeterServer(HeterServerOptions options, Handler handler, OnDone on_done)
    : state_(std::make_unique<State>()) {
  FLOTILLA_CHECK(handler != nullptr, InvalidArgument, options.name, ": no batch handler");
  FLOTILLA_CHECK(options.num_trainers >= 0, InvalidArgument, options.name, ": num_trainers ",
                 options.num_trainers, " must not be negative");
  state_->options = std::move(options);
  state_->wire_token = WireToken(state_->options.token);
  state_->handler = std::move(handler);
  state_->on_done = std::move(on_done);
}

HeterServer::~HeterServer() {
  if (state_->server) {
    state_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    state_->server->Wait();
  }
}

void HeterServer::Start() {
  if (state_->server) return;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(state_->options.endpoint, ServerCredentials(state_->options.tls),
                           &state_->port);
  builder.SetMaxReceiveMessageSize(state_->options.max_message_bytes);
  builder.SetMaxSendMessageSize(state_->options.max_message_bytes);
  builder.RegisterService(state_.get());
  state_->server = builder.BuildAndStart();
  FLOTILLA_CHECK(state_->server && state_->port > 0, Unavailable, state_->options.name,
                 " cannot listen on ", state_->options.endpoint);
  log::Info("{} listening on port {} for {} trainer(s)", state_->options.name, state_->port,
            state_->options.num_trainers);
}

int HeterServer::port() const { return state_->port; }

void HeterServer::Run() {
  Start();
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] {
    return state_->stop || static_cast<int>(state_->done.size()) >= state_->options.num_trainers;
  });
}

void HeterServer::Stop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
}

int64_t HeterServer::batches() const { return state_->batches.load(); }

// ---- client ----

struct HeterClient::Impl {
  int trainer_id;
  HeterClientOptions options;
  std::string wire_token;  // WireToken(options.token)
  std::unique_ptr<rpc::HeterService::Stub> stub;

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + options.timeout);
    ctx->set_wait_for_ready(true);  // a worker still starting up is waited for
    if (!wire_token.empty()) ctx->AddMetadata(kTokenMetadata, wire_token);
    return ctx;
  }
};

HeterClient::HeterClient(std::string endpoint, int trainer_id, HeterClientOptions options)
    : endpoint_(std::move(endpoint)), impl_(std::make_unique<Impl>()) {
  impl_->trainer_id = trainer_id;
  impl_->options = std::move(options);
  impl_->wire_token = WireToken(impl_->options.token);
  impl_->stub = rpc::HeterService::NewStub(
      NewChannel(endpoint_, impl_->options.tls, impl_->options.max_message_bytes));
}

HeterClient::~HeterClient() = default;

std::future<NamedTensors> HeterClient::Run(int64_t batch_id, const NamedTensors& inputs,
                                           const std::vector<std::string>& fetch) {
  auto req = std::make_shared<rpc::HeterBatch>();
  for (const auto& name : fetch) req->add_fetch(name);
  req->set_trainer_id(impl_->trainer_id);
  req->set_batch_id(batch_id);
  ToProto(inputs, req.get());
  return std::async(std::launch::async, [this, req] {
    const std::string who = StrCat("heter worker at ", endpoint_);
    rpc::HeterBatch resp;
    auto ctx = impl_->Context();
    grpc::Status s = impl_->stub->RunBatch(ctx.get(), *req, &resp);
    if (!s.ok()) ThrowRpcStatus(s, who, "RunBatch");
    return FromProto(resp, who);
  });
}

void HeterClient::Done() {
  rpc::HeterDone req;
  req.set_trainer_id(impl_->trainer_id);
  rpc::HeterAck ack;
  auto ctx = impl_->Context();
  grpc::Status s = impl_->stub->TrainerDone(ctx.get(), req, &ack);
  if (!s.ok()) ThrowRpcStatus(s, StrCat("heter worker at ", endpoint_), "TrainerDone");
}

}  // namespace flotilla::ps
