// distributed_lookup_table and its gradient: embedding rows that live on the
// parameter servers. Only the batch's distinct ids are pulled.
#include <algorithm>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <optional>

#include "fleet/ps/ps_ops.h"
#include "flotilla/common/enforce.h"
#include "flotilla/core/key_index.h"
#include "flotilla/core/row_copy.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/ps/trainer_runtime.h"

namespace flotilla::fleet {

namespace {

// Out's dims: lookup_table drops a trailing 1 of Ids; v2 keeps Ids' shape.
Dims OutDims(Dims ids, int64_t dim, bool v2) {
  if (!v2 && ids.size() > 1 && ids.back() == 1) ids.pop_back();
  ids.push_back(dim);
  return ids;
}

void LookupShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", OutDims(ctx.InputDim("Ids"), ctx.Attr<int64_t>("dim"), ctx.Attr<bool>("v2")));
  ctx.SetOutputDType("Out", DType::kFloat32);
}

struct UniqueIds {
  std::vector<int64_t> keys;      // distinct, in first-seen order
  std::vector<int64_t> position;  // per id: its index in keys, -1 for padding
};

UniqueIds Distinct(const int64_t* ids, int64_t n, int64_t padding_idx) {
  UniqueIds u;
  KeyIndex index;
  index.Reserve(static_cast<size_t>(n));
  u.keys.reserve(static_cast<size_t>(n));
  u.position.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] == padding_idx) { u.position[i] = -1; continue; }
    auto [slot, fresh] = index.FindOrInsert(ids[i], static_cast<uint32_t>(u.keys.size()));
    if (fresh) u.keys.push_back(ids[i]);
    u.position[i] = slot;
  }
  return u;
}

// For each distinct key, the output rows that take its row (CSR).
struct Fanout {
  std::vector<uint32_t> first;  // [keys + 1]
  std::vector<uint32_t> out;    // output row indices, grouped by key
};

Fanout OutputsOfKeys(const UniqueIds& u) {
  Fanout f;
  f.first.assign(u.keys.size() + 1, 0);
  for (int64_t p : u.position) {
    if (p >= 0) ++f.first[p + 1];
  }
  for (size_t k = 0; k < u.keys.size(); ++k) f.first[k + 1] += f.first[k];
  f.out.resize(f.first.back());
  std::vector<uint32_t> fill(f.first.begin(), f.first.end() - 1);
  for (size_t i = 0; i < u.position.size(); ++i) {
    if (u.position[i] >= 0) f.out[fill[u.position[i]]++] = static_cast<uint32_t>(i);
  }
  return f;
}

// Pulls the distinct keys and writes each row straight from the servers'
// replies into every output row of its id.
void FillOutput(ps::TrainerRuntime& rt, const std::string& table, const UniqueIds& u, int64_t dim,
                float* out) {
  const size_t d = static_cast<size_t>(dim);
  const Fanout f = OutputsOfKeys(u);
  auto sink = [&](std::span<const uint32_t> positions, const float* rows, int64_t got_dim) {
    FLOTILLA_ENFORCE_EQ(got_dim, dim, "sparse table '", table, "' has rows of another width");
    for (size_t j = 0; j < positions.size(); ++j) {
      const uint32_t k = positions[j];
      for (uint32_t o = f.first[k]; o < f.first[k + 1]; ++o) CopyRow(out + f.out[o] * d, rows + j * d, d);
    }
  };
  rt.client->PullSparse(table, u.keys, sink);
}

// Sync and async modes: the rows ps_prefetch_sparse pulled for this step's
// lookups, one entry per lookup, on the thread running the step (each
// executor runs a program's ops on one thread). A lookup takes the entry of
// its table whose distinct keys are exactly its own, so rows can never
// serve other ids; what a step leaves behind is dropped by the next prefetch.
struct PrefetchedRows {
  std::string table;
  std::vector<int64_t> keys;  // distinct, first-seen order (Distinct)
  std::vector<float> rows;    // [keys, dim]
  int64_t dim = 0;
};
thread_local std::vector<PrefetchedRows> prefetched;

// Async mode: the rows of later steps, being pulled on background threads
// (fleet::prefetch_sparse with the next batches), oldest first, at most
// kMaxAhead. A ps_prefetch_sparse of this thread takes the pull whose
// tables and keys are exactly its lookups', dropping the older ones.
struct PullAhead {
  std::unique_ptr<std::vector<PrefetchedRows>> rows;
  std::future<void> done;
};
constexpr size_t kMaxAhead = 4;
thread_local std::deque<PullAhead> ahead;

