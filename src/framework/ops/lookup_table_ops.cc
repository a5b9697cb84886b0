// lookup_table (embedding) and lookup_table_v2.
//
// Out[i] = W[Ids[i]]. lookup_table expects Ids with a trailing dimension of 1
// ([N, 1] → Out [N, D]; a 1-D [N] is accepted too); lookup_table_v2 appends
// D to any Ids shape. Ids equal to padding_idx read zeros and send no
// gradient. The gradient is a dense [V, D] tensor, or with is_sparse a
// SelectedRows holding one row per id (duplicates kept; consumers merge).
#include <cstring>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/input_checks.h"

namespace flotilla::ops {
namespace {

constexpr int64_t kNoPadding = -1;

// Out's dims for the given Ids dims and embedding width.
Dims LookupOutDims(Dims ids, int64_t width, bool v2) {
  if (!v2 && ids.size() > 1 && ids.back() == 1) ids.pop_back();
  ids.push_back(width);
  return ids;
}

int64_t PaddingIdx(int64_t padding_idx, int64_t height, const std::string& where) {
  FLOTILLA_ENFORCE(padding_idx == kNoPadding || (padding_idx >= 0 && padding_idx < height), where,
                   ": attribute 'padding_idx' = ", padding_idx, " must be -1 (none) or in [0, ",
                   height, ")");
  return padding_idx;
}

void LookupShape(InferShapeContext& ctx, bool v2) {
  Dims w = ctx.InputDim("W");
  FLOTILLA_ENFORCE(w.size() == 2, ctx.Where(), ": W must be 2-D [rows, width], got ",
                   DimsToString(w));
  FLOTILLA_ENFORCE(ctx.InputDType("Ids") == DType::kInt64, ctx.Where(), ": Ids must be int64, got ",
                   DTypeName(ctx.InputDType("Ids")));
  ctx.SetOutputDim("Out", LookupOutDims(ctx.InputDim("Ids"), w[1], v2));
  ctx.SetOutputDType("Out", ctx.InputDType("W"));
}

// The ids, each checked against the table height.
const int64_t* CheckedIds(const ExecutionContext& ctx, const Tensor& ids, int64_t height) {
  FLOTILLA_ENFORCE(ids.dtype() == DType::kInt64, ctx.Where(), ": Ids must be int64, got ",
                   DTypeName(ids.dtype()));
  const int64_t* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (p[i] < 0 || p[i] >= height) {
      FLOTILLA_THROW(InvalidArgument, ctx.Where(), ": id ", p[i], " at position ", i,
                     " is out of range for table W with ", height, " rows");
    }
  }
  return p;
}

const Tensor& CheckedTable(const ExecutionContext& ctx) {
  const Tensor& w = ctx.Input("W");
  FLOTILLA_ENFORCE(w.rank() == 2, ctx.Where(), ": W must be 2-D [rows, width], got ",
                   DimsToString(w.dims()));
  return w;
}

void LookupKernel(ExecutionContext& ctx, bool v2) {
  const Tensor& w = CheckedTable(ctx);
  const Tensor& ids_t = ctx.Input("Ids");
  int64_t height = w.dim(0), width = w.dim(1);
  const int64_t* ids = CheckedIds(ctx, ids_t, height);
  int64_t pad = PaddingIdx(ctx.Attr<int64_t>("padding_idx"), height, ctx.Where());
  Tensor* out = ctx.Output("Out");
  out->Resize(LookupOutDims(ids_t.dims(), width, v2));
  VisitFloatDType(w.dtype(), ctx.Where(), [&]<typename T>() {
    const T* src = w.data<T>();
    T* dst = out->mutable_data<T>();
    size_t row_bytes = static_cast<size_t>(width) * sizeof(T);
    for (int64_t i = 0; i < ids_t.numel(); ++i) {
      if (ids[i] == pad) {
        std::memset(dst + i * width, 0, row_bytes);
      } else {
        std::memcpy(dst + i * width, src + ids[i] * width, row_bytes);
      }
    }
  });
}

// ---- lookup_table_grad: W@GRAD (dense or SelectedRows) from Out@GRAD ----

void LookupGradShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("W@GRAD", ctx.InputDim("W"));
  ctx.SetOutputDType("W@GRAD", ctx.InputDType("W"));
  bool sparse = ctx.Attr<bool>("is_sparse");
  ctx.SetOutputVarType("W@GRAD", sparse ? VarType::kSelectedRows : VarType::kDenseTensor);
}

