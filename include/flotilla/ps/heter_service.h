// The RPC between CPU trainers and heter workers in heterogeneous
// parameter-server training.
//
// A trainer runs the sparse part of each mini-batch and sends its
// activations (named tensors) to one heter worker with HeterClient::Run;
// the worker's HeterServer hands them to its handler, which runs the dense
// part and returns the activations' gradients. A trainer keeps several
// batches in flight, so while the worker computes one batch the next one is
// on the wire and the trainer works on a third.
//
// Every request carries the job's token (the parameter servers' secret);
// the server refuses one without it (PERMISSION_DENIED, reported by the
// client as InvalidArgument naming the worker). Errors of the handler reach
// the trainer with their code and message, prefixed with the worker.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flotilla/common/tls_files.h"
#include "flotilla/core/tensor.h"

namespace flotilla::ps {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct HeterServerOptions {
  std::string endpoint = "0.0.0.0:0";  // host:port to listen on (port 0: any)
  std::string name = "heter worker";   // in messages and logs: "heter worker 1"
  int num_trainers = 1;                // trainers that will say TrainerDone
  std::string token;                   // required on every request when non-empty
  TlsFiles tls;                        // as PsServerOptions::tls; default plaintext
  int max_message_bytes = 256 << 20;
};

class HeterServer {
 public:
  // Runs one mini-batch of `trainer_id` and returns the reply (including
  // the `fetch` names the trainer asked for). Calls are serialised (one at
  // a time, any order); the handler may throw flotilla::Error.
  using Handler = std::function<NamedTensors(int trainer_id, const NamedTensors& inputs,
                                             const std::vector<std::string>& fetch)>;
  // Called once per trainer when it said it is done, before the reply.
  using OnDone = std::function<void(int trainer_id)>;

  HeterServer(HeterServerOptions options, Handler handler, OnDone on_done = nullptr);
  ~HeterServer();  // stops serving
  HeterServer(const HeterServer&) = delete;
  HeterServer& operator=(const HeterServer&) = delete;

  // Listens; throws Unavailable naming the endpoint when it cannot.
  void Start();
  int port() const;
  // Serves until every trainer has said TrainerDone (or Stop()).
  void Run();
  void Stop();
  int64_t batches() const;  // mini-batches run so far

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct HeterClientOptions {
  std::string token;
  TlsFiles tls;  // as PsClientOptions::tls; default plaintext
  // Per request; a worker not listening yet is waited for within it.
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
  int max_message_bytes = 256 << 20;
};

class HeterClient {
 public:
  HeterClient(std::string endpoint, int trainer_id, HeterClientOptions options = {});
  ~HeterClient();
  HeterClient(const HeterClient&) = delete;
  HeterClient& operator=(const HeterClient&) = delete;

  // Sends one mini-batch on a background thread; the future gives the
  // worker's reply or rethrows its error (naming the worker's endpoint).
  // The tensors are serialised before Run returns.
  std::future<NamedTensors> Run(int64_t batch_id, const NamedTensors& inputs,
                                const std::vector<std::string>& fetch = {});
  // Tells the worker this trainer has sent its last batch; returns once the
  // worker has finished with it (its pushes flushed).
  void Done();
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Impl;
  std::string endpoint_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flotilla::ps
