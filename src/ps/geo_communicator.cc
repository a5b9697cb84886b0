#include "flotilla/ps/geo_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <optional>

#include "flotilla/common/enforce.h"
#include "flotilla/core/key_index.h"
#include "flotilla/core/row_copy.h"
#include "flotilla/trace/trace.h"
#include "ps/geo_exchange.h"
#include "ps/staged_rows.h"

namespace flotilla::ps {

// Batches of keys probe the cache's index this many keys ahead, so the
// lookups overlap their memory latency (the index outgrows the caches).
constexpr size_t kLookAhead = 8;

class GeoCommunicator::Impl {
 public:
  struct Dense {
    Tensor param;  // the trainer's tensor (shared buffer)
    Tensor base;   // its value at the last sync
    int64_t row_width = 1;
  };
  // The rows fetched since the last sync, in flat arrays: slot i holds
  // keys[i], its local value at value[i * dim] and its value when fetched
  // at base[i * dim]. Cleared (capacity kept) at every sync.
  struct Sparse {
    int64_t dim = 0;  // known after the first fetch
    KeyIndex index;   // key → slot
    std::vector<int64_t> keys;
    std::vector<float> value, base;
    // The last Prefetch's keys (as given, and distinct in first-seen order,
    // as a lookup's gradient carries them) with their slots: the step's
    // lookup and SGD of that batch take them instead of probing the index.
    std::vector<int64_t> prefetched_keys, distinct_keys;
    std::vector<uint32_t> prefetched_slots, distinct_slots;

    float* Row(int64_t key, const std::string& name, const char* op) {
      const int64_t slot = index.Find(key);
      FLOTILLA_CHECK(slot >= 0, NotFound, "GEO ", op, "('", name, "'): key ", key,
                     " was not pulled since the last sync");
      return value.data() + slot * dim;
    }
    // distinct_* from prefetched_*.
    void RememberDistinct() {
      distinct_keys.clear();
      distinct_slots.clear();
      KeyIndex seen;
      seen.Reserve(prefetched_keys.size());
      for (size_t i = 0; i < prefetched_keys.size(); ++i) {
        if (!seen.FindOrInsert(prefetched_keys[i], 0).second) continue;
        distinct_keys.push_back(prefetched_keys[i]);
        distinct_slots.push_back(prefetched_slots[i]);
      }
    }
    void Clear() {
      index.Clear();
      prefetched_keys.clear();
      prefetched_slots.clear();
      distinct_keys.clear();
      distinct_slots.clear();
      keys.clear();
      value.clear();
      base.clear();
    }
  };

  std::vector<DenseVar> DenseVars() const {
    std::vector<DenseVar> vars;
    for (const auto& [name, d] : dense) vars.push_back({name, d.param, d.row_width});
    return vars;
  }
  // A sync point: the deltas to push (the dense parameters' values now in
  // *snapshot); drops the sparse cache and counts the sync.
  GeoExchange Collect(std::vector<Tensor>* snapshot);
  void CollectSparse(const std::string& name, Sparse& table, GeoExchange& x);
  // After the exchange: the dense parameters take the servers' values plus
  // the local progress since `snapshot`.
  void Apply(GeoExchange& x, const std::vector<Tensor>& snapshot);
  // Waits for the background sync and applies it.
  void FinishPending();
  // The slot of each key, fetching rows not cached since the last sync.
  std::vector<uint32_t> Fetch(const std::string& name, Sparse& table, std::span<const int64_t> keys);
  // Gives the keys not cached yet slots (their slot in *slots when set) and
  // returns them: the rows to pull, in slot order.
  static std::vector<int64_t> Admit(Sparse& table, std::span<const int64_t> keys, uint32_t* slots);
  // Sizes the cache's arrays for its keys once rows of width `dim` arrive.
  static void Fit(const std::string& name, Sparse& table, int64_t dim);
  // The sink storing pulled row j (of keys[positions[j]]) at slot
  // slots[positions[j]], as both its value and its base.
  static PsClient::RowSink Store(const std::string& name, Sparse& table, std::vector<uint32_t> slots);
  // The rows PrefetchNext pulled for the batch tagged `batch` (dropping
  // pulls for batches before it), unless a sync came since: they may
  // predate the deltas it pushed. Rethrows the pull's error.
  std::optional<StagedRows> TakeAhead(uint64_t batch);
  Sparse& Table(const std::string& name) {
    auto it = sparse.find(name);
    FLOTILLA_CHECK(it != sparse.end(), NotFound, "GEO communicator has no sparse table '", name, "'");
    return it->second;
  }

