#include "flotilla/io/dataset.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <random>
#include <set>

#include "flotilla/common/enforce.h"
#include "pipe_command.h"

namespace flotilla::io {

DatasetKind DatasetKindFromString(const std::string& name) {
  if (name == "InMemoryDataset") return DatasetKind::kInMemory;
  if (name == "QueueDataset") return DatasetKind::kQueue;
  FLOTILLA_THROW(InvalidArgument, "dataset '", name, "': expected InMemoryDataset or QueueDataset");
}

namespace {

const char* KindName(DatasetKind kind) { return kind == DatasetKind::kInMemory ? "InMemoryDataset" : "QueueDataset"; }

// Calls work(i) for every i < n on min(threads, n) threads; once one call
// throws, no new call starts and the first exception is rethrown after all
// threads stopped.
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& work) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&] {
    for (int64_t i; !failed && (i = next++) < n;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < std::min<int64_t>(threads, n); ++t) pool.emplace_back(run);
  run();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

SlotColumns Slice(const SlotColumns& records, int64_t begin, int64_t end) {
  std::vector<int64_t> order(static_cast<size_t>(end - begin));
  std::iota(order.begin(), order.end(), begin);
  return records.Gather(order);
}

}  // namespace

Dataset::Dataset(DatasetKind kind) : kind_(kind) {}

Dataset::~Dataset() {
  if (preload_.joinable()) preload_.join();
}

void Dataset::SetUseVar(std::vector<SlotSpec> slots) {
  MultiSlotParser check(slots);  // refuses no slots and duplicates
  slots_ = std::move(slots);
}

void Dataset::SetPipeCommand(std::string command) { pipe_command_ = std::move(command); }

void Dataset::SetFileList(std::vector<std::string> files) { files_ = std::move(files); }

void Dataset::SetBatchSize(int64_t batch_size) {
  FLOTILLA_ENFORCE_GE(batch_size, 1, "dataset batch size");
  batch_size_ = batch_size;
}

void Dataset::SetThreadNum(int threads) {
  FLOTILLA_ENFORCE_GE(threads, 1, "dataset thread number");
  threads_ = threads;
}

void Dataset::SetParserOptions(MultiSlotParserOptions options) { parser_options_ = options; }

void Dataset::CheckKind(DatasetKind wanted, const char* call) const {
  FLOTILLA_ENFORCE(kind_ == wanted, KindName(kind_), " does not support ", call, "; use ", KindName(wanted));
}

void Dataset::CheckNoPreload(const char* call) const {
  FLOTILLA_ENFORCE(!preload_.joinable(), call, " while preload_into_memory is running; call wait_preload_done first");
}

SlotColumns Dataset::ReadFiles() const {
  FLOTILLA_ENFORCE(!slots_.empty(), "the dataset has no slots; call set_use_var first");
  const MultiSlotParser parser(slots_, parser_options_);
  std::vector<SlotColumns> per_file(files_.size(), SlotColumns(slots_));
  ParallelFor(int64_t(files_.size()), threads_,
              [&](int64_t i) { ParseThroughPipe(parser, files_[i], pipe_command_, &per_file[i]); });
  SlotColumns all(slots_);
  for (const SlotColumns& f : per_file) all.Append(f);
  return all;
}

void Dataset::LoadIntoMemory() {
  CheckKind(DatasetKind::kInMemory, "load_into_memory");
  CheckNoPreload("load_into_memory");
  records_ = ReadFiles();
}

void Dataset::PreloadIntoMemory() {
  CheckKind(DatasetKind::kInMemory, "preload_into_memory");
  CheckNoPreload("preload_into_memory");
  preload_error_ = nullptr;
  preloaded_.reset();
  preload_ = std::thread([this] {
    try {
      preloaded_ = std::make_unique<SlotColumns>(ReadFiles());
    } catch (...) {
      preload_error_ = std::current_exception();
    }
  });
}

void Dataset::WaitPreloadDone() {
  FLOTILLA_ENFORCE(preload_.joinable(), "wait_preload_done without preload_into_memory");
  preload_.join();
  if (preload_error_) std::rethrow_exception(std::exchange(preload_error_, nullptr));
  records_ = std::move(*preloaded_);
  preloaded_.reset();
}

void Dataset::LocalShuffle(uint64_t seed) {
  CheckKind(DatasetKind::kInMemory, "local_shuffle");
  CheckNoPreload("local_shuffle");
  std::vector<int64_t> order(static_cast<size_t>(records_.records()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  records_ = records_.Gather(order);
}

void Dataset::ReleaseMemory() {
  CheckNoPreload("release_memory");
  records_ = SlotColumns();
}

int64_t Dataset::MemoryDataSize() const { return records_.records(); }

int64_t Dataset::ShuffleDataSize() const { return records_.records(); }

int64_t Dataset::BatchCount() const { return (records_.records() + batch_size_ - 1) / batch_size_; }

SlotColumns Dataset::Batch(int64_t index) const {
  FLOTILLA_ENFORCE(index >= 0 && index < BatchCount(), "batch ", index, " of ", BatchCount());
  const int64_t begin = index * batch_size_;
  return Slice(records_, begin, std::min(begin + batch_size_, records_.records()));
}

void Dataset::ForEachBatch(const std::function<void(const SlotColumns&)>& consume) const {
  if (kind_ == DatasetKind::kInMemory) {
    for (int64_t b = 0; b < BatchCount(); ++b) consume(Batch(b));
    return;
  }
  FLOTILLA_ENFORCE(!slots_.empty(), "the dataset has no slots; call set_use_var first");
  const MultiSlotParser parser(slots_, parser_options_);
  std::mutex consume_mutex;
  ParallelFor(int64_t(files_.size()), threads_, [&](int64_t i) {
    // Whole batches go out as soon as they are parsed; the rest waits for
    // the next chunk, or the end of the file.
    auto send = [&](SlotColumns* parsed, int64_t least) {
      int64_t begin = 0;
      for (; parsed->records() - begin >= least && parsed->records() > begin; begin += batch_size_) {
        SlotColumns batch = Slice(*parsed, begin, std::min(begin + batch_size_, parsed->records()));
        std::lock_guard<std::mutex> lock(consume_mutex);
        consume(batch);
      }
      if (begin > 0) *parsed = Slice(*parsed, std::min(begin, parsed->records()), parsed->records());
    };
    SlotColumns file(slots_);
    ParseThroughPipe(parser, files_[i], pipe_command_, &file, [&](SlotColumns* parsed) { send(parsed, batch_size_); });
    send(&file, 1);
  });
}

}  // namespace flotilla::io
