// Reader positions for checkpoint resume: counting and skipping batches.
#include <atomic>

#include "flotilla/common/enforce.h"
#include "flotilla/io/reader.h"

namespace flotilla::io {
namespace {

// Wraps a reader creator so that only the first pass it starts drops `n` items.
template <typename Item>
std::function<std::function<std::optional<Item>()>()> SkipFirstPass(
    std::function<std::function<std::optional<Item>()>()> reader, int64_t n) {
  FLOTILLA_ENFORCE_GE(n, 0, "Skip: the number of items to skip must not be negative");
  auto first = std::make_shared<std::atomic<bool>>(true);
  return [reader = std::move(reader), n, first]() {
    auto next = reader();
    if (first->exchange(false)) {
      for (int64_t i = 0; i < n && next(); ++i) {
      }
    }
    return next;
  };
}

}  // namespace

BatchReader Track(BatchReader reader, std::shared_ptr<ReaderPosition> position) {
  FLOTILLA_ENFORCE(position != nullptr, "Track: position must not be null");
  return [reader = std::move(reader), position]() -> BatchGenerator {
    BatchGenerator next = reader();
    ++position->pass;
    position->batches = 0;
    return [next = std::move(next), position]() -> std::optional<SampleBatch> {
      std::optional<SampleBatch> batch = next();
      if (batch) ++position->batches;
      return batch;
    };
  };
}

BatchReader Skip(BatchReader reader, int64_t n) {
  return SkipFirstPass<SampleBatch>(std::move(reader), n);
}

Reader SkipSamples(Reader reader, int64_t n) { return SkipFirstPass<Sample>(std::move(reader), n); }

}  // namespace flotilla::io
