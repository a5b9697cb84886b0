#include "flotilla/io/dataset_trainer.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/io/dataset_feed.h"

namespace flotilla::io {

namespace {

// Where the workers take their batches from. Thread-safe.
class BatchChannel {
 public:
  virtual ~BatchChannel() = default;
  // The next batch; nullopt once every batch was taken or Close() was called.
  virtual std::optional<SlotColumns> Next() = 0;
  // Stops handing out batches (a worker failed).
  virtual void Close() = 0;
};

// An InMemoryDataset's batches, in order.
class MemoryChannel : public BatchChannel {
 public:
  explicit MemoryChannel(const Dataset& ds) : ds_(ds), count_(ds.BatchCount()) {}
  std::optional<SlotColumns> Next() override {
    const int64_t i = next_++;
    if (i >= count_) return std::nullopt;
    return ds_.Batch(i);
  }
  void Close() override { next_ = count_; }

 private:
  const Dataset& ds_;
  const int64_t count_;
  std::atomic<int64_t> next_{0};
};

// A QueueDataset's batches: its reader threads (Dataset::ForEachBatch, on a
// thread of its own here) fill a bounded queue the workers drain.
class StreamChannel : public BatchChannel {
 public:
  StreamChannel(const Dataset& ds, size_t capacity) : capacity_(capacity) {
    reader_ = std::thread([this, &ds] { Read(ds); });
  }
  ~StreamChannel() override {
    Close();
    reader_.join();
  }
  std::optional<SlotColumns> Next() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !queue_.empty() || done_ || closed_; });
    if (error_) std::rethrow_exception(error_);
    if (queue_.empty() || closed_) return std::nullopt;
    SlotColumns b = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return b;
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  struct Closed {};

  void Read(const Dataset& ds) {
    std::exception_ptr error;
    try {
      ds.ForEachBatch([this](const SlotColumns& batch) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return queue_.size() < capacity_ || closed_; });
        if (closed_) throw Closed{};
        queue_.push_back(batch);
        cv_.notify_all();
      });
    } catch (const Closed&) {
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = error;
    cv_.notify_all();
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SlotColumns> queue_;  // guarded by mu_
  bool done_ = false;              // guarded by mu_
  bool closed_ = false;            // guarded by mu_
  std::exception_ptr error_;       // guarded by mu_
  std::thread reader_;
};

std::unique_ptr<BatchChannel> OpenChannel(const Dataset& ds, int threads) {
  if (ds.kind() == DatasetKind::kInMemory) return std::make_unique<MemoryChannel>(ds);
  return std::make_unique<StreamChannel>(ds, static_cast<size_t>(2 * threads + 2));
}

std::string ValueString(const Tensor& t) {
  std::ostringstream out;
  const int64_t n = t.numel();
  auto at = [&](int64_t i) -> double {
    switch (t.dtype()) {
      case DType::kFloat32: return t.data<float>()[i];
      case DType::kFloat64: return t.data<double>()[i];
      case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
      case DType::kInt32: return t.data<int32_t>()[i];
      default: return 0;
    }
  };
  if (n == 1) {
    out << at(0);
    return out.str();
  }
  out << "[";
  for (int64_t i = 0; i < n; ++i) out << (i ? ", " : "") << at(i);
  out << "]";
  return out.str();
}

// "batch: 100, loss: 0.6931, auc: 0.71".
std::string FetchLine(int64_t batch, const std::vector<std::string>& labels, const std::vector<Tensor>& values) {
  std::ostringstream line;
  line << "batch: " << batch;
  for (size_t i = 0; i < values.size(); ++i) line << ", " << labels[i] << ": " << ValueString(values[i]);
  return line.str();
}

// Mean time per op type of one worker (debug).
struct OpTimes {
  std::map<std::string, std::pair<int64_t, int64_t>> by_type;  // type → (ns, runs)
  void Add(const OpDesc& op, int64_t start, int64_t end) {
    auto& [ns, runs] = by_type[op.type];
    ns += end - start;
    ++runs;
  }
};

class Trainer {
 public:
  Trainer(const Program& program, const Dataset& ds, Scope* scope, const DatasetTrainOptions& opt)
      : program_(program), ds_(ds), scope_(scope), opt_(opt) {
    threads_ = opt.threads > 0 ? opt.threads : ds.thread_num();
    labels_ = opt.fetch_info.empty() ? opt.fetch_list : opt.fetch_info;
    FLOTILLA_ENFORCE(labels_.size() == opt.fetch_list.size(), "train_from_dataset: ", opt.fetch_info.size(),
                     " fetch_info label(s) for ", opt.fetch_list.size(), " fetch_list variable(s)");
    FLOTILLA_ENFORCE(!ds.use_var().empty(), "train_from_dataset: the dataset has no slots; call set_use_var first");
    print_ = opt.print ? opt.print : [](const std::string& line) { std::cout << line << std::endl; };
  }

