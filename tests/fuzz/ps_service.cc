// Fuzzes the parameter server's request handling: protobuf requests decoded
// and handed to the gRPC service's handlers (PsServiceImpl), as a server
// does after reading them off the wire, against fresh tables per input
// (fuzz/ps_tables.h).
//
// Input: a mode byte (sync, async or geo), then calls, each a method byte, a
// u16 length and that many bytes of the method's request. Bytes that do not
// parse as the request message are skipped, as gRPC would. Save is left out
// (it writes files; the ps_table_file target covers the files); Load reads
// from a model directory holding a real save under "ckpt".
#include <memory>

#include "fuzz/fuzz_input.h"
#include "fuzz/ps_tables.h"
#include "fuzz/scratch_dir.h"
#include "ps/server_state.h"
#include "ps/service.h"

namespace flotilla::fuzz {
namespace {

using ps::PsServiceImpl;

// The model directory, with the tables saved under "ckpt".
const std::string& ModelRoot() {
  static const std::string root = [] {
    FuzzServerWithRows()->Save(ScratchDir() + "/ckpt");
    return ScratchDir();
  }();
  return root;
}

std::unique_ptr<ps::PsServer::State> NewState(uint8_t mode) {
  ps::PsServerOptions o;
  o.mode = mode % 3 == 0 ? ps::PsMode::kSync : mode % 3 == 1 ? ps::PsMode::kAsync : ps::PsMode::kGeo;
  o.num_trainers = 2;
  o.barrier_timeout = std::chrono::milliseconds(1);
  o.model_root = ModelRoot();
  o.max_message_bytes = 1 << 20;
  auto state = std::make_unique<ps::PsServer::State>(std::move(o));
  for (const auto& name : kFuzzDenseTables) {
    state->dense[name] = std::make_unique<ps::DenseTable>(FuzzDenseConfig(name), 0, 1);
  }
  for (const auto& name : kFuzzSparseTables) {
    state->sparse[name] = std::make_unique<ps::SparseTable>(FuzzSparseConfig(name));
  }
  return state;
}

template <typename Request, typename Response>
void Call(PsServiceImpl& service,
          grpc::Status (PsServiceImpl::*method)(grpc::ServerContext*, const Request*, Response*),
          const std::string& bytes) {
  Request request;
  if (!request.ParseFromString(bytes)) return;
  grpc::ServerContext context;
  Response response;
  (service.*method)(&context, &request, &response);
}

void Dispatch(PsServiceImpl& s, uint8_t method, const std::string& bytes) {
  switch (method % 11) {
    case 0: return Call(s, &PsServiceImpl::PullDense, bytes);
    case 1: return Call(s, &PsServiceImpl::PushDense, bytes);
    case 2: return Call(s, &PsServiceImpl::PullSparse, bytes);
    case 3: return Call(s, &PsServiceImpl::PushSparse, bytes);
    case 4: return Call(s, &PsServiceImpl::PushDelta, bytes);
    case 5: return Call(s, &PsServiceImpl::Barrier, bytes);
    case 6: return Call(s, &PsServiceImpl::Load, bytes);
    case 7: return Call(s, &PsServiceImpl::Shrink, bytes);
    case 8: return Call(s, &PsServiceImpl::TrainerFinished, bytes);
    case 9: return Call(s, &PsServiceImpl::Stop, bytes);
    default: return Call(s, &PsServiceImpl::Echo, bytes);
  }
}

}  // namespace
}  // namespace flotilla::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flotilla::fuzz;
  FuzzInput in(data, size);
  auto state = NewState(in.U8());
  flotilla::ps::PsServiceImpl service(state.get());
  while (in.left() > 0) {
    const uint8_t method = in.U8();
    Dispatch(service, method, in.Str());
  }
  return 0;
}
