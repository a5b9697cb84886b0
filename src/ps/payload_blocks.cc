#include "ps/payload_blocks.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

namespace flotilla::ps {

namespace {

constexpr size_t kLine = 64;
// Blocks below this are freed at once: malloc does not map them anew.
constexpr size_t kPooledBytes = 16 << 10;
// At most this many free blocks and bytes wait for reuse.
constexpr size_t kMaxFree = 8;
constexpr size_t kMaxFreeBytes = 32 << 20;

// A block: a cache line holding its capacity, then the payload.
struct Block {
  size_t capacity;
  uint8_t* payload() { return reinterpret_cast<uint8_t*>(this) + kLine; }
};

Block* NewBlock(size_t capacity) {
  void* p = ::operator new(kLine + capacity, std::align_val_t{kLine});
  return new (p) Block{capacity};
}

void FreeBlock(Block* b) { ::operator delete(b, std::align_val_t{kLine}); }

class BlockPool {
 public:
  // The smallest free block of at least `bytes` (and not four times more),
  // else a new one.
  Block* Take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const size_t c = (*it)->capacity;
        if (c >= bytes && c / 4 <= bytes && (best == free_.end() || c < (*best)->capacity)) best = it;
      }
      if (best != free_.end()) {
        Block* b = *best;
        free_.erase(best);
        free_bytes_ -= b->capacity;
        return b;
      }
    }
    return NewBlock(bytes);
  }

  void Give(Block* b) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kMaxFree && free_bytes_ + b->capacity <= kMaxFreeBytes) {
        free_.push_back(b);
        free_bytes_ += b->capacity;
        return;
      }
    }
    FreeBlock(b);
  }

 private:
  std::mutex mu_;
  std::vector<Block*> free_;  // guarded by mu_
  size_t free_bytes_ = 0;     // guarded by mu_
};

// Never destroyed: gRPC may release a slice while the process exits.
BlockPool& Pool() {
  static BlockPool* pool = new BlockPool;
  return *pool;
}

void GiveBack(void* block) { Pool().Give(static_cast<Block*>(block)); }
void Free(void* block) { FreeBlock(static_cast<Block*>(block)); }

}  // namespace

PayloadSlice NewPayloadSlice(size_t bytes, size_t line_at) {
  const size_t pad = (kLine - line_at % kLine) % kLine;
  const bool pooled = bytes + pad >= kPooledBytes;
  Block* b = pooled ? Pool().Take(bytes + pad) : NewBlock(bytes + pad);
  uint8_t* data = b->payload() + pad;
  return {grpc_slice_new_with_user_data(data, bytes, pooled ? GiveBack : Free, b), data};
}

}  // namespace flotilla::ps