  std::shared_ptr<PsClient> client;
  GeoOptions options;
  std::map<std::string, Dense> dense;
  std::map<std::string, Sparse> sparse;
  int64_t steps = 0;
  int64_t syncs = 0;
  float scale = 1.0f;
  // Step's sync on a background thread (options.background_sync).
  struct PendingSync {
    std::future<GeoExchange> done;
    std::vector<Tensor> snapshot;
  };
  std::optional<PendingSync> pending;
  // PrefetchNext's pulls in flight, oldest first, with their batches' tags.
  std::deque<std::pair<uint64_t, std::future<StagedRows>>> ahead;
};

GeoCommunicator::GeoCommunicator(std::shared_ptr<PsClient> client, GeoOptions options)
    : impl_(std::make_unique<Impl>()) {
  FLOTILLA_ENFORCE_GE(options.k_steps, 1, "GEO k_steps");
  impl_->client = std::move(client);
  impl_->options = options;
  if (options.scale_delta_by_trainers) impl_->scale = 1.0f / impl_->client->num_trainers();
}

GeoCommunicator::~GeoCommunicator() = default;

void GeoCommunicator::AddDense(const std::string& name, Tensor param, int64_t row_width) {
  FLOTILLA_ENFORCE(param.dtype() == DType::kFloat32, "GEO parameter '", name, "' must be float32");
  Tensor base = param.Clone();
  impl_->dense[name] = Impl::Dense{std::move(param), std::move(base), row_width};
}

void GeoCommunicator::AddSparse(const std::string& name) { impl_->sparse[name]; }

void GeoCommunicator::Init() {
  auto vars = impl_->DenseVars();
  if (impl_->client->trainer_id() == 0) impl_->client->InitDense(vars);
  impl_->client->Barrier();
  if (impl_->client->trainer_id() != 0) impl_->client->PullDense(vars);
  impl_->client->Barrier();  // nobody pushes a delta before everyone has the seed
  for (auto& [name, d] : impl_->dense) d.base = d.param.Clone();
}

std::vector<int64_t> GeoCommunicator::Impl::Admit(Sparse& table, std::span<const int64_t> keys,
                                                 uint32_t* slots) {
  std::vector<int64_t> missing;
  for (size_t i = 0; i < std::min(kLookAhead, keys.size()); ++i) table.index.Prefetch(KeyIndex::Hash(keys[i]));
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kLookAhead < keys.size()) table.index.Prefetch(KeyIndex::Hash(keys[i + kLookAhead]));
    auto [slot, inserted] = table.index.FindOrInsert(keys[i], static_cast<uint32_t>(table.keys.size()));
    if (slots != nullptr) slots[i] = slot;
    if (!inserted) continue;
    table.keys.push_back(keys[i]);
    missing.push_back(keys[i]);
  }
  return missing;
}

void GeoCommunicator::Impl::Fit(const std::string& name, Sparse& table, int64_t dim) {
  if (table.dim == 0) table.dim = dim;
  FLOTILLA_ENFORCE_EQ(dim, table.dim, "GEO sparse table '", name, "' changed its width");
  if (table.value.size() >= table.keys.size() * dim) return;
  table.value.resize(table.keys.size() * dim);
  table.base.resize(table.keys.size() * dim);
}

PsClient::RowSink GeoCommunicator::Impl::Store(const std::string& name, Sparse& table,
                                               std::vector<uint32_t> slots) {
  return [&name, &table, slots = std::move(slots)](std::span<const uint32_t> positions, const float* rows,
                                                   int64_t dim) {
    Fit(name, table, dim);
    for (size_t j = 0; j < positions.size(); ++j) {
      const size_t at = size_t{slots[positions[j]]} * dim;
      CopyRow(table.value.data() + at, rows + j * dim, dim);
      CopyRow(table.base.data() + at, rows + j * dim, dim);
    }
  };
}

