// Dataset::GlobalShuffle: records exchanged between trainers through the
// job's store, as bytes (per slot: offsets, int64 values, float values).
#include <cstring>
#include <numeric>
#include <random>

#include "flotilla/comm/store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/io/dataset.h"

namespace flotilla::io {

namespace {

template <typename T>
void Put(comm::Bytes& out, const std::vector<T>& values) {
  const uint64_t n = values.size();
  const size_t at = out.size();
  out.resize(at + sizeof(n) + n * sizeof(T));
  std::memcpy(out.data() + at, &n, sizeof(n));
  if (n > 0) std::memcpy(out.data() + at + sizeof(n), values.data(), n * sizeof(T));
}

template <typename T>
void Take(const comm::Bytes& in, size_t& at, std::vector<T>* values, const std::string& key) {
  uint64_t n = 0;
  FLOTILLA_CHECK(at + sizeof(n) <= in.size(), Corruption, "global_shuffle: '", key, "' ends early");
  std::memcpy(&n, in.data() + at, sizeof(n));
  at += sizeof(n);
  FLOTILLA_CHECK(n <= (in.size() - at) / sizeof(T), Corruption, "global_shuffle: '", key, "' ends early");
  values->resize(n);
  if (n > 0) std::memcpy(values->data(), in.data() + at, n * sizeof(T));
  at += n * sizeof(T);
}

comm::Bytes Serialize(const SlotColumns& c) {
  comm::Bytes out;
  for (const SlotValues& s : c.slots) {
    Put(out, s.offsets);
    Put(out, s.int64s);
    Put(out, s.floats);
  }
  return out;
}

SlotColumns Parse(const comm::Bytes& in, const std::vector<SlotSpec>& specs, const std::string& key) {
  SlotColumns c(specs);
  size_t at = 0;
  for (SlotValues& s : c.slots) {
    Take(in, at, &s.offsets, key);
    Take(in, at, &s.int64s, key);
    Take(in, at, &s.floats, key);
    FLOTILLA_CHECK(!s.offsets.empty() && s.offsets.size() == c.slots[0].offsets.size() &&
                       s.offsets.back() == int64_t(s.int64s.size() + s.floats.size()),
                   Corruption, "global_shuffle: '", key, "' holds inconsistent slots (do the trainers use the "
                   "same set_use_var?)");
  }
  FLOTILLA_CHECK(at == in.size(), Corruption, "global_shuffle: '", key, "' has ", in.size() - at,
                 " trailing bytes (do the trainers use the same set_use_var?)");
  return c;
}

std::string Key(const std::string& round, int from, int to) {
  return round + "/" + std::to_string(from) + "->" + std::to_string(to);
}

}  // namespace

void Dataset::GlobalShuffle(comm::Store& store, int rank, int world, uint64_t seed, const std::string& round) {
  CheckKind(DatasetKind::kInMemory, "global_shuffle");
  CheckNoPreload("global_shuffle");
  FLOTILLA_ENFORCE(world >= 1 && rank >= 0 && rank < world, "global_shuffle: rank ", rank, " of ", world);
  if (world > 1) {
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(rank));
    std::vector<std::vector<int64_t>> to(static_cast<size_t>(world));
    for (int64_t r = 0; r < records_.records(); ++r) to[rng() % static_cast<uint64_t>(world)].push_back(r);
    for (int t = 0; t < world; ++t) {
      if (t != rank) store.set(Key(round, rank, t), Serialize(records_.Gather(to[t])));
    }
    SlotColumns mine = records_.Gather(to[rank]);
    for (int f = 0; f < world; ++f) {
      if (f == rank) continue;
      const std::string key = Key(round, f, rank);
      mine.Append(Parse(store.get(key), slots_, key));
      store.deleteKey(key);
    }
    records_ = std::move(mine);
  }
  LocalShuffle(seed + static_cast<uint64_t>(rank));
}

}  // namespace flotilla::io