// Pulls every table's rows of `rows` (keys set) into it in one round trip.
void PullRows(ps::PsClient& client, std::vector<PrefetchedRows>& rows) {
  std::vector<ps::PsClient::TablePull> pulls;
  for (PrefetchedRows& p : rows) {
    if (p.keys.empty()) continue;
    pulls.push_back({p.table, p.keys, [&p](std::span<const uint32_t> positions, const float* got, int64_t dim) {
                       const size_t d = static_cast<size_t>(dim);
                       if (p.rows.empty()) p.rows.resize(p.keys.size() * d);
                       p.dim = dim;
                       for (size_t j = 0; j < positions.size(); ++j) {
                         CopyRow(p.rows.data() + positions[j] * d, got + j * d, d);
                       }
                     }});
  }
  if (!pulls.empty()) client.PullSparseTables(pulls);
}

// Each lookup's table and distinct keys, rows not yet pulled.
std::vector<PrefetchedRows> KeysOfLookups(const std::vector<std::string>& tables,
                                          const std::vector<const Tensor*>& ids, const std::vector<int64_t>& padding) {
  std::vector<PrefetchedRows> rows(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    rows[i].table = tables[i];
    rows[i].keys = Distinct(ids[i]->data<int64_t>(), ids[i]->numel(), padding[i]).keys;
  }
  return rows;
}

bool SameLookups(const std::vector<PrefetchedRows>& a, const std::vector<PrefetchedRows>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].table != b[i].table || a[i].keys != b[i].keys) return false;
  }
  return true;
}