namespace {

// Tells batches apart: their tables and keys, in order. Two batches with
// one tag would only share rows pulled ahead, which are the servers'
// values either way.
uint64_t BatchTag(std::span<const GeoCommunicator::TableKeys> tables) {
  uint64_t tag = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t v) { tag = (tag ^ v) * 0x100000001b3ull; };
  for (const auto& t : tables) {
    mix(std::hash<std::string>{}(t.name));
    for (int64_t key : t.keys) mix(KeyIndex::Hash(key));
  }
  return tag;
}

// The slots of the last `n` of a table's `keys` keys (the ones just admitted).
std::vector<uint32_t> LastSlots(size_t keys, size_t n) {
  std::vector<uint32_t> slots(n);
  std::iota(slots.begin(), slots.end(), static_cast<uint32_t>(keys - n));
  return slots;
}

}  // namespace

std::vector<uint32_t> GeoCommunicator::Impl::Fetch(const std::string& name, Sparse& table,
                                                   std::span<const int64_t> keys) {
  if (std::ranges::equal(keys, table.prefetched_keys)) return table.prefetched_slots;
  if (std::ranges::equal(keys, table.distinct_keys)) return table.distinct_slots;
  std::vector<uint32_t> slots(keys.size());
  const std::vector<int64_t> missing = Admit(table, keys, slots.data());
  if (!missing.empty()) {
    client->PullSparse(name, missing, Store(name, table, LastSlots(table.keys.size(), missing.size())));
  }
  return slots;
}

std::optional<StagedRows> GeoCommunicator::Impl::TakeAhead(uint64_t batch) {
  auto it = std::find_if(ahead.begin(), ahead.end(), [&](const auto& a) { return a.first == batch; });
  if (it == ahead.end()) return std::nullopt;
  std::future<StagedRows> pull = std::move(it->second);
  ahead.erase(ahead.begin(), it + 1);  // earlier pulls were for batches that did not come
  trace::Span waited(trace::Category::kCommWait, FLOTILLA_TRACE_NAME("rows pulled ahead"));
  StagedRows staged = pull.get();
  waited.End();
  if (staged.epoch != syncs) return std::nullopt;
  return staged;
}

void GeoCommunicator::Prefetch(std::span<const TableKeys> tables) {
  const std::optional<StagedRows> staged = impl_->ahead.empty() ? std::nullopt : impl_->TakeAhead(BatchTag(tables));
  std::vector<std::vector<int64_t>> rest;
  rest.reserve(tables.size());  // the pulls' key spans point into it
  std::vector<PsClient::TablePull> pulls;
  for (const TableKeys& t : tables) {
    Impl::Sparse& table = impl_->Table(t.name);
    table.prefetched_slots.resize(t.keys.size());
    const std::vector<int64_t> missing = Impl::Admit(table, t.keys, table.prefetched_slots.data());
    table.prefetched_keys.assign(t.keys.begin(), t.keys.end());
    table.RememberDistinct();
    std::vector<uint32_t> slots = LastSlots(table.keys.size(), missing.size());
    const StagedRows::Table* ready = staged ? staged->Find(t.name) : nullptr;
    if (ready != nullptr && ready->dim > 0 && !missing.empty()) Impl::Fit(t.name, table, ready->dim);
    rest.emplace_back();
    std::vector<uint32_t> rest_slots;
    for (size_t j = 0; j < missing.size(); ++j) {
      const float* row = ready != nullptr && ready->dim > 0 ? ready->Row(missing[j]) : nullptr;
      if (row == nullptr) {  // not pulled ahead: pulled now
        rest.back().push_back(missing[j]);
        rest_slots.push_back(slots[j]);
        continue;
      }
      CopyRow(table.value.data() + size_t{slots[j]} * table.dim, row, table.dim);
      CopyRow(table.base.data() + size_t{slots[j]} * table.dim, row, table.dim);
    }
    if (!rest.back().empty()) pulls.push_back({t.name, rest.back(), Impl::Store(t.name, table, std::move(rest_slots))});
  }
  if (!pulls.empty()) impl_->client->PullSparseTables(pulls);
}

