#include "flotilla/comm/process_group.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "comm/collective_trace.h"
#include "comm/stall_monitor.h"
#include "flotilla/common/enforce.h"
#include "flotilla/trace/activity.h"

namespace flotilla::comm {

// One communicator: a backend, its FIFO of async work and the thread that
// drains it (started on first use). `busy` marks the backend as in use by the
// worker or by a blocking caller, so the two never overlap.
struct ProcessGroup::Communicator {
  struct Task {
    std::function<void(Backend&)> fn;
    std::shared_ptr<Work> work;
    std::unique_ptr<CollectiveTrace> trace;
  };

  std::unique_ptr<Backend> backend;
  OpProgress progress;
  std::string thread_name;  // its row in the timeline
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;  // guarded by mu
  uint64_t issued = 0;     // guarded by mu: collectives issued, the last one's seq
  bool busy = false;       // guarded by mu
  bool stop = false;       // guarded by mu
  std::thread worker;

  void Loop() {
    trace::SetThreadName(thread_name);
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || (!queue.empty() && !busy); });
      if (queue.empty()) return;  // stopping, nothing left
      Task task = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      std::exception_ptr error;
      progress.Start();
      task.trace->Start();
      try {
        task.fn(*backend);
      } catch (...) {
        error = std::current_exception();
      }
      task.trace->End(error == nullptr);
      progress.Finish();
      task.work->Finish(error);
      lock.lock();
      busy = false;
      cv.notify_all();
    }
  }
};

ProcessGroup::ProcessGroup(int rank, int size, ProcessGroupOptions options,
                           std::vector<std::unique_ptr<Backend>> backends,
                           std::shared_ptr<Store> store)
    : rank_(rank), size_(size), options_(std::move(options)) {
  FLOTILLA_ENFORCE(!backends.empty(), "ProcessGroup needs at least one backend");
  trace::InitProcess();
  backend_ = backends[0]->name();
  site_ = std::make_unique<CollectiveSite>(CollectiveSite{
      trace::Intern(options_.name), trace::Intern(backend_), rank_, size_});
  std::vector<OpProgress*> progress;
  for (auto& b : backends) {
    comms_.push_back(std::make_unique<Communicator>());
    comms_.back()->thread_name = StrCat("comm ", comms_.size() - 1, " (", options_.name, ")");
    comms_.back()->backend = std::move(b);
    progress.push_back(&comms_.back()->progress);
  }
  // shm names late ranks itself, precisely and without the store.
  if (store && size > 1 && backend_ != "shm") {
    monitor_ = std::make_unique<StallMonitor>(std::move(store), rank, size,
                                              options_.stall_warning_after, progress);
  }
}

ProcessGroup::~ProcessGroup() {
  monitor_.reset();
  for (auto& c : comms_) {
    {
      std::lock_guard<std::mutex> lock(c->mu);
      c->stop = true;
    }
    c->cv.notify_all();
    if (c->worker.joinable()) c->worker.join();
  }
}

ProcessGroupStats ProcessGroup::stats() const {
  return {allreduce_calls_.load(), broadcast_calls_.load(), allreduce_bytes_.load()};
}

ProcessGroup::Communicator& ProcessGroup::Comm(int comm) {
  FLOTILLA_ENFORCE(comm >= 0 && comm < comm_num(), "communicator ", comm, " does not exist (",
                   comm_num(), " configured)");
  return *comms_[comm];
}


std::shared_ptr<Work> ProcessGroup::Enqueue(int comm, std::function<void(Backend&)> fn) {
  return EnqueueOp(comm, {FLOTILLA_TRACE_NAME("custom"), 0}, std::move(fn));
}

std::shared_ptr<Work> ProcessGroup::EnqueueOp(int comm, CollectiveOp op,
                                              std::function<void(Backend&)> fn) {
  Communicator& c = Comm(comm);
  std::shared_ptr<Work> work;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.worker.joinable()) c.worker = std::thread([&c] { c.Loop(); });
    auto traced = std::make_unique<CollectiveTrace>(*site_, comm, ++c.issued, op);
    work = std::make_shared<Work>(traced->seq(), traced->bucket());
    c.queue.push_back({std::move(fn), work, std::move(traced)});
  }
  c.cv.notify_all();
  return work;
}

// A template rather than std::function: no allocation on the latency path.
template <typename Fn>
void ProcessGroup::RunBlocking(int comm, CollectiveOp op, const Fn& fn) {
  Communicator& c = Comm(comm);
  trace::BlockedScope blocked;
  std::optional<CollectiveTrace> traced;
  {
    std::unique_lock<std::mutex> lock(c.mu);
    if (!c.queue.empty() || c.busy) c.cv.wait(lock, [&] { return c.queue.empty() && !c.busy; });
    c.busy = true;
    traced.emplace(*site_, comm, ++c.issued, op);
  }
  auto release = [&] {
    std::lock_guard<std::mutex> lock(c.mu);
    c.busy = false;
    if (c.worker.joinable()) c.cv.notify_all();
  };
  c.progress.Start();
  traced->Start();
  try {
    fn(*c.backend);
  } catch (...) {
    traced->End(false);
    c.progress.Finish();
    release();
    throw;
  }
  traced->End(true);
  c.progress.Finish();
  release();
}

// ---- raw buffers ----

namespace {
int64_t BytesOf(size_t count, DType dtype) { return static_cast<int64_t>(count * SizeOf(dtype)); }
}  // namespace

void ProcessGroup::allreduce(void* data, size_t count, DType dtype, ReduceOp op, int comm) {
  allreduce_calls_++;
  allreduce_bytes_ += int64_t(count * SizeOf(dtype));
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("allreduce"), BytesOf(count, dtype)},
              [&](Backend& b) { b.allreduce(data, count, dtype, op); });
}

