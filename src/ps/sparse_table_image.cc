// SparseTable images: Serialize / Deserialize, and loading the images of a
// job with another number of servers.
#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/byte_io.h"
#include "ps/sparse_shard.h"

namespace flotilla::ps {

// name, dim, rule, state size, then the step history (advancing rules)
// and the pass count (tables with accessor statistics).
std::string SparseTable::Header() const {
  ByteWriter w;
  w.PutString(name());
  w.Put<int64_t>(dim());
  w.PutString(rule().name());
  w.Put<int64_t>(state_size_);
  if (stamped_) {
    std::shared_lock<std::shared_mutex> lock(history_mu_);
    w.Put<uint64_t>(step_lr_.size());
    w.PutSpan<float>(step_lr_);
  }
  if (stats_) w.Put<int32_t>(pass_.load());
  return std::move(w.str());
}

std::pair<std::vector<float>, int32_t> SparseTable::ParseHeader(ByteReader& r) const {
  const std::string& what = r.what();
  const std::string stored_name = r.GetString();
  const int64_t stored_dim = r.Get<int64_t>();
  const std::string stored_rule = r.GetString();
  const int64_t stored_state = r.Get<int64_t>();
  FLOTILLA_CHECK(stored_name == name() && stored_dim == dim(), Corruption, what,
                 ": holds sparse table '", stored_name, "' of dim ", stored_dim, ", expected '",
                 name(), "' of dim ", dim());
  FLOTILLA_CHECK(stored_rule == rule().name() && stored_state == state_size_, Corruption, what,
                 ": table '", name(), "' was saved with rule '", stored_rule, "' and ", stored_state,
                 " floats of state per row, this server uses '", rule().name(), "' and ", state_size_,
                 " (accessor statistics differ?)");
  std::vector<float> step_lr(stamped_ ? r.GetCount<float>() : 0);
  r.GetSpan<float>(std::span<float>(step_lr));
  const int32_t pass = stats_ ? r.Get<int32_t>() : 0;
  return {std::move(step_lr), pass};
}

std::string SparseTable::Serialize() const {
  FLOTILLA_ENFORCE(disk_ == nullptr, "ssd sparse table '", name(), "' saves with SaveTo, not Serialize");
  const size_t stride = Stride();
  std::vector<std::pair<int64_t, std::vector<float>>> rows;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (size_t i = 0; i < s->keys.size(); ++i) {
      const float* row = s->data.data() + i * stride;
      rows.emplace_back(s->keys[i], std::vector<float>(row, row + stride));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  ByteWriter w;
  w.str() = Header();
  w.Put<uint64_t>(rows.size());
  for (const auto& [key, row] : rows) {
    w.Put<int64_t>(key);
    w.PutSpan<float>(row);
  }
  return std::move(w.str());
}

// One saved image: its step history (advancing rules) and its rows.
struct SparseTable::Image {
  std::vector<float> step_lr;
  int32_t pass = 0;
  std::vector<int64_t> keys;
  std::vector<float> data;  // rows of `stride` floats, in key order
};

SparseTable::Image SparseTable::ParseImage(std::string_view image, const std::string& what) const {
  ByteReader r(image, what);
  Image out;
  std::tie(out.step_lr, out.pass) = ParseHeader(r);
  const size_t stride = Stride();
  const size_t count = r.GetCount(sizeof(int64_t) + stride * sizeof(float));
  out.keys.resize(count);
  out.data.resize(count * stride);
  for (size_t i = 0; i < count; ++i) {
    out.keys[i] = r.Get<int64_t>();
    r.GetSpan<float>(std::span<float>(out.data).subspan(i * stride, stride));
  }
  FLOTILLA_CHECK(r.done(), Corruption, what, ": trailing bytes after table '", name(), "'");
  return out;
}

// Replaces every row with `rows` (keys unique), under all shard locks.
void SparseTable::Install(std::span<const int64_t> keys, std::span<const float> data,
                          const std::string& what) {
  const size_t stride = Stride();
  std::vector<Shard> loaded(shards_.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    Shard& shard = loaded[ShardIndex(KeyIndex::Hash(keys[i]))];
    FLOTILLA_CHECK(shard.slot.FindOrInsert(keys[i], shard.keys.size()).second, Corruption, what,
                   ": key ", keys[i], " appears twice in table '", name(), "'");
    shard.keys.push_back(keys[i]);
    shard.data.insert(shard.data.end(), data.begin() + i * stride, data.begin() + (i + 1) * stride);
  }
  for (size_t i = 0; i < shards_.size(); ++i) {
    std::lock_guard<std::mutex> lock(shards_[i]->mu);
    shards_[i]->slot = std::move(loaded[i].slot);
    shards_[i]->keys = std::move(loaded[i].keys);
    shards_[i]->data = std::move(loaded[i].data);
    shards_[i]->pending.clear();
    shards_[i]->candidates = {};
  }
}

void SparseTable::Deserialize(std::string_view image, const std::string& what) {
  Image parsed = ParseImage(image, what);
  Install(parsed.keys, parsed.data, what);
  pass_ = parsed.pass;
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_ = std::move(parsed.step_lr);
  step_ = static_cast<int64_t>(step_lr_.size());
}

void SparseTable::DeserializeResharded(std::span<const std::string> images,
                                       const std::function<bool(int64_t)>& keep,
                                       const std::string& what) {
  const size_t stride = Stride();
  std::vector<int64_t> keys;
  std::vector<float> data;
  for (size_t j = 0; j < images.size(); ++j) {
    Image parsed = ParseImage(images[j], StrCat(what, " (image ", j, ")"));
    pass_ = parsed.pass;  // every server shrinks at the same pass boundaries
    const int64_t steps = static_cast<int64_t>(parsed.step_lr.size());
    for (size_t i = 0; i < parsed.keys.size(); ++i) {
      if (!keep(parsed.keys[i])) continue;
      float* row = parsed.data.data() + i * stride;
      if (stamped_) {  // current as of its server's last step, then restamped
        const int64_t stamp = StampOf(row);
        if (stamp >= 0 && stamp < steps) {
          config_.rule->Advance(row, row + dim(), dim(),
                                std::span<const float>(parsed.step_lr).subspan(stamp, steps - stamp));
        }
        SetStamp(row, 0);
      }
      keys.push_back(parsed.keys[i]);
      data.insert(data.end(), row, row + stride);
    }
  }
  Install(keys, data, what);
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_.clear();
  step_ = 0;
}

}  // namespace flotilla::ps