void GeoCommunicator::PrefetchNext(std::span<const TableKeys> tables) {
  constexpr size_t kMaxAhead = 4;  // this step's batch and up to three after it
  while (impl_->ahead.size() >= kMaxAhead) {  // its batch never came: its rows are dropped
    impl_->ahead.front().second.wait();
    impl_->ahead.pop_front();
  }
  StagedRows staged{.epoch = impl_->syncs, .tables = {}};
  for (const TableKeys& t : tables) {
    const Impl::Sparse& table = impl_->Table(t.name);
    StagedRows::Table next{.name = t.name, .keys = {}, .rows = {}, .dim = -1, .index = {}};
    KeyIndex seen;
    seen.Reserve(t.keys.size());
    for (size_t i = 0; i < t.keys.size(); ++i) {
      if (i + kLookAhead < t.keys.size()) table.index.Prefetch(KeyIndex::Hash(t.keys[i + kLookAhead]));
      if (seen.FindOrInsert(t.keys[i], 0).second && table.index.Find(t.keys[i]) < 0) next.keys.push_back(t.keys[i]);
    }
    if (!next.keys.empty()) staged.tables.push_back(std::move(next));
  }
  if (staged.tables.empty()) return;
  impl_->ahead.emplace_back(BatchTag(tables), PullAhead(impl_->client, std::move(staged)));
}

int64_t GeoCommunicator::Gather(const std::string& name, std::span<const int64_t> ids, int64_t padding_idx,
                                float* out, int64_t dim) {
  Impl::Sparse& table = impl_->Table(name);
  std::vector<int64_t> keys;
  keys.reserve(ids.size());
  for (int64_t id : ids) {
    if (id != padding_idx) keys.push_back(id);
  }
  const std::vector<uint32_t> slots = impl_->Fetch(name, table, keys);
  FLOTILLA_CHECK(keys.empty() || table.dim == dim, InvalidArgument, "GEO sparse table '", name, "' has rows of ",
                 table.dim, " values, the lookup reads ", dim);
  const size_t d = static_cast<size_t>(dim);
  for (size_t i = 0, k = 0; i < ids.size(); ++i) {
    if (ids[i] == padding_idx) {
      std::fill_n(out + i * d, d, 0.0f);
    } else {
      CopyRow(out + i * d, table.value.data() + size_t{slots[k++]} * d, d);
    }
  }
  return static_cast<int64_t>(keys.size());
}

Tensor GeoCommunicator::PullSparse(const std::string& name, std::span<const int64_t> keys) {
  Impl::Sparse& table = impl_->Table(name);
  const std::vector<uint32_t> slots = impl_->Fetch(name, table, keys);
  Tensor out(DType::kFloat32, {static_cast<int64_t>(keys.size()), table.dim});
  float* dst = out.mutable_data<float>();
  for (size_t i = 0; i < keys.size(); ++i) {
    CopyRow(dst + i * table.dim, table.value.data() + slots[i] * table.dim, table.dim);
  }
  return out;
}

void GeoCommunicator::UpdateSparse(const std::string& name, std::span<const int64_t> keys,
                                   const Tensor& rows) {
  Impl::Sparse& table = impl_->Table(name);
  FLOTILLA_ENFORCE_EQ(rows.numel(), static_cast<int64_t>(keys.size()) * table.dim,
                      "GEO UpdateSparse('", name, "'): rows must be [keys, dim]");
  const float* src = rows.data<float>();
  for (size_t i = 0; i < keys.size(); ++i) {
    CopyRow(table.Row(keys[i], name, "UpdateSparse"), src + i * table.dim, table.dim);
  }
}

void GeoCommunicator::SgdSparse(const std::string& name, std::span<const int64_t> keys,
                                const Tensor& grads, float lr) {
  Impl::Sparse& table = impl_->Table(name);
  const std::vector<uint32_t> slots = impl_->Fetch(name, table, keys);
  FLOTILLA_ENFORCE_EQ(grads.numel(), static_cast<int64_t>(keys.size()) * table.dim,
                      "GEO SgdSparse('", name, "'): grads must be [keys, dim]");
  const float* g = grads.data<float>();
  for (size_t i = 0; i < keys.size(); ++i) {
    float* row = table.value.data() + slots[i] * table.dim;
    for (int64_t j = 0; j < table.dim; ++j) row[j] -= lr * g[i * table.dim + j];
  }
}

