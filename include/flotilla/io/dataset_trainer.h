// Paddle's Executor.train_from_dataset / infer_from_dataset: Hogwild
// training over a Dataset's batches.
//
//   io::DatasetTrainOptions opt;
//   opt.threads = 4;
//   opt.fetch_list = {loss.name()};
//   opt.fetch_info = {"loss"};
//   opt.print_period = 100;
//   io::TrainFromDataset(main, dataset, &scope, opt);
//
// `threads` worker threads each run the program with an Executor of their
// own, so every worker has its own scope of temporaries (feeds, activations,
// gradients) over `scope`, where the parameters live and are shared: the
// workers' optimizer ops update them in place without locks (Hogwild). Each
// worker takes the next batch from the dataset's channel: an InMemoryDataset's
// batches in memory, in order, or a QueueDataset's batches as its reader
// threads parse them through the pipe command. A sequence slot is fed as a
// tensor whose level-1 LoD is the slot's MultiSlot offsets; a dense slot as a
// plain tensor of its shape (io/dataset_feed.h). With one thread the
// batches run in the dataset's order, exactly as Executor::Run fed them one
// by one.
//
// Worker 0 prints every print_period of its batches one line
//   "batch: 100, loss: 0.6931" (fetch_info[i] or the name, then the value;
// a tensor of several values as "[a, b, ...]").
//
// Blocks until every batch ran. The first error in a worker (a failing op,
// a malformed line, a dying pipe command) stops the others after their
// current batch and is rethrown here. Parameter-server programs work as
// with Executor::Run: their send/recv ops are safe on several threads
// (fleet serialises what one trainer must do once per step).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flotilla/core/place.h"
#include "flotilla/framework/executor.h"
#include "flotilla/io/dataset.h"

namespace flotilla::io {

struct DatasetTrainOptions {
  int threads = 0;  // 0: the dataset's thread_num()
  std::vector<std::string> fetch_list;
  std::vector<std::string> fetch_info;  // labels of fetch_list in prints; empty: the names
  int64_t print_period = 100;           // worker 0's batches between prints; < 1: never
  // Also prints, at the end, each worker's batches and the mean time of
  // every op type in worker 0 (Paddle's debug).
  bool debug = false;
  Place place = CPUPlace();
  // Where lines go (default: stdout). Called from worker 0's thread.
  std::function<void(const std::string&)> print;
  // Called from worker 0's thread every print_period batches with the
  // fetched values (fetch_list order) and worker 0's batch count.
  std::function<void(int64_t batch, const std::vector<Tensor>&)> on_fetch;
  // Called on a worker's thread with the feeds of the batch it runs next,
  // before it runs the current one (e.g. fleet::prefetch_sparse, whose
  // pulls then overlap the current step).
  std::function<void(const FeedMap& next)> on_next_feed;
};

struct DatasetTrainStats {
  int64_t batches = 0;
  int64_t instances = 0;
  double seconds = 0;
  std::vector<int64_t> batches_per_thread;
};

// Runs `program` on every batch of `dataset` (see above); `scope` null: the
// global scope. The dataset must not change while this runs. Throws
// InvalidArgument for a fetch_info not matching fetch_list or a dataset
// without slots; an InMemoryDataset with nothing loaded runs no batch.
DatasetTrainStats TrainFromDataset(const Program& program, const Dataset& dataset, Scope* scope,
                                   const DatasetTrainOptions& options);

// The same over the program without its training ops: program.Clone(for_test)
// (no backward, optimize or learning-rate ops) and without the trailing
// communication ops (role RPC) that publish a step's updates. Parameters
// are read, never written.
DatasetTrainStats InferFromDataset(const Program& program, const Dataset& dataset, Scope* scope,
                                   const DatasetTrainOptions& options);

}  // namespace flotilla::io
