// The simple decorators: in-memory readers, batching, whole-pass reads.
#include "flotilla/io/reader.h"

#include "flotilla/common/enforce.h"

namespace flotilla::io {

Reader FromSamples(std::shared_ptr<const std::vector<Sample>> samples) {
  return [samples]() -> SampleGenerator {
    size_t next = 0;
    return [samples, next]() mutable -> std::optional<Sample> {
      if (next >= samples->size()) return std::nullopt;
      return (*samples)[next++];
    };
  };
}

BatchReader Batch(Reader reader, int64_t batch_size, bool drop_last) {
  FLOTILLA_ENFORCE_GE(batch_size, 1, "Batch: batch_size must be positive");
  return [reader = std::move(reader), batch_size, drop_last]() -> BatchGenerator {
    return [samples = reader(), batch_size, drop_last]() -> std::optional<SampleBatch> {
      SampleBatch batch;
      batch.reserve(static_cast<size_t>(batch_size));
      while (static_cast<int64_t>(batch.size()) < batch_size) {
        std::optional<Sample> s = samples();
        if (!s) break;
        batch.push_back(std::move(*s));
      }
      bool full = static_cast<int64_t>(batch.size()) == batch_size;
      if (batch.empty() || (!full && drop_last)) return std::nullopt;
      return batch;
    };
  };
}

namespace {

template <typename Item, typename Creator>
std::vector<Item> Drain(const Creator& reader) {
  std::vector<Item> out;
  auto next = reader();
  while (auto item = next()) out.push_back(std::move(*item));
  return out;
}

}  // namespace

std::vector<Sample> ReadAll(const Reader& reader) { return Drain<Sample>(reader); }

std::vector<SampleBatch> ReadAll(const BatchReader& reader) {
  return Drain<SampleBatch>(reader);
}

}  // namespace flotilla::io
