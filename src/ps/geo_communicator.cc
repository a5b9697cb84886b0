#include "flotilla/ps/geo_communicator.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "flotilla/common/enforce.h"
#include "ps/key_index.h"
#include "ps/row_copy.h"

namespace flotilla::ps {

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

    float* Row(int64_t key, const std::string& name, const char* op) {
      const int64_t slot = index.Find(key);
      FLOTILLA_CHECK(slot >= 0, NotFound, "GEO ", op, "('", name, "'): key ", key,
                     " was not pulled since the last sync");
      return value.data() + slot * dim;
    }
    void Clear() {
      index.Clear();
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
  void SyncDense();
  void SyncSparse(const std::string& name, Sparse& table);
  // The slot of each key, fetching rows not cached since the last sync.
  std::vector<uint32_t> Fetch(const std::string& name, Sparse& table, std::span<const int64_t> keys);
  // Gives the keys not cached yet slots (their slot in *slots when set) and
  // returns them: the rows to pull, in slot order.
  static std::vector<int64_t> Admit(Sparse& table, std::span<const int64_t> keys, uint32_t* slots);
  // The sink storing the pulled rows of `missing` (the last Admit's keys,
  // from slot `first` on) as both their value and their base.
  static PsClient::RowSink Store(const std::string& name, Sparse& table, size_t first);
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
  constexpr size_t kAhead = 8;  // keys whose probe lines load while earlier keys are placed
  for (size_t i = 0; i < std::min(kAhead, keys.size()); ++i) table.index.Prefetch(KeyIndex::Hash(keys[i]));
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) table.index.Prefetch(KeyIndex::Hash(keys[i + kAhead]));
    auto [slot, inserted] = table.index.FindOrInsert(keys[i], static_cast<uint32_t>(table.keys.size()));
    if (slots != nullptr) slots[i] = slot;
    if (!inserted) continue;
    table.keys.push_back(keys[i]);
    missing.push_back(keys[i]);
  }
  return missing;
}

PsClient::RowSink GeoCommunicator::Impl::Store(const std::string& name, Sparse& table, size_t first) {
  return [&name, &table, first](std::span<const uint32_t> positions, const float* rows, int64_t dim) {
    if (table.value.size() < table.keys.size() * dim) {  // first answer since keys were admitted
      table.dim = dim;
      table.value.resize(table.keys.size() * dim);
      table.base.resize(table.keys.size() * dim);
    }
    FLOTILLA_ENFORCE_EQ(dim, table.dim, "GEO sparse table '", name, "' changed its width");
    for (size_t j = 0; j < positions.size(); ++j) {
      const size_t at = (first + positions[j]) * dim;
      CopyRow(table.value.data() + at, rows + j * dim, dim);
      CopyRow(table.base.data() + at, rows + j * dim, dim);
    }
  };
}

std::vector<uint32_t> GeoCommunicator::Impl::Fetch(const std::string& name, Sparse& table,
                                                   std::span<const int64_t> keys) {
  std::vector<uint32_t> slots(keys.size());
  const std::vector<int64_t> missing = Admit(table, keys, slots.data());
  if (!missing.empty()) client->PullSparse(name, missing, Store(name, table, table.keys.size() - missing.size()));
  return slots;
}

void GeoCommunicator::Prefetch(std::span<const TableKeys> tables) {
  std::vector<std::vector<int64_t>> missing;
  missing.reserve(tables.size());  // the pulls' key spans point into it
  std::vector<PsClient::TablePull> pulls;
  for (const TableKeys& t : tables) {
    Impl::Sparse& table = impl_->Table(t.name);
    missing.push_back(Impl::Admit(table, t.keys, nullptr));
    if (missing.back().empty()) continue;
    const size_t first = table.keys.size() - missing.back().size();
    pulls.push_back({t.name, missing.back(), Impl::Store(t.name, table, first)});
  }
  if (!pulls.empty()) impl_->client->PullSparseTables(pulls);
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

void GeoCommunicator::PullSparse(const std::string& name, std::span<const int64_t> keys,
                                 const PsClient::RowSink& sink) {
  Impl::Sparse& table = impl_->Table(name);
  const std::vector<uint32_t> slots = impl_->Fetch(name, table, keys);
  for (uint32_t i = 0; i < keys.size(); ++i) {
    sink(std::span<const uint32_t>(&i, 1), table.value.data() + slots[i] * table.dim, table.dim);
  }
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
  if (++impl_->steps % impl_->options.k_steps != 0) return false;
  Sync();
  return true;
}

void GeoCommunicator::Impl::SyncDense() {
  if (dense.empty()) return;
  std::vector<DenseVar> deltas;
  for (const auto& [name, d] : dense) {
    Tensor delta(DType::kFloat32, d.param.dims());
    float* o = delta.mutable_data<float>();
    const float* p = d.param.data<float>();
    const float* b = d.base.data<float>();
    for (int64_t i = 0; i < delta.numel(); ++i) o[i] = (p[i] - b[i]) * scale;
    deltas.push_back({name, delta, d.row_width});
  }
  client->PushDenseDelta(deltas);
  auto vars = DenseVars();
  client->PullDense(vars);
  for (auto& [name, d] : dense) d.base = d.param.Clone();
}

// Pushes the rows that changed since they were fetched, then forgets the
// cache so the next pulls see other trainers' updates.
void GeoCommunicator::Impl::SyncSparse(const std::string& name, Sparse& table) {
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
  client->PushSparseDelta(name, keys,
                          Tensor::FromVector(deltas, {static_cast<int64_t>(keys.size()), table.dim}));
}

void GeoCommunicator::Sync() {
  impl_->SyncDense();
  for (auto& [name, table] : impl_->sparse) impl_->SyncSparse(name, table);
  ++impl_->syncs;
}

int64_t GeoCommunicator::syncs() const { return impl_->syncs; }

void GeoCommunicator::Restart() {
  auto vars = impl_->DenseVars();
  if (!vars.empty()) impl_->client->PullDense(vars);
  for (auto& [name, d] : impl_->dense) d.base = d.param.Clone();
  for (auto& [name, table] : impl_->sparse) table.Clear();
}

}  // namespace flotilla::ps