// The rows of the pull ahead for exactly `want`'s tables and keys (waiting
// for it; the older pulls are dropped); nullopt when there is none.
std::optional<std::vector<PrefetchedRows>> TakeAhead(const std::vector<PrefetchedRows>& want) {
  size_t i = 0;
  while (i < ahead.size() && !SameLookups(*ahead[i].rows, want)) ++i;
  if (i == ahead.size()) return std::nullopt;
  PullAhead a = std::move(ahead[i]);
  for (size_t d = 0; d < i; ++d) ahead[d].done.wait();
  ahead.erase(ahead.begin(), ahead.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  a.done.get();  // rethrows its error
  return std::move(*a.rows);
}

// Moves out the prefetched rows of `table` for exactly `keys`, if any.
std::optional<PrefetchedRows> TakePrefetched(const std::string& table, const std::vector<int64_t>& keys) {
  for (auto it = prefetched.begin(); it != prefetched.end(); ++it) {
    if (it->table != table || it->keys != keys) continue;
    PrefetchedRows found = std::move(*it);
    prefetched.erase(it);
    return found;
  }
  return std::nullopt;
}

void FillFromPrefetched(const PrefetchedRows& pre, const UniqueIds& u, int64_t dim, float* out) {
  FLOTILLA_ENFORCE_EQ(pre.dim, dim, "sparse table '", pre.table, "' has rows of another width");
  const size_t d = static_cast<size_t>(dim);
  for (size_t i = 0; i < u.position.size(); ++i) {
    if (u.position[i] >= 0) CopyRow(out + i * d, pre.rows.data() + static_cast<size_t>(u.position[i]) * d, d);
  }
}

void LookupKernel(ExecutionContext& ctx) {
  auto rt = ps::RequireTrainerRuntime("op 'distributed_lookup_table'");
  const Tensor& ids_t = ctx.Input("Ids");
  FLOTILLA_CHECK(ids_t.dtype() == DType::kInt64, InvalidArgument, ctx.Where(), ": Ids must be int64");
  int64_t n = ids_t.numel(), dim = ctx.Attr<int64_t>("dim");
  Tensor* out = ctx.Output("Out");
  out->Resize(OutDims(ids_t.dims(), dim, ctx.Attr<bool>("v2")));
  float* o = out->mutable_data<float>();
  if (rt->mode == ps::PsMode::kGeo) {  // the rows are in the trainer's cache (ps_prefetch_sparse)
    std::lock_guard<std::mutex> lock(internal::GeoMutex());
    rt->geo->Gather(ctx.Attr<std::string>("table_name"), {ids_t.data<int64_t>(), static_cast<size_t>(n)},
                    ctx.Attr<int64_t>("padding_idx"), o, dim);
    return;
  }
  UniqueIds u = Distinct(ids_t.data<int64_t>(), n, ctx.Attr<int64_t>("padding_idx"));
  for (int64_t i = 0; i < n; ++i) {
    if (u.position[i] < 0) std::memset(o + i * dim, 0, sizeof(float) * dim);
  }
  if (u.keys.empty()) return;
  const std::string& table = ctx.Attr<std::string>("table_name");
  if (std::optional<PrefetchedRows> pre = TakePrefetched(table, u.keys)) {
    FillFromPrefetched(*pre, u, dim, o);
  } else {
    FillOutput(*rt, table, u, dim, o);
  }
}

// Sync and async modes: every lookup's distinct ids pulled in one round
// trip (PullSparseTables) into this thread's PrefetchedRows, or taken from
// the pull ahead started for them (async).
void PrefetchForLookups(ps::TrainerRuntime& rt, const std::vector<std::string>& tables,
                        const std::vector<const Tensor*>& ids, const std::vector<int64_t>& padding) {
  prefetched.clear();
  std::vector<PrefetchedRows> rows = KeysOfLookups(tables, ids, padding);
  if (std::optional<std::vector<PrefetchedRows>> pulled = TakeAhead(rows)) {
    prefetched = std::move(*pulled);
    return;
  }
  PullRows(*rt.client, rows);
  prefetched = std::move(rows);
}

// The distinct ids of every lookup the step makes (Ids[i] of table
// table_names[i]) are pulled in one round trip to the servers, so the
// lookups after it read locally instead of each waiting on its own pull:
// into GEO's cache, or (sync, async) into this thread's PrefetchedRows.
void PrefetchKernel(ExecutionContext& ctx) {
  auto rt = ps::RequireTrainerRuntime("op 'ps_prefetch_sparse'");
  const auto& tables = ctx.Attr<std::vector<std::string>>("table_names");
  const auto& padding = ctx.Attr<std::vector<int64_t>>("padding_idxs");
  const std::vector<const Tensor*> ids = ctx.MultiInput("Ids");
  FLOTILLA_CHECK(ids.size() == tables.size() && padding.size() == tables.size(), InvalidArgument,
                 ctx.Where(), ": ", ids.size(), " Ids inputs for ", tables.size(), " table_names and ",
                 padding.size(), " padding_idxs");
  std::vector<std::vector<int64_t>> keys(ids.size());
  std::vector<ps::GeoCommunicator::TableKeys> want;
  for (size_t i = 0; i < ids.size(); ++i) {
    FLOTILLA_CHECK(ids[i]->dtype() == DType::kInt64, InvalidArgument, ctx.Where(), ": Ids must be int64");
  }
  if (rt->mode != ps::PsMode::kGeo) return PrefetchForLookups(*rt, tables, ids, padding);
  for (size_t i = 0; i < ids.size(); ++i) {
    keys[i] = internal::WithoutPadding(ids[i]->data<int64_t>(), ids[i]->numel(), padding[i]);
    want.push_back({tables[i], keys[i]});
  }
  std::lock_guard<std::mutex> lock(internal::GeoMutex());
  rt->geo->Prefetch(want);
}

// The clicks of the ids: the Click input holds one value per instance
// (its label); an instance's ids share it: the ids of its sequence when Ids
// carries sequence offsets, else an equal share of the ids. Empty without
// the input.
std::vector<float> ClicksOfIds(const ExecutionContext& ctx, const Tensor& ids_t) {
  if (!ctx.HasInput("Click")) return {};
  const Tensor& click = ctx.Input("Click");
  const int64_t instances = click.numel(), ids = ids_t.numel();
  if (ids_t.has_lod()) {
    const LoDLevel& off = ids_t.lod().back();
    FLOTILLA_CHECK(static_cast<int64_t>(off.size()) == instances + 1 && off.back() == ids, InvalidArgument,
                   ctx.Where(), ": Ids holds ", off.size() - 1, " sequences for ", instances, " clicks");
    std::vector<float> out(static_cast<size_t>(ids));
    for (int64_t s = 0; s < instances; ++s) {
      std::fill(out.begin() + off[s], out.begin() + off[s + 1], click.data<float>()[s]);
    }
    return out;
  }
  FLOTILLA_CHECK(instances > 0 && ids % instances == 0, InvalidArgument, ctx.Where(), ": ", ids,
                 " ids are not a whole number of ids per instance of the ", instances, " clicks");
  std::vector<float> out(static_cast<size_t>(ids));
  const float* c = click.data<float>();
  for (int64_t i = 0; i < ids; ++i) out[i] = c[i / (ids / instances)];
  return out;
}

// W@GRAD = SelectedRows{rows = the distinct ids, value = the sum of
// Out@GRAD's rows of each}: repeated ids are merged on the trainer, so a
// push carries each key once (what the servers' rules would sum anyway;
// Paddle merges before its sparse optimizers too). Padding ids are left
// out. With attribute with_stats each row also carries the id's show
// (occurrences) and click count: [rows, dim + 2], the push format of
// tables that keep accessor statistics.
void LookupGradKernel(ExecutionContext& ctx) {
  const Tensor& ids_t = ctx.Input("Ids");
  const Tensor& dout = ctx.Input("Out@GRAD");
  int64_t n = ids_t.numel(), dim = ctx.Attr<int64_t>("dim");
  ScopeVar* var = ctx.OutputVar("W@GRAD");
  if (var == nullptr) return;
  const bool with_stats = ctx.AttrOr<bool>("with_stats", false);
  const int64_t width = dim + (with_stats ? 2 : 0);
  const std::vector<float> clicks = with_stats ? ClicksOfIds(ctx, ids_t) : std::vector<float>{};
  UniqueIds u = Distinct(ids_t.data<int64_t>(), n, ctx.Attr<int64_t>("padding_idx"));
  SelectedRows* g = var->IsSelectedRows() ? var->GetMutableSelectedRows() : var->ResetSelectedRows();
  g->set_height(ctx.Attr<int64_t>("height"));
  Tensor* value = g->mutable_value();
  value->Resize({static_cast<int64_t>(u.keys.size()), width});
  float* v = value->mutable_data<float>();
  std::memset(v, 0, sizeof(float) * u.keys.size() * width);
  const float* d = dout.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (u.position[i] < 0) continue;
    float* row = v + u.position[i] * width;
    const float* in = d + i * dim;
    for (int64_t j = 0; j < dim; ++j) row[j] += in[j];
    if (!with_stats) continue;
    row[dim] += 1.0f;
    if (!clicks.empty()) row[dim + 1] += clicks[i];
  }
  *g->mutable_rows() = std::move(u.keys);
}

}  // namespace

