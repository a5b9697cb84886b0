#include "flotilla/ps/communicator.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/trace.h"

namespace flotilla::ps {

namespace {

// Sum (or mean) of same-shaped dense gradients.
Tensor MergeDense(std::vector<Tensor>& grads, bool average) {
  Tensor out = grads.front().Clone();
  float* o = out.mutable_data<float>();
  for (size_t k = 1; k < grads.size(); ++k) {
    const float* g = grads[k].data<float>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] += g[i];
  }
  if (average && grads.size() > 1) {
    const float scale = 1.0f / static_cast<float>(grads.size());
    for (int64_t i = 0; i < out.numel(); ++i) o[i] *= scale;
  }
  return out;
}

// Concatenates the batches' rows and sums rows that repeat.
SelectedRows MergeSparse(std::vector<SelectedRows>& grads, bool average) {
  std::vector<int64_t> rows;
  int64_t width = 0;
  for (const auto& g : grads) {
    rows.insert(rows.end(), g.rows().begin(), g.rows().end());
    if (!g.rows().empty()) width = g.row_width();
  }
  if (rows.empty()) return SelectedRows();
  Tensor values(DType::kFloat32, {static_cast<int64_t>(rows.size()), width});
  float* dst = values.mutable_data<float>();
  for (const auto& g : grads) {
    if (g.rows().empty()) continue;
    std::memcpy(dst, g.value().data<float>(), g.value().nbytes());
    dst += g.value().numel();
  }
  SelectedRows merged = SelectedRows(std::move(rows), std::move(values), 0).MergeRows();
  if (average && grads.size() > 1) {
    float* v = merged.mutable_value()->mutable_data<float>();
    for (int64_t i = 0; i < merged.value().numel(); ++i) v[i] /= static_cast<float>(grads.size());
  }
  return merged;
}

}  // namespace

class AsyncCommunicator::Impl {
 public:
  struct DenseSlot {
    Dims dims;
    int64_t row_width = 1;
    std::deque<Tensor> queue;
    Tensor latest;            // empty until the first pull
    std::optional<float> lr;  // of the newest queued gradient
  };
  struct SparseSlot {
    std::deque<SelectedRows> queue;
    std::optional<float> lr;  // of the newest queued gradient
  };
  struct SparsePush {
    std::string name;
    SelectedRows rows;
    std::optional<float> lr;
  };
  // Gradients taken off the queues for one push round.
  struct Batch {
    std::vector<DenseVar> dense;
    std::vector<SparsePush> sparse;
    int64_t grads = 0;
  };

  Impl(std::shared_ptr<PsClient> c, CommunicatorOptions o) : client(std::move(c)), options(o) {
    FLOTILLA_ENFORCE_GE(options.send_queue_size, 1, "communicator send_queue_size");
    FLOTILLA_ENFORCE_GE(options.max_merge_var_num, 1, "communicator max_merge_var_num");
  }

  bool AnyQueued() const;  // requires mu
  Batch TakeBatch();       // requires mu
  void SendLoop();
  void RecvLoop();
  void RecvAll();
  void Push(Batch& batch);
  void ThrowIfFailed();  // requires mu
  template <typename Slot, typename T>
  void Enqueue(Slot& slot, T grad, std::optional<float> lr, std::unique_lock<std::mutex>& lock);

  std::shared_ptr<PsClient> client;
  CommunicatorOptions options;
  std::map<std::string, DenseSlot> dense;    // keys fixed after Start()
  std::map<std::string, SparseSlot> sparse;  // keys fixed after Start()

  mutable std::mutex mu;
  std::condition_variable cv;  // any change of the fields below
  bool running = false, stopping = false;
  int in_flight = 0;
  int64_t pushes = 0;
  int64_t sent_since_recv = 0;
  std::exception_ptr error;
  std::thread send_thread, recv_thread;
};