  DatasetTrainStats Run() {
    const auto start = std::chrono::steady_clock::now();
    channel_ = OpenChannel(ds_, threads_);
    stats_.batches_per_thread.assign(static_cast<size_t>(threads_), 0);
    std::vector<std::thread> pool;
    for (int t = 1; t < threads_; ++t) pool.emplace_back([this, t] { Guarded(t); });
    Guarded(0);
    for (std::thread& t : pool) t.join();
    channel_.reset();  // joins a queue's reader
    if (error_) std::rethrow_exception(error_);
    for (int64_t b : stats_.batches_per_thread) stats_.batches += b;
    stats_.instances = instances_;
    stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (opt_.debug) PrintDebug();
    return stats_;
  }

 private:
  void Guarded(int t) {
    try {
      Work(t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      channel_->Close();
    }
  }

  void Work(int t) {
    Executor exe(opt_.place);
    if (opt_.debug && t == 0) {
      exe.set_op_observer([this](const OpDesc& op, int64_t s, int64_t e) { op_times_.Add(op, s, e); });
    }
    // Worker 0 fetches only when it prints.
    const std::vector<std::string> none;
    int64_t& done = stats_.batches_per_thread[static_cast<size_t>(t)];
    auto now = [] { return std::chrono::steady_clock::now(); };
    auto last = now();
    auto take = [&]() -> std::optional<SlotFeeds> {
      std::optional<SlotColumns> b = channel_->Next();
      if (!b) return std::nullopt;
      instances_ += b->records();
      return ToFeeds(*b);
    };
    std::optional<SlotFeeds> feeds = take();
    while (feeds) {
      std::optional<SlotFeeds> next = opt_.on_next_feed ? take() : std::nullopt;
      if (next) opt_.on_next_feed(next->tensors);
      const auto fed = now();
      const bool report = t == 0 && opt_.print_period > 0 && (done + 1) % opt_.print_period == 0;
      std::vector<Tensor> out = exe.Run(program_, feeds->tensors, report ? opt_.fetch_list : none, scope_);
      if (t == 0) {
        const auto ran = now();
        feed_seconds_ += std::chrono::duration<double>(fed - last).count();
        run_seconds_ += std::chrono::duration<double>(ran - fed).count();
        last = ran;
      }
      feeds = opt_.on_next_feed ? std::move(next) : take();
      ++done;
      if (report && !out.empty()) {
        print_(FetchLine(done, labels_, out));
        if (opt_.on_fetch) opt_.on_fetch(done, out);
      }
    }
  }

  void PrintDebug() {
    std::ostringstream line;
    line << "train_from_dataset: " << stats_.batches << " batches, " << stats_.instances << " instances in "
         << stats_.seconds << " s; batches per thread:";
    for (int64_t b : stats_.batches_per_thread) line << " " << b;
    line << "; thread 0 waited " << feed_seconds_ << " s for batches (reading, parsing, tensors) and ran the "
         << "program " << run_seconds_ << " s";
    print_(line.str());
    for (const auto& [type, t] : op_times_.by_type) {
      std::ostringstream op;
      op << "  op " << type << ": " << static_cast<double>(t.first) / 1e6 / static_cast<double>(t.second)
         << " ms mean over " << t.second << " runs (thread 0)";
      print_(op.str());
    }
  }

  const Program& program_;
  const Dataset& ds_;
  Scope* scope_;
  const DatasetTrainOptions& opt_;
  int threads_ = 1;
  std::vector<std::string> labels_;
  std::function<void(const std::string&)> print_;
  std::unique_ptr<BatchChannel> channel_;
  std::atomic<int64_t> instances_{0};
  DatasetTrainStats stats_;
  OpTimes op_times_;
  double feed_seconds_ = 0, run_seconds_ = 0;  // worker 0's
  std::mutex mu_;
  std::exception_ptr error_;  // guarded by mu_
};

// program.Clone(for_test) without its trailing RPC-role ops.
Program InferenceProgram(const Program& program) {
  Program test = program.Clone(/*for_test=*/true);
  Block& b = test.global_block();
  size_t end = b.op_size();
  while (end > 0 && (b.op(end - 1).Role() & kOpRoleRPC)) --end;
  if (end < b.op_size()) {
    b.RemoveOps(end, b.op_size());
    test.BumpVersion();
  }
  return test;
}

}  // namespace

DatasetTrainStats TrainFromDataset(const Program& program, const Dataset& dataset, Scope* scope,
                                   const DatasetTrainOptions& options) {
  Trainer trainer(program, dataset, scope != nullptr ? scope : &global_scope(), options);
  return trainer.Run();
}

DatasetTrainStats InferFromDataset(const Program& program, const Dataset& dataset, Scope* scope,
                                   const DatasetTrainOptions& options) {
  const Program test = InferenceProgram(program);
  return TrainFromDataset(test, dataset, scope, options);
}

}  // namespace flotilla::io
