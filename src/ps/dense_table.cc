#include "flotilla/ps/dense_table.h"

#include <algorithm>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "ps/byte_io.h"

namespace flotilla::ps {

struct DenseTable::Block {
  DenseBlock where;
  mutable std::mutex mu;
  std::vector<float> value;    // guarded by mu
  std::vector<float> state;    // guarded by mu
  std::vector<float> pending;  // guarded by mu; empty when nothing is pending
  std::optional<float> pending_lr;  // guarded by mu
};

DenseTable::DenseTable(DenseTableConfig config, int server_index, int num_servers)
    : config_(std::move(config)) {
  FLOTILLA_ENFORCE(config_.rule != nullptr, "dense table '", config_.name, "' needs an update rule");
  for (const DenseBlock& b : SliceDense(config_.name, config_.numel, num_servers,
                                        config_.row_width, config_.min_block_size)) {
    if (b.server != server_index) continue;
    auto block = std::make_unique<Block>();
    block->where = b;
    block->value.resize(b.length);
    FillInitial(config_.initializer, 0, b.offset, block->value);
    block->state.resize(config_.rule->StateSize(b.length));
    config_.rule->InitState(b.length, block->state);
    blocks_.push_back(std::move(block));
  }
}

DenseTable::~DenseTable() = default;

std::vector<DenseBlock> DenseTable::blocks() const {
  std::vector<DenseBlock> out;
  for (const auto& b : blocks_) out.push_back(b->where);
  return out;
}

bool DenseTable::HasBlock(int block_id) const {
  return std::any_of(blocks_.begin(), blocks_.end(),
                     [&](const auto& b) { return b->where.id == block_id; });
}

DenseBlock DenseTable::block(int block_id) const { return Find(block_id).where; }

DenseTable::Block& DenseTable::Find(int block_id) const {
  for (const auto& b : blocks_) {
    if (b->where.id == block_id) return *b;
  }
  FLOTILLA_THROW(NotFound, "dense table '", config_.name, "' has no block ", block_id,
                 " on this server");
}

namespace {

void CheckLength(const std::string& table, int block, size_t got, size_t want) {
  FLOTILLA_ENFORCE_EQ(got, want, "dense table '", table, "' block ", block,
                      ": payload length (elements) does not match the block");
}

}  // namespace

void DenseTable::Pull(int block_id, std::span<float> out) const {
  Block& b = Find(block_id);
  CheckLength(name(), block_id, out.size(), b.value.size());
  std::lock_guard<std::mutex> lock(b.mu);
  std::copy(b.value.begin(), b.value.end(), out.begin());
}

void DenseTable::Push(int block_id, std::span<const float> grad, std::optional<float> lr) {
  Block& b = Find(block_id);
  CheckLength(name(), block_id, grad.size(), b.value.size());
  std::lock_guard<std::mutex> lock(b.mu);
  config_.rule->Apply(b.value, b.state, grad, lr.value_or(rule().learning_rate()));
}

void DenseTable::Accumulate(int block_id, std::span<const float> grad, std::optional<float> lr) {
  Block& b = Find(block_id);
  CheckLength(name(), block_id, grad.size(), b.value.size());
  std::lock_guard<std::mutex> lock(b.mu);
  if (lr) b.pending_lr = lr;
  if (b.pending.empty()) {
    b.pending.assign(grad.begin(), grad.end());
    return;
  }
  for (size_t i = 0; i < grad.size(); ++i) b.pending[i] += grad[i];
}

bool DenseTable::HasPending() const {
  for (const auto& b : blocks_) {
    std::lock_guard<std::mutex> lock(b->mu);
    if (!b->pending.empty()) return true;
  }
  return false;
}

void DenseTable::ApplyPending(int divisor) {
  FLOTILLA_ENFORCE_GE(divisor, 1, "dense table '", name(), "' ApplyPending");
  const float scale = 1.0f / static_cast<float>(divisor);
  for (const auto& b : blocks_) {
    std::lock_guard<std::mutex> lock(b->mu);
    if (b->pending.empty()) continue;
    for (float& g : b->pending) g *= scale;
    config_.rule->Apply(b->value, b->state, b->pending, b->pending_lr.value_or(rule().learning_rate()));
    b->pending.clear();
  }
}

void DenseTable::PushDelta(int block_id, std::span<const float> delta) {
  Block& b = Find(block_id);
  CheckLength(name(), block_id, delta.size(), b.value.size());
  std::lock_guard<std::mutex> lock(b.mu);
  for (size_t i = 0; i < delta.size(); ++i) b.value[i] += delta[i];
}

void DenseTable::Set(int block_id, std::span<const float> values) {
  Block& b = Find(block_id);
  CheckLength(name(), block_id, values.size(), b.value.size());
  std::lock_guard<std::mutex> lock(b.mu);
  std::copy(values.begin(), values.end(), b.value.begin());
}

std::string DenseTable::Serialize() const {
  ByteWriter w;
  w.PutString(name());
  w.Put<int64_t>(numel());
  w.PutString(rule().name());
  w.Put<uint32_t>(static_cast<uint32_t>(blocks_.size()));
  for (const auto& b : blocks_) {
    std::lock_guard<std::mutex> lock(b->mu);
    w.Put<int32_t>(b->where.id);
    w.Put<int64_t>(b->where.offset);
    w.Put<int64_t>(b->where.length);
    w.Put<int64_t>(static_cast<int64_t>(b->state.size()));
    w.PutSpan<float>(b->value);
    w.PutSpan<float>(b->state);
  }
  return std::move(w.str());
}

// A block as saved: where it sat in the parameter, its values and state.
struct DenseTable::SavedBlock {
  int32_t id = 0;
  int64_t offset = 0, length = 0;
  std::vector<float> value, state;
};

std::vector<DenseTable::SavedBlock> DenseTable::ParseImage(std::string_view image,
                                                           const std::string& what) const {
  ByteReader r(image, what);
  const std::string stored_name = r.GetString();
  const int64_t stored_numel = r.Get<int64_t>();
  const std::string stored_rule = r.GetString();
  FLOTILLA_CHECK(stored_name == name() && stored_numel == numel(), Corruption, what,
                 ": holds dense table '", stored_name, "' of ", stored_numel,
                 " elements, expected '", name(), "' of ", numel());
  FLOTILLA_CHECK(stored_rule == rule().name(), Corruption, what, ": table '", name(),
                 "' was saved with rule '", stored_rule, "', this server uses '", rule().name(), "'");
  // Each block starts with id, offset, length and state size: a count that
  // cannot fit in the bytes left is refused before anything is sized by it.
  constexpr size_t kBlockHeaderBytes = 4 + 3 * 8;
  const uint32_t count = r.Get<uint32_t>();
  FLOTILLA_CHECK(count <= r.left() / kBlockHeaderBytes, Corruption, what, ": table '", name(),
                 "' claims ", count, " blocks, more than the ", r.left(), " bytes left can hold");
  std::vector<SavedBlock> blocks(count);
  for (SavedBlock& b : blocks) {
    b.id = r.Get<int32_t>();
    b.offset = r.Get<int64_t>();
    b.length = r.Get<int64_t>();
    const int64_t state = r.Get<int64_t>();
    FLOTILLA_CHECK(b.offset >= 0 && b.offset <= numel() && b.length >= 0 &&
                       b.length <= numel() - b.offset && state == rule().StateSize(b.length),
                   Corruption, what, ": block ", b.id, " of '", name(), "' is malformed");
    b.value.resize(b.length);
    b.state.resize(state);
    r.GetSpan<float>(std::span<float>(b.value));
    r.GetSpan<float>(std::span<float>(b.state));
  }
  FLOTILLA_CHECK(r.done(), Corruption, what, ": trailing bytes after table '", name(), "'");
  return blocks;
}

void DenseTable::Deserialize(std::string_view image, const std::string& what) {
  std::vector<SavedBlock> saved = ParseImage(image, what);
  FLOTILLA_CHECK(saved.size() == blocks_.size(), Corruption, what, ": holds ", saved.size(),
                 " blocks of '", name(), "', this server holds ", blocks_.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    Block& b = *blocks_[i];
    FLOTILLA_CHECK(saved[i].id == b.where.id && saved[i].offset == b.where.offset &&
                       saved[i].length == b.where.length,
                   Corruption, what, ": block ", saved[i].id, " of '", name(),
                   "' does not match this server's slicing (block ", b.where.id, ")");
    std::lock_guard<std::mutex> lock(b.mu);
    b.value = std::move(saved[i].value);
    b.state = std::move(saved[i].state);
    b.pending.clear();
  }
}

// Rule state is `arrays` element-wise arrays of a block's length followed
// by `scalars` shared floats (UpdateRule::StateSize): a new block takes its
// slice of every array and the scalars of the first saved block it covers.
void DenseTable::DeserializeResliced(std::span<const std::string> images, const std::string& what) {
  std::vector<SavedBlock> saved;
  for (size_t j = 0; j < images.size(); ++j) {
    for (SavedBlock& b : ParseImage(images[j], StrCat(what, " (image ", j, ")"))) {
      saved.push_back(std::move(b));
    }
  }
  std::sort(saved.begin(), saved.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  int64_t covered = 0;
  for (const SavedBlock& b : saved) {
    FLOTILLA_CHECK(b.offset == covered, Corruption, what, ": the saved blocks of '", name(),
                   "' do not tile it (a gap or overlap at element ", covered, ")");
    covered += b.length;
  }
  FLOTILLA_CHECK(covered == numel(), Corruption, what, ": the saved blocks of '", name(), "' cover ",
                 covered, " of ", numel(), " elements");
  const int64_t scalars = rule().StateSize(0), arrays = rule().StateSize(1) - scalars;
  for (const auto& bp : blocks_) {
    Block& b = *bp;
    std::lock_guard<std::mutex> lock(b.mu);
    const int64_t begin = b.where.offset, end = begin + b.where.length;
    bool first = true;
    for (const SavedBlock& s : saved) {
      const int64_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.length);
      if (lo >= hi) continue;
      std::copy(s.value.begin() + (lo - s.offset), s.value.begin() + (hi - s.offset),
                b.value.begin() + (lo - begin));
      for (int64_t a = 0; a < arrays; ++a) {
        const float* from = s.state.data() + a * s.length + (lo - s.offset);
        std::copy(from, from + (hi - lo), b.state.begin() + a * b.where.length + (lo - begin));
      }
      if (first) {
        std::copy(s.state.end() - scalars, s.state.end(), b.state.end() - scalars);
        first = false;
      }
    }
    b.pending.clear();
  }
}

}  // namespace flotilla::ps