bool AsyncCommunicator::Impl::AnyQueued() const {
  for (const auto& [n, s] : dense) if (!s.queue.empty()) return true;
  for (const auto& [n, s] : sparse) if (!s.queue.empty()) return true;
  return false;
}

AsyncCommunicator::Impl::Batch AsyncCommunicator::Impl::TakeBatch() {
  Batch batch;
  const size_t max = options.max_merge_var_num;
  for (auto& [name, slot] : dense) {
    if (slot.queue.empty()) continue;
    std::vector<Tensor> grads;
    while (!slot.queue.empty() && grads.size() < max) {
      grads.push_back(std::move(slot.queue.front()));
      slot.queue.pop_front();
    }
    batch.grads += grads.size();
    batch.dense.push_back({name, MergeDense(grads, options.merge_average), slot.row_width, slot.lr});
  }
  for (auto& [name, slot] : sparse) {
    if (slot.queue.empty()) continue;
    std::vector<SelectedRows> grads;
    while (!slot.queue.empty() && grads.size() < max) {
      grads.push_back(std::move(slot.queue.front()));
      slot.queue.pop_front();
    }
    batch.grads += grads.size();
    batch.sparse.push_back({name, MergeSparse(grads, options.merge_average), slot.lr});
  }
  return batch;
}

void AsyncCommunicator::Impl::Push(Batch& batch) {
  if (!batch.dense.empty()) client->PushDense(batch.dense);
  for (auto& push : batch.sparse) client->PushSparse(push.name, push.rows, push.lr);
}

void AsyncCommunicator::Impl::SendLoop() {
  trace::SetThreadName("communicator send");
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    cv.wait(lock, [&] { return stopping || AnyQueued(); });
    if (!AnyQueued()) break;  // stopping and drained
    Batch batch = TakeBatch();
    ++in_flight;
    cv.notify_all();  // queue space for blocked senders
    lock.unlock();
    try {
      trace::Span round(trace::Category::kQueue, FLOTILLA_TRACE_NAME("push round"));
      round.Arg("gradients", batch.grads);
      Push(batch);
      if (!options.independent_recv_thread) RecvAll();
    } catch (...) {
      std::lock_guard<std::mutex> relock(mu);
      if (!error) error = std::current_exception();
    }
    lock.lock();
    --in_flight;
    pushes += static_cast<int64_t>(batch.dense.size() + batch.sparse.size());
    sent_since_recv += batch.grads;
    cv.notify_all();
  }
}

void AsyncCommunicator::Impl::RecvLoop() {
  trace::SetThreadName("communicator recv");
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    cv.wait(lock, [&] { return stopping || sent_since_recv >= options.min_send_grad_num_before_recv; });
    if (stopping) break;
    sent_since_recv = 0;
    lock.unlock();
    try {
      RecvAll();
    } catch (...) {
      std::lock_guard<std::mutex> relock(mu);
      if (!error) error = std::current_exception();
    }
    lock.lock();
  }
}

void AsyncCommunicator::Impl::RecvAll() {
  std::vector<DenseVar> vars;
  for (const auto& [name, slot] : dense) {
    vars.push_back({name, Tensor(DType::kFloat32, slot.dims), slot.row_width});
  }
  if (vars.empty()) return;
  client->PullDense(vars);
  std::lock_guard<std::mutex> lock(mu);
  for (auto& var : vars) dense.at(var.name).latest = std::move(var.value);
}

void AsyncCommunicator::Impl::ThrowIfFailed() {
  if (error) std::rethrow_exception(error);
}

template <typename Slot, typename T>
void AsyncCommunicator::Impl::Enqueue(Slot& slot, T grad, std::optional<float> lr,
                                      std::unique_lock<std::mutex>& lock) {
  auto ready = [&] {
    return error || stopping || static_cast<int>(slot.queue.size()) < options.send_queue_size;
  };
  if (!ready()) {  // back-pressure: the training loop waits for the send thread
    trace::BlockedScope blocked;
    trace::Span waited(trace::Category::kQueue, FLOTILLA_TRACE_NAME("send queue full"));
    cv.wait(lock, ready);
  }
  ThrowIfFailed();
  FLOTILLA_ENFORCE(!stopping, "communicator: send after Stop()");
  slot.queue.push_back(std::move(grad));
  if (lr) slot.lr = lr;
  cv.notify_all();
}