bool GeoCommunicator::Step() {
  Impl& m = *impl_;
  ++m.steps;
  if (m.pending && m.pending->done.wait_for(std::chrono::seconds(0)) == std::future_status::ready) m.FinishPending();
  if (m.steps % m.options.k_steps != 0) return false;
  if (!m.options.background_sync) {
    Sync();
    return true;
  }
  m.FinishPending();
  std::vector<Tensor> snapshot;
  GeoExchange exchange = m.Collect(&snapshot);
  m.pending = Impl::PendingSync{
      std::async(std::launch::async, [client = m.client, x = std::move(exchange)]() mutable {
        x.Run(*client);
        return std::move(x);
      }),
      std::move(snapshot)};
  return true;
}

GeoExchange GeoCommunicator::Impl::Collect(std::vector<Tensor>* snapshot) {
  GeoExchange x;
  for (const auto& [name, d] : dense) {
    Tensor delta(DType::kFloat32, d.param.dims());
    float* o = delta.mutable_data<float>();
    const float* p = d.param.data<float>();
    const float* b = d.base.data<float>();
    for (int64_t i = 0; i < delta.numel(); ++i) o[i] = (p[i] - b[i]) * scale;
    x.dense_deltas.push_back({name, delta, d.row_width});
    snapshot->push_back(d.param.Clone());
    Tensor fresh(DType::kFloat32, d.param.dims());
    fresh.mutable_data<float>();
    x.fresh.push_back({name, fresh, d.row_width});
  }
  for (auto& [name, table] : sparse) CollectSparse(name, table, x);
  ++syncs;
  return x;
}

// The rows that changed since they were fetched; then the cache is
// forgotten, so the next pulls see other trainers' updates.
void GeoCommunicator::Impl::CollectSparse(const std::string& name, Sparse& table, GeoExchange& x) {
  const size_t dim = static_cast<size_t>(table.dim);
  std::vector<int64_t> keys;
  std::vector<float> deltas;
  for (size_t slot = 0; slot < table.keys.size(); ++slot) {
    const float* v = table.value.data() + slot * dim;
    const float* b = table.base.data() + slot * dim;
    if (std::equal(v, v + dim, b)) continue;
    keys.push_back(table.keys[slot]);
    for (size_t j = 0; j < dim; ++j) deltas.push_back((v[j] - b[j]) * scale);
  }
  table.Clear();
  if (keys.empty()) return;
  const int64_t rows = static_cast<int64_t>(keys.size());
  x.sparse_deltas.push_back({name, std::move(keys), Tensor::FromVector(deltas, {rows, table.dim})});
}

// The servers' values plus what the trainer did since the sync point:
// param = fresh + (param - snapshot); fresh is the next delta's base.
void GeoCommunicator::Impl::Apply(GeoExchange& x, const std::vector<Tensor>& snapshot) {
  size_t i = 0;
  for (auto& [name, d] : dense) {
    float* p = d.param.mutable_data<float>();
    const float* f = x.fresh[i].value.data<float>();
    const float* s = snapshot[i].data<float>();
    for (int64_t j = 0; j < d.param.numel(); ++j) p[j] = f[j] + (p[j] - s[j]);
    d.base = x.fresh[i].value;
    ++i;
  }
}

void GeoCommunicator::Impl::FinishPending() {
  if (!pending) return;
  PendingSync done = std::move(*pending);
  pending.reset();
  trace::Span waited(trace::Category::kCommWait, FLOTILLA_TRACE_NAME("GEO sync"));
  GeoExchange x = done.done.get();  // rethrows the exchange's error
  waited.End();
  Apply(x, done.snapshot);
}

void GeoCommunicator::Sync() {
  impl_->FinishPending();
  std::vector<Tensor> snapshot;
  GeoExchange x = impl_->Collect(&snapshot);
  x.Run(*impl_->client);
  impl_->Apply(x, snapshot);
}

void GeoCommunicator::Wait() { impl_->FinishPending(); }

int64_t GeoCommunicator::syncs() const { return impl_->syncs; }

void GeoCommunicator::Restart() {
  if (impl_->pending) impl_->pending->done.wait();
  impl_->pending.reset();  // a sync from before the servers loaded
  auto vars = impl_->DenseVars();
  if (!vars.empty()) impl_->client->PullDense(vars);
  for (auto& [name, d] : impl_->dense) d.base = d.param.Clone();
  for (auto& [name, table] : impl_->sparse) table.Clear();
  for (auto& [batch, pull] : impl_->ahead) pull.wait();
  impl_->ahead.clear();  // rows from before the servers loaded
}

}  // namespace flotilla::ps