template <typename T>
void DenseLookupGrad(const int64_t* ids, int64_t n, int64_t pad, const Tensor& dout, Tensor* dw) {
  int64_t width = dw->dim(1);
  T* d = dw->mutable_data<T>();
  std::memset(d, 0, dw->nbytes());
  const T* g = dout.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] == pad) continue;
    T* row = d + ids[i] * width;
    for (int64_t j = 0; j < width; ++j) row[j] += g[i * width + j];
  }
}

// rows = ids, value = Out@GRAD as [N, D] with padding rows zeroed.
template <typename T>
void SparseLookupGrad(const int64_t* ids, int64_t n, int64_t pad, const Tensor& dout,
                      int64_t height, int64_t width, ScopeVar* var) {
  if (!var->IsSelectedRows()) var->ResetSelectedRows();
  SelectedRows* rows = var->GetMutableSelectedRows();
  rows->mutable_rows()->assign(ids, ids + n);
  rows->set_height(height);
  Tensor* value = rows->mutable_value();
  value->Resize({n, width});
  T* v = value->mutable_data<T>();
  std::memcpy(v, dout.data<T>(), static_cast<size_t>(n * width) * sizeof(T));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] == pad) std::memset(v + i * width, 0, static_cast<size_t>(width) * sizeof(T));
  }
}

void LookupGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("W@GRAD")) return;
  const Tensor& w = CheckedTable(ctx);
  const Tensor& ids_t = ctx.Input("Ids");
  int64_t height = w.dim(0), width = w.dim(1), n = ids_t.numel();
  const int64_t* ids = CheckedIds(ctx, ids_t, height);
  int64_t pad = PaddingIdx(ctx.Attr<int64_t>("padding_idx"), height, ctx.Where());
  const Tensor& dout = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(dout.numel() == n * width, ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(dout.dims()), " but ", n, " ids of width ", width, " were looked up");
  ExpectDType(dout, w.dtype(), ctx.Where(), "Out@GRAD");
  VisitFloatDType(w.dtype(), ctx.Where(), [&]<typename T>() {
    if (ctx.Attr<bool>("is_sparse")) {
      return SparseLookupGrad<T>(ids, n, pad, dout, height, width, ctx.OutputVar("W@GRAD"));
    }
    Tensor* dw = ctx.Output("W@GRAD");
    dw->Resize(w.dims());
    DenseLookupGrad<T>(ids, n, pad, dout, dw);
  });
}

GradOpMaker LookupGradMaker(std::string grad_type) {
  return [grad_type](const OpDesc& fwd) -> std::vector<OpDesc> {
    return GradOpBuilder(fwd, grad_type).ForwardInputs({"W", "Ids"}).OutputGrads({"Out"}).InputGrads({"W"});
  };
}

void RegisterLookup(const std::string& type, bool v2) {
  AttributeMap attrs = {{"is_sparse", false},
                        {"is_distributed", false},
                        {"padding_idx", int64_t{kNoPadding}}};
  auto& r = OpRegistry::Global();
  r.Register({.type = type,
              .infer_shape = [v2](InferShapeContext& ctx) { LookupShape(ctx, v2); },
              .kernels = {{Place::Kind::kCPU, [v2](ExecutionContext& ctx) { LookupKernel(ctx, v2); }}},
              .grad_maker = LookupGradMaker(type + "_grad"),
              .default_attrs = attrs,
              .no_grad_inputs = {"Ids"},
              .share_lod = {{"Ids", "Out"}}});
  r.Register({.type = type + "_grad",
              .infer_shape = LookupGradShape,
              .kernels = {{Place::Kind::kCPU, LookupGradKernel}},
              .default_attrs = attrs});
}

}  // namespace

void RegisterLookupTableOps() {
  RegisterLookup("lookup_table", false);
  RegisterLookup("lookup_table_v2", true);
}

}  // namespace flotilla::ops