// ---- AsyncCommunicator ----

AsyncCommunicator::AsyncCommunicator(std::shared_ptr<PsClient> client, CommunicatorOptions options)
    : impl_(std::make_unique<Impl>(std::move(client), options)) {}

AsyncCommunicator::~AsyncCommunicator() {
  try {
    Stop();
  } catch (const std::exception& e) {
    log::Warn("async communicator stopped with an error: {}", e.what());
  }
}

void AsyncCommunicator::AddDense(const std::string& name, Dims dims, int64_t row_width) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  FLOTILLA_ENFORCE(!impl_->running, "communicator: AddDense('", name, "') after Start()");
  impl_->dense[name] = Impl::DenseSlot{std::move(dims), row_width, {}, {}, {}};
}

void AsyncCommunicator::AddSparse(const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  FLOTILLA_ENFORCE(!impl_->running, "communicator: AddSparse('", name, "') after Start()");
  impl_->sparse[name];
}

void AsyncCommunicator::Start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->running) return;
  impl_->running = true;
  impl_->send_thread = std::thread([this] { impl_->SendLoop(); });
  if (impl_->options.independent_recv_thread) {
    impl_->recv_thread = std::thread([this] { impl_->RecvLoop(); });
  }
}

void AsyncCommunicator::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->running || impl_->stopping) return;
    impl_->stopping = true;
    impl_->cv.notify_all();
  }
  impl_->send_thread.join();
  if (impl_->recv_thread.joinable()) impl_->recv_thread.join();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->ThrowIfFailed();
}

void AsyncCommunicator::SendDense(const std::string& name, const Tensor& grad,
                                  std::optional<float> lr) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto it = impl_->dense.find(name);
  FLOTILLA_CHECK(it != impl_->dense.end(), NotFound, "communicator has no dense variable '", name, "'");
  FLOTILLA_ENFORCE_EQ(grad.numel(), Numel(it->second.dims), "gradient of '", name, "'");
  impl_->Enqueue(it->second, grad.Clone(), lr, lock);
}

void AsyncCommunicator::SendSparse(const std::string& name, const SelectedRows& grad,
                                   std::optional<float> lr) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto it = impl_->sparse.find(name);
  FLOTILLA_CHECK(it != impl_->sparse.end(), NotFound, "communicator has no sparse table '", name, "'");
  SelectedRows copy(grad.rows(), grad.value().Clone(), grad.height());
  impl_->Enqueue(it->second, std::move(copy), lr, lock);
}

void AsyncCommunicator::RecvDense(const std::string& name, Tensor* out) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->ThrowIfFailed();
    auto it = impl_->dense.find(name);
    FLOTILLA_CHECK(it != impl_->dense.end(), NotFound, "communicator has no dense variable '",
                   name, "'");
    if (it->second.latest.initialized()) {
      out->CopyFrom(it->second.latest);
      return;
    }
  }
  impl_->RecvAll();
  std::lock_guard<std::mutex> lock(impl_->mu);
  out->CopyFrom(impl_->dense.at(name).latest);
}

void AsyncCommunicator::Flush() {
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    FLOTILLA_ENFORCE(impl_->running, "communicator: Flush() before Start()");
    impl_->cv.wait(lock, [&] {
      return impl_->error || (!impl_->AnyQueued() && impl_->in_flight == 0);
    });
    impl_->ThrowIfFailed();
  }
  impl_->RecvAll();
}

int64_t AsyncCommunicator::pushes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->pushes;
}

}  // namespace flotilla::ps
