// Paddle's Dataset API (InMemoryDataset, QueueDataset) in C++: a list of
// files, each read through a pipe command (`cat file | command`, on several
// threads) and parsed as MultiSlot text into one column per slot.
//
//   io::Dataset ds(io::DatasetKind::kInMemory);
//   ds.SetUseVar({{"words", io::SlotType::kInt64}, {"label", io::SlotType::kInt64}});
//   ds.SetPipeCommand("python3 reader.py");
//   ds.SetFileList({"part-0", "part-1"});
//   ds.SetThreadNum(2);
//   ds.LoadIntoMemory();   // throws on a malformed line or a failing command
//   ds.LocalShuffle(seed);
//   for (int64_t b = 0; b < ds.BatchCount(); ++b) Consume(ds.Batch(b));
//
// Errors: NotFound (a missing file), Corruption ("<file>:<line>: ..." for a
// malformed line; through a pipe command "<file> (via '<command>'):<line>"),
// Unavailable (the command's exit status or signal and its stderr tail),
// InvalidArgument (a setting out of range, or a call the kind does not
// support, e.g. LoadIntoMemory on a QueueDataset).
//
// Thread safety: one thread drives a Dataset; PreloadIntoMemory loads on
// background threads until WaitPreloadDone, and in between only
// WaitPreloadDone and the destructor (which waits) may be called.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "flotilla/io/multislot.h"

namespace flotilla::comm {
class Store;
}

namespace flotilla::io {

enum class DatasetKind { kInMemory, kQueue };

// "InMemoryDataset" / "QueueDataset"; throws InvalidArgument naming the
// known kinds on anything else.
DatasetKind DatasetKindFromString(const std::string& name);

class Dataset {
 public:
  explicit Dataset(DatasetKind kind);
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  DatasetKind kind() const { return kind_; }

  // Settings; they apply to the next load. Throw InvalidArgument when out of
  // range (batch size or threads < 1, no slots, a slot named twice).
  void SetUseVar(std::vector<SlotSpec> slots);
  void SetPipeCommand(std::string command);  // "" or "cat": the file as is
  void SetFileList(std::vector<std::string> files);
  void SetBatchSize(int64_t batch_size);
  void SetThreadNum(int threads);
  void SetParserOptions(MultiSlotParserOptions options);

  const std::vector<SlotSpec>& use_var() const { return slots_; }
  const std::string& pipe_command() const { return pipe_command_; }
  const std::vector<std::string>& file_list() const { return files_; }
  int64_t batch_size() const { return batch_size_; }
  int thread_num() const { return threads_; }

  // Reads every file (min(threads, files) at a time) and replaces the
  // records in memory, in file order. Blocks. On error the records in
  // memory are unchanged. InMemory only.
  void LoadIntoMemory();
  // LoadIntoMemory on a background thread; WaitPreloadDone joins it and
  // rethrows its error. InMemory only.
  void PreloadIntoMemory();
  void WaitPreloadDone();

  // Permutes the records in memory with a generator seeded by `seed`.
  // InMemory only.
  void LocalShuffle(uint64_t seed);
  // Paddle's global_shuffle: the records in memory of `world` trainers
  // (this one is `rank`) exchanged through `store`, each record sent to a
  // trainer drawn by a generator seeded by `seed` and `rank`, then
  // shuffled locally. Every trainer must call it with the same `round`
  // (a key prefix unique to this exchange). Blocks until every other
  // trainer's records for this one arrived (the store's timeout applies).
  // Keys this trainer read are deleted. InMemory only; world 1 is a
  // LocalShuffle.
  void GlobalShuffle(comm::Store& store, int rank, int world, uint64_t seed, const std::string& round);
  // Drops the records in memory.
  void ReleaseMemory();

  // Records in memory; and records after the last shuffle (without a global
  // shuffle, the same).
  int64_t MemoryDataSize() const;
  int64_t ShuffleDataSize() const;
  const SlotColumns& records() const { return records_; }

  // Batches of batch_size() consecutive records in memory, the last one
  // shorter. Batch throws InvalidArgument when `index` is out of range.
  int64_t BatchCount() const;
  SlotColumns Batch(int64_t index) const;

  // QueueDataset's pass: reads the files on thread_num() threads and calls
  // `consume` (serialised, from those threads) with each batch of up to
  // batch_size() records of one file, without keeping them: a batch goes
  // out as soon as its records are parsed (only a file's last batch is
  // shorter), so a malformed line later in a file fails the pass after the
  // batches before it were consumed. Blocks; rethrows the first error once
  // every thread stopped. Also works on an InMemory dataset, over its memory.
  void ForEachBatch(const std::function<void(const SlotColumns&)>& consume) const;

 private:
  SlotColumns ReadFiles() const;
  void CheckKind(DatasetKind wanted, const char* call) const;
  void CheckNoPreload(const char* call) const;

  DatasetKind kind_;
  std::vector<SlotSpec> slots_;
  std::string pipe_command_ = "cat";
  std::vector<std::string> files_;
  int64_t batch_size_ = 1;
  int threads_ = 1;
  MultiSlotParserOptions parser_options_;

  SlotColumns records_;
  std::thread preload_;
  std::exception_ptr preload_error_;
  std::unique_ptr<SlotColumns> preloaded_;
};

}  // namespace flotilla::io