namespace internal {

void PullAheadForLookups(const std::vector<std::string>& tables, const std::vector<const Tensor*>& ids,
                         const std::vector<int64_t>& padding) {
  auto rt = ps::RequireTrainerRuntime("fleet::prefetch_sparse");
  if (ahead.size() == kMaxAhead) {  // the oldest, which no step took
    ahead.front().done.wait();
    ahead.pop_front();
  }
  auto rows = std::make_unique<std::vector<PrefetchedRows>>(KeysOfLookups(tables, ids, padding));
  std::vector<PrefetchedRows>* target = rows.get();
  ahead.push_back({std::move(rows), std::async(std::launch::async, [rt, target] { PullRows(*rt->client, *target); })});
}

std::vector<int64_t> WithoutPadding(const int64_t* ids, int64_t n, int64_t padding_idx) {
  std::vector<int64_t> keys;
  keys.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] != padding_idx) keys.push_back(ids[i]);
  }
  return keys;
}

void RegisterPsLookupOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "distributed_lookup_table",
              .infer_shape = LookupShape,
              .kernels = {{Place::Kind::kCPU, LookupKernel}},
              .default_attrs = {{"padding_idx", int64_t{-1}}, {"v2", false}},
              .no_grad_inputs = {"Ids"},
              .share_lod = {{"Ids", "Out"}}});
  r.Register({.type = "ps_prefetch_sparse", .kernels = {{Place::Kind::kCPU, PrefetchKernel}}});
  r.Register({.type = "distributed_lookup_table_grad",
              .kernels = {{Place::Kind::kCPU, LookupGradKernel}},
              .default_attrs = {{"padding_idx", int64_t{-1}}, {"with_stats", false}}});
}

}  // namespace internal

}  // namespace flotilla::fleet
