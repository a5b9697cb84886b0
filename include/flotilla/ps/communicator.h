// AsyncCommunicator: the trainer side of async mode. The training loop hands
// gradients to Send*() and goes on; a background thread merges up to
// max_merge_var_num queued gradients of each variable into one push, and
// fresh parameter values are pulled in the background (by the send thread
// after each round, or by an independent receive thread).
//
//   auto comm = std::make_unique<AsyncCommunicator>(client, CommunicatorOptions{});
//   comm->AddDense("fc_0.w_0", {13, 1});
//   comm->Start();
//   ... comm->SendDense("fc_0.w_0", grad);  comm->RecvDense("fc_0.w_0", &param); ...
//   comm->Stop();   // flushes what is queued
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "flotilla/core/dims.h"
#include "flotilla/core/selected_rows.h"
#include "flotilla/core/tensor.h"
#include "flotilla/ps/client.h"

namespace flotilla::ps {

struct CommunicatorOptions {
  // Gradients queued per variable before Send*() blocks (back-pressure).
  int send_queue_size = 20;
  // At most this many queued gradients of one variable are merged into one push.
  int max_merge_var_num = 20;
  // Pull parameters on their own thread instead of after each send round.
  bool independent_recv_thread = true;
  // The receive thread pulls once this many gradients were sent since its last pull.
  int min_send_grad_num_before_recv = 1;
  // Merged gradients are summed (each queued gradient counts as a step, as
  // if pushed one by one) or averaged (one step of the mean gradient).
  bool merge_average = false;
};

// Thread-safe: Send*/Recv*/Flush may be called from any thread. Variables
// must be added before Start(). Errors of background pushes and pulls are
// kept and rethrown by the next Send*, Recv*, Flush or Stop call.
class AsyncCommunicator {
 public:
  AsyncCommunicator(std::shared_ptr<PsClient> client, CommunicatorOptions options);
  // Stops (without rethrowing background errors) and joins the threads.
  ~AsyncCommunicator();
  AsyncCommunicator(const AsyncCommunicator&) = delete;
  AsyncCommunicator& operator=(const AsyncCommunicator&) = delete;

  // A dense parameter: its gradients are sent and its values received.
  void AddDense(const std::string& name, Dims dims, int64_t row_width = 1);
  // A sparse table whose gradients (SelectedRows) are sent.
  void AddSparse(const std::string& name);
  void Start();
  // Sends everything queued, then stops the threads. Idempotent.
  void Stop();

  // Queues a copy of `grad`; blocks while send_queue_size gradients of this
  // variable are waiting. Throws NotFound for a variable not added. `lr`:
  // the step's scheduled learning rate; a merged push carries the newest.
  void SendDense(const std::string& name, const Tensor& grad, std::optional<float> lr = std::nullopt);
  void SendSparse(const std::string& name, const SelectedRows& grad,
                  std::optional<float> lr = std::nullopt);
  // Copies the most recently received value of `name` into *out; pulls
  // synchronously when nothing has been received yet.
  void RecvDense(const std::string& name, Tensor* out);
  // Blocks until every gradient queued so far has been pushed, then pulls
  // every dense parameter once.
  void Flush();

  // Pushes made so far (one per variable per merged batch).
  int64_t pushes() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace flotilla::ps