void ProcessGroup::broadcast(void* data, size_t count, DType dtype, int root, int comm) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "broadcast root ", root, " outside group of ", size_);
  broadcast_calls_++;
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("broadcast"), BytesOf(count, dtype)},
              [&](Backend& b) { b.broadcast(data, count, dtype, root); });
}

void ProcessGroup::allgather(const void* in, void* out, size_t count, DType dtype, int comm) {
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("allgather"), BytesOf(count, dtype)},
              [&](Backend& b) { b.allgather(in, out, count, dtype); });
}

void ProcessGroup::reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                                  ReduceOp op, int comm) {
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("reduce_scatter"), BytesOf(count, dtype) * size_},
              [&](Backend& b) { b.reduce_scatter(in, out, count, dtype, op); });
}

void ProcessGroup::reduce(void* data, size_t count, DType dtype, ReduceOp op, int root, int comm) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "reduce root ", root, " outside group of ", size_);
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("reduce"), BytesOf(count, dtype)},
              [&](Backend& b) { b.reduce(data, count, dtype, op, root); });
}

void ProcessGroup::send(const void* data, size_t bytes, int peer, uint32_t tag, int comm) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "rank ", rank_,
                   " cannot send to peer ", peer, " in a group of ", size_);
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("send"), int64_t(bytes)},
              [&](Backend& b) { b.send(data, bytes, peer, tag); });
}

void ProcessGroup::recv(void* data, size_t bytes, int peer, uint32_t tag, int comm) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "rank ", rank_,
                   " cannot receive from peer ", peer, " in a group of ", size_);
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("recv"), int64_t(bytes)},
              [&](Backend& b) { b.recv(data, bytes, peer, tag); });
}

void ProcessGroup::barrier(int comm) {
  RunBlocking(comm, {FLOTILLA_TRACE_NAME("barrier"), 0},
              [&](Backend& b) { b.barrier(); });
}

// ---- tensors ----

namespace {
// Empty tensors need no memory: collectives on them move nothing.
void* DataOf(Tensor& t, const char* what) {
  if (t.numel() == 0) return nullptr;
  FLOTILLA_ENFORCE(t.initialized(), what, ": tensor is not initialized");
  return t.raw_data();
}
const void* DataOf(const Tensor& t, const char* what) { return DataOf(const_cast<Tensor&>(t), what); }
}  // namespace

void ProcessGroup::allreduce(Tensor& t, ReduceOp op, int comm) {
  allreduce(DataOf(t, "allreduce"), t.numel(), t.dtype(), op, comm);
}

void ProcessGroup::broadcast(Tensor& t, int root, int comm) {
  broadcast(DataOf(t, "broadcast"), t.numel(), t.dtype(), root, comm);
}

void ProcessGroup::allgather(const Tensor& in, Tensor& out, int comm) {
  const void* i = DataOf(in, "allgather");
  out.Resize({int64_t(size_) * in.numel()});
  void* o = out.raw_mutable_data(in.dtype());
  allgather(i, o, in.numel(), in.dtype(), comm);
}

void ProcessGroup::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op, int comm) {
  const void* i = DataOf(in, "reduce_scatter");
  FLOTILLA_ENFORCE_EQ(in.numel() % size_, 0, "reduce_scatter: input numel must divide by group size");
  out.Resize({in.numel() / size_});
  void* o = out.raw_mutable_data(in.dtype());
  reduce_scatter(i, o, in.numel() / size_, in.dtype(), op, comm);
}

void ProcessGroup::reduce(Tensor& t, ReduceOp op, int root, int comm) {
  reduce(DataOf(t, "reduce"), t.numel(), t.dtype(), op, root, comm);
}

void ProcessGroup::send(const Tensor& t, int peer, uint32_t tag, int comm) {
  send(DataOf(t, "send"), t.nbytes(), peer, tag, comm);
}

void ProcessGroup::recv(Tensor& t, int peer, uint32_t tag, int comm) {
  recv(DataOf(t, "recv"), t.nbytes(), peer, tag, comm);
}

// ---- async ----

std::shared_ptr<Work> ProcessGroup::allreduceAsync(Tensor t, ReduceOp op, int comm) {
  void* data = DataOf(t, "allreduceAsync");
  allreduce_calls_++;
  allreduce_bytes_ += int64_t(t.nbytes());
  return EnqueueOp(comm, {FLOTILLA_TRACE_NAME("allreduce"), int64_t(t.nbytes())},
                   [t, data, op](Backend& b) { b.allreduce(data, t.numel(), t.dtype(), op); });
}

std::shared_ptr<Work> ProcessGroup::broadcastAsync(Tensor t, int root, int comm) {
  void* data = DataOf(t, "broadcastAsync");
  broadcast_calls_++;
  return EnqueueOp(comm, {FLOTILLA_TRACE_NAME("broadcast"), int64_t(t.nbytes())},
                   [t, data, root](Backend& b) { b.broadcast(data, t.numel(), t.dtype(), root); });
}

std::shared_ptr<Work> ProcessGroup::allreduceAsync(void* data, size_t count, DType dtype,
                                                   ReduceOp op, int comm) {
  allreduce_calls_++;
  allreduce_bytes_ += int64_t(count * SizeOf(dtype));
  return EnqueueOp(comm, {FLOTILLA_TRACE_NAME("allreduce"), BytesOf(count, dtype)},
                   [=](Backend& b) { b.allreduce(data, count, dtype, op); });
}

std::shared_ptr<Work> ProcessGroup::barrierAsync(int comm) {
  return EnqueueOp(comm, {FLOTILLA_TRACE_NAME("barrier"), 0}, [](Backend& b) { b.barrier(); });
}

}  // namespace flotilla::comm
