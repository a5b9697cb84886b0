// Readers: Paddle's reader creators and decorators, in C++.
//
// A Sample is one example, one tensor per field without the batch dimension
// (x [13] float32, y [1] float32). A Reader is a reader *creator*: calling it
// starts a fresh pass over the data and returns a generator; calling the
// generator yields the next sample, or nullopt at the end of the pass.
// Decorators wrap readers into readers, so passes stay independent:
//
//   auto train = Prefetch(Batch(Shuffle(uci_housing::Train(), 500, seed), 20), 4);
//   for (auto next = train(); auto batch = next();) exe.Run(main, feeder.Feed(*batch), ...);
//
// Generators are single-threaded: call one from one thread at a time.
// Samples may share tensors with the dataset; treat them as read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "flotilla/core/tensor.h"

namespace flotilla::io {

using Sample = std::vector<Tensor>;
using SampleGenerator = std::function<std::optional<Sample>()>;
using Reader = std::function<SampleGenerator()>;

using SampleBatch = std::vector<Sample>;
using BatchGenerator = std::function<std::optional<SampleBatch>()>;
using BatchReader = std::function<BatchGenerator()>;

// A reader over samples held in memory (shared, not copied, by each pass).
Reader FromSamples(std::shared_ptr<const std::vector<Sample>> samples);

// Groups consecutive samples into batches of `batch_size`; the last, shorter
// batch is yielded unless `drop_last`. Throws InvalidArgument when
// batch_size < 1.
BatchReader Batch(Reader reader, int64_t batch_size, bool drop_last = false);

// Paddle's buffered shuffle: fills a buffer of `buf_size` samples, yields it
// in random order, repeats. Pass k of the returned reader (its k-th call,
// from 0) shuffles with a generator seeded from (seed, first_pass + k): runs
// are reproducible, and a job resuming at epoch e passes first_pass = e to
// see the orders it would have seen. Throws InvalidArgument when buf_size < 1.
Reader Shuffle(Reader reader, int64_t buf_size, uint64_t seed, int64_t first_pass = 0);

// Reads batches ahead on a background thread into a queue of at most
// `capacity` batches. An exception thrown by the upstream reader is rethrown
// by the consumer's next call, after the batches read before it. Destroying
// the generator (its last copy) stops the thread and joins it; that waits
// for at most one upstream call in progress. Throws InvalidArgument when
// capacity < 1.
BatchReader Prefetch(BatchReader reader, int64_t capacity);

// How far a training loop got: the index of the current pass (0-based; -1
// before the first) and the batches handed to the consumer in that pass.
// A checkpoint stores `batches`; the resumed job wraps its reader in
// Skip(reader, batches) for its first pass.
struct ReaderPosition {
  int64_t pass = -1;
  int64_t batches = 0;
};

// Counts the batches the consumer receives into `*position`. Put it outermost
// (after Prefetch) so read-ahead is not counted. Read the position on the
// consuming thread.
BatchReader Track(BatchReader reader, std::shared_ptr<ReaderPosition> position);

// The first pass started from the returned reader drops its first `n`
// batches (or samples); later passes are whole. For resuming mid-epoch:
// Skip(Track(reader, position), n) counts the skipped batches too, so the
// position stays absolute. Throws InvalidArgument when n < 0.
BatchReader Skip(BatchReader reader, int64_t n);
Reader SkipSamples(Reader reader, int64_t n);

// Reads a whole pass into memory (tests, small datasets).
std::vector<Sample> ReadAll(const Reader& reader);
std::vector<SampleBatch> ReadAll(const BatchReader& reader);

}  // namespace flotilla::io
