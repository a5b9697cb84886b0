// Paddle's buffered shuffle (paddle.reader.shuffle).
#include <algorithm>
#include <atomic>
#include <random>

#include "flotilla/common/enforce.h"
#include "flotilla/io/reader.h"

namespace flotilla::io {
namespace {

// One pass: refills the buffer from upstream whenever it runs dry.
class ShufflePass {
 public:
  ShufflePass(SampleGenerator upstream, size_t buf_size, uint64_t seed)
      : upstream_(std::move(upstream)), buf_size_(buf_size), rng_(seed) {}

  std::optional<Sample> Next() {
    if (pos_ == buffer_.size()) Refill();
    if (pos_ == buffer_.size()) return std::nullopt;
    return std::move(buffer_[pos_++]);
  }

 private:
  void Refill() {
    buffer_.clear();
    pos_ = 0;
    while (buffer_.size() < buf_size_) {
      std::optional<Sample> s = upstream_();
      if (!s) break;
      buffer_.push_back(std::move(*s));
    }
    std::shuffle(buffer_.begin(), buffer_.end(), rng_);
  }

  SampleGenerator upstream_;
  size_t buf_size_;
  std::mt19937_64 rng_;
  std::vector<Sample> buffer_;
  size_t pos_ = 0;
};

// splitmix64 of (seed, pass): distinct, well-mixed seeds for nearby inputs.
uint64_t PassSeed(uint64_t seed, int64_t pass) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(pass) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Reader Shuffle(Reader reader, int64_t buf_size, uint64_t seed, int64_t first_pass) {
  FLOTILLA_ENFORCE_GE(buf_size, 1, "Shuffle: buf_size must be positive");
  auto passes = std::make_shared<std::atomic<int64_t>>(first_pass);
  return [reader = std::move(reader), buf_size, seed, passes]() -> SampleGenerator {
    auto pass = std::make_shared<ShufflePass>(reader(), static_cast<size_t>(buf_size),
                                              PassSeed(seed, passes->fetch_add(1)));
    return [pass] { return pass->Next(); };
  };
}

}  // namespace flotilla::io
