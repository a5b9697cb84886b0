// PsClient's control calls: the barrier, table save/load/shrink, and the
// end of a trainer's and of the servers' work. Each goes to every server at
// once through the client's RpcFanout.
#include <string>
#include <vector>

#include "flotilla/ps/client.h"
#include "ps/client_impl.h"

namespace flotilla::ps {

using Stub = rpc::PsService::Stub;
using Done = std::function<void(grpc::Status)>;

namespace {

// Control calls that send the same request to every server, each answering
// into its own response.
template <typename Req, typename Resp, typename Method>
std::vector<ServerCall> SameCallEverywhere(int n, const Req* req, std::vector<Resp>* resps,
                                           Method method) {
  resps->resize(n);
  std::vector<ServerCall> calls;
  for (int s = 0; s < n; ++s) {
    calls.push_back({s, [req, resp = &(*resps)[s], method](Stub* stub, grpc::ClientContext* ctx,
                                                           Done done) {
                       method(stub->async(), ctx, req, resp, std::move(done));
                     }});
  }
  return calls;
}

}  // namespace

void PsClient::Barrier() {
  rpc::BarrierRequest req;
  req.set_trainer_id(impl_->trainer_id);
  std::vector<rpc::Ack> acks;
  impl_->fanout.Run("Barrier",
                    SameCallEverywhere(num_servers(), &req, &acks,
                                       [](auto* a, auto... args) { a->Barrier(args...); }),
                    impl_->options.barrier_timeout);
}

// Save or Load (`method` on the async stub) of every server's tables in `dir`.
template <typename Method>
void TableIo(PsClient::Impl& impl, const char* name, const std::string& dir, Method method,
             bool parent_must_exist = false) {
  rpc::PathRequest req;
  req.set_dir(dir);
  req.set_parent_must_exist(parent_must_exist);
  std::vector<rpc::Ack> acks;
  impl.fanout.Run(name, SameCallEverywhere(static_cast<int>(impl.endpoints.size()), &req, &acks, method),
                  impl.options.table_io_timeout);
}

void PsClient::Save(const std::string& dir, bool parent_must_exist) {
  TableIo(*impl_, "Save", dir, [](auto* a, auto... args) { a->Save(args...); }, parent_must_exist);
}

void PsClient::Load(const std::string& dir) {
  TableIo(*impl_, "Load", dir, [](auto* a, auto... args) { a->Load(args...); });
}

int64_t PsClient::Shrink() {
  rpc::TrainerRequest req;
  req.set_trainer_id(impl_->trainer_id);
  std::vector<rpc::ShrinkResponse> resps;
  impl_->fanout.Run("Shrink",
                    SameCallEverywhere(num_servers(), &req, &resps,
                                       [](auto* a, auto... args) { a->Shrink(args...); }),
                    impl_->options.table_io_timeout);
  int64_t dropped = 0;
  for (const auto& r : resps) dropped += r.dropped();
  return dropped;
}

void PsClient::Finish() {
  if (impl_->finished.exchange(true)) return;
  rpc::TrainerRequest req;
  req.set_trainer_id(impl_->trainer_id);
  std::vector<rpc::Ack> acks;
  impl_->fanout.Run("TrainerFinished",
                    SameCallEverywhere(num_servers(), &req, &acks,
                                       [](auto* a, auto... args) { a->TrainerFinished(args...); }));
}

void PsClient::StopServers() {
  rpc::TrainerRequest req;
  req.set_trainer_id(impl_->trainer_id);
  std::vector<rpc::Ack> acks;
  impl_->fanout.Run("Stop", SameCallEverywhere(num_servers(), &req, &acks,
                                               [](auto* a, auto... args) { a->Stop(args...); }));
}

}  // namespace flotilla::ps
