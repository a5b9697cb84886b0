#include "flotilla/comm/process_group.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "comm/stall_monitor.h"
#include "flotilla/common/enforce.h"

namespace flotilla::comm {

// One communicator: a backend, its FIFO of async work and the thread that
// drains it (started on first use). `busy` marks the backend as in use by the
// worker or by a blocking caller, so the two never overlap.
struct ProcessGroup::Communicator {
  using Task = std::pair<std::function<void(Backend&)>, std::shared_ptr<Work>>;

  std::unique_ptr<Backend> backend;
  OpProgress progress;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;  // guarded by mu
  bool busy = false;       // guarded by mu
  bool stop = false;       // guarded by mu
  std::thread worker;

  void Loop() {
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
      try {
        task.first(*backend);
      } catch (...) {
        error = std::current_exception();
      }
      progress.Finish();
      task.second->Finish(error);
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
  backend_ = backends[0]->name();
  std::vector<OpProgress*> progress;
  for (auto& b : backends) {
    comms_.push_back(std::make_unique<Communicator>());
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
  Communicator& c = Comm(comm);
  auto work = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.worker.joinable()) c.worker = std::thread([&c] { c.Loop(); });
    c.queue.emplace_back(std::move(fn), work);
  }
  c.cv.notify_all();
  return work;
}

// A template rather than std::function: no allocation on the latency path.
template <typename Fn>
void ProcessGroup::RunBlocking(int comm, const Fn& fn) {
  Communicator& c = Comm(comm);
  {
    std::unique_lock<std::mutex> lock(c.mu);
    if (!c.queue.empty() || c.busy) c.cv.wait(lock, [&] { return c.queue.empty() && !c.busy; });
    c.busy = true;
  }
  auto release = [&] {
    std::lock_guard<std::mutex> lock(c.mu);
    c.busy = false;
    if (c.worker.joinable()) c.cv.notify_all();
  };
  c.progress.Start();
  try {
    fn(*c.backend);
  } catch (...) {
    c.progress.Finish();
    release();
    throw;
  }
  c.progress.Finish();
  release();
}

// ---- raw buffers ----

void ProcessGroup::allreduce(void* data, size_t count, DType dtype, ReduceOp op, int comm) {
  allreduce_calls_++;
  allreduce_bytes_ += int64_t(count * SizeOf(dtype));
  RunBlocking(comm, [&](Backend& b) { b.allreduce(data, count, dtype, op); });
}

void ProcessGroup::broadcast(void* data, size_t count, DType dtype, int root, int comm) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "broadcast root ", root, " outside group of ", size_);
  broadcast_calls_++;
  RunBlocking(comm, [&](Backend& b) { b.broadcast(data, count, dtype, root); });
}

void ProcessGroup::allgather(const void* in, void* out, size_t count, DType dtype, int comm) {
  RunBlocking(comm, [&](Backend& b) { b.allgather(in, out, count, dtype); });
}

void ProcessGroup::reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                                  ReduceOp op, int comm) {
  RunBlocking(comm, [&](Backend& b) { b.reduce_scatter(in, out, count, dtype, op); });
}

void ProcessGroup::reduce(void* data, size_t count, DType dtype, ReduceOp op, int root, int comm) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "reduce root ", root, " outside group of ", size_);
  RunBlocking(comm, [&](Backend& b) { b.reduce(data, count, dtype, op, root); });
}

void ProcessGroup::send(const void* data, size_t bytes, int peer, uint32_t tag, int comm) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "rank ", rank_,
                   " cannot send to peer ", peer, " in a group of ", size_);
  RunBlocking(comm, [&](Backend& b) { b.send(data, bytes, peer, tag); });
}

void ProcessGroup::recv(void* data, size_t bytes, int peer, uint32_t tag, int comm) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "rank ", rank_,
                   " cannot receive from peer ", peer, " in a group of ", size_);
  RunBlocking(comm, [&](Backend& b) { b.recv(data, bytes, peer, tag); });
}

void ProcessGroup::barrier(int comm) {
  RunBlocking(comm, [&](Backend& b) { b.barrier(); });
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
  return Enqueue(comm, [t, data, op](Backend& b) { b.allreduce(data, t.numel(), t.dtype(), op); });
}

std::shared_ptr<Work> ProcessGroup::broadcastAsync(Tensor t, int root, int comm) {
  void* data = DataOf(t, "broadcastAsync");
  broadcast_calls_++;
  return Enqueue(comm, [t, data, root](Backend& b) { b.broadcast(data, t.numel(), t.dtype(), root); });
}

std::shared_ptr<Work> ProcessGroup::allreduceAsync(void* data, size_t count, DType dtype,
                                                   ReduceOp op, int comm) {
  allreduce_calls_++;
  allreduce_bytes_ += int64_t(count * SizeOf(dtype));
  return Enqueue(comm, [=](Backend& b) { b.allreduce(data, count, dtype, op); });
}

std::shared_ptr<Work> ProcessGroup::barrierAsync(int comm) {
  return Enqueue(comm, [](Backend& b) { b.barrier(); });
}

}  // namespace flotilla::comm
