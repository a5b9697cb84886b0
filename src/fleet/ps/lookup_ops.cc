// distributed_lookup_table and its gradient: embedding rows that live on the
// parameter servers. Only the batch's distinct ids are pulled.
#include <cstring>

#include "fleet/ps/ps_ops.h"
#include "flotilla/common/enforce.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/ps/trainer_runtime.h"
#include "ps/key_index.h"

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
  ps::KeyIndex index;
  u.position.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] == padding_idx) { u.position[i] = -1; continue; }
    auto [slot, fresh] = index.FindOrInsert(ids[i], static_cast<uint32_t>(u.keys.size()));
    if (fresh) u.keys.push_back(ids[i]);
    u.position[i] = slot;
  }
  return u;
}

Tensor PullRows(ps::TrainerRuntime& rt, const std::string& table, const std::vector<int64_t>& keys) {
  if (rt.mode == ps::PsMode::kGeo) return rt.geo->PullSparse(table, keys);
  return rt.client->PullSparse(table, keys);
}

void LookupKernel(ExecutionContext& ctx) {
  auto rt = ps::RequireTrainerRuntime("op 'distributed_lookup_table'");
  const Tensor& ids_t = ctx.Input("Ids");
  FLOTILLA_CHECK(ids_t.dtype() == DType::kInt64, InvalidArgument, ctx.Where(), ": Ids must be int64");
  int64_t n = ids_t.numel(), dim = ctx.Attr<int64_t>("dim");
  UniqueIds u = Distinct(ids_t.data<int64_t>(), n, ctx.Attr<int64_t>("padding_idx"));
  std::string table = ctx.Attr<std::string>("table_name");
  Tensor rows = u.keys.empty() ? Tensor() : PullRows(*rt, table, u.keys);
  Tensor* out = ctx.Output("Out");
  out->Resize(OutDims(ids_t.dims(), dim, ctx.Attr<bool>("v2")));
  float* o = out->mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) {
    float* dst = o + i * dim;
    if (u.position[i] < 0) { std::memset(dst, 0, sizeof(float) * dim); continue; }
    std::memcpy(dst, rows.data<float>() + u.position[i] * dim, sizeof(float) * dim);
  }
}

// W@GRAD = SelectedRows{rows = Ids, value = Out@GRAD as [N, dim]}; padding
// ids contribute zero rows.
void LookupGradKernel(ExecutionContext& ctx) {
  const Tensor& ids_t = ctx.Input("Ids");
  const Tensor& dout = ctx.Input("Out@GRAD");
  int64_t n = ids_t.numel(), dim = ctx.Attr<int64_t>("dim"), pad = ctx.Attr<int64_t>("padding_idx");
  const int64_t* ids = ids_t.data<int64_t>();
  ScopeVar* var = ctx.OutputVar("W@GRAD");
  if (var == nullptr) return;
  SelectedRows* g = var->IsSelectedRows() ? var->GetMutableSelectedRows() : var->ResetSelectedRows();
  g->mutable_rows()->assign(ids, ids + n);
  g->set_height(ctx.Attr<int64_t>("height"));
  Tensor* value = g->mutable_value();
  value->Resize({n, dim});
  float* v = value->mutable_data<float>();
  std::memcpy(v, dout.data<float>(), sizeof(float) * n * dim);
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] == pad) std::memset(v + i * dim, 0, sizeof(float) * dim);
  }
}

}  // namespace

namespace internal {

void RegisterPsLookupOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "distributed_lookup_table",
              .infer_shape = LookupShape,
              .kernels = {{Place::Kind::kCPU, LookupKernel}},
              .default_attrs = {{"padding_idx", int64_t{-1}}, {"v2", false}},
              .no_grad_inputs = {"Ids"}});
  r.Register({.type = "distributed_lookup_table_grad",
              .kernels = {{Place::Kind::kCPU, LookupGradKernel}},
              .default_attrs = {{"padding_idx", int64_t{-1}}}});
}

}  // namespace internal

}  // namespace flotilla::fleet
