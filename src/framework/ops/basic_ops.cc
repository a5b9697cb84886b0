// fill_constant, sum, assign, fill_zeros_like: the ops backward itself needs;
// and fill_constant_batch_size_like.
#include <cstring>

#include "flotilla/core/math.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"

namespace flotilla::ops {
namespace {

// ---- fill_constant: Out = value, shape and dtype from attributes ----

void FillConstantShape(InferShapeContext& ctx) {
  auto shape = ctx.Attr<std::vector<int64_t>>("shape");
  ctx.SetOutputDim("Out", Dims(shape.begin(), shape.end()));
  ctx.SetOutputDType("Out", static_cast<DType>(ctx.Attr<int32_t>("dtype")));
}

void FillConstantKernel(ExecutionContext& ctx) {
  auto shape = ctx.Attr<std::vector<int64_t>>("shape");
  auto dtype = static_cast<DType>(ctx.Attr<int32_t>("dtype"));
  double value = ctx.Attr<double>("value");
  Tensor* out = ctx.Output("Out");
  out->Resize(Dims(shape.begin(), shape.end()));
  VisitDType(dtype, [&]<typename T>() {
    T* p = out->mutable_data<T>();
    for (int64_t i = 0; i < out->numel(); ++i) p[i] = static_cast<T>(value);
  });
}

// ---- fill_constant_batch_size_like: fill_constant whose dim output_dim_idx
// is Input's dim input_dim_idx (the batch size, known only at run time) ----

Dims BatchSizeLikeDims(const std::string& where, std::vector<int64_t> shape, const Dims& input,
                       int32_t input_dim_idx, int32_t output_dim_idx) {
  FLOTILLA_ENFORCE(input_dim_idx >= 0 && input_dim_idx < static_cast<int32_t>(input.size()), where,
                   ": input_dim_idx ", input_dim_idx, " is outside Input's dims ", DimsToString(input));
  FLOTILLA_ENFORCE(output_dim_idx >= 0 && output_dim_idx < static_cast<int32_t>(shape.size()), where,
                   ": output_dim_idx ", output_dim_idx, " is outside shape ",
                   DimsToString(Dims(shape.begin(), shape.end())));
  shape[output_dim_idx] = input[input_dim_idx];
  return Dims(shape.begin(), shape.end());
}

void FillBatchSizeLikeShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", BatchSizeLikeDims(ctx.Where(), ctx.Attr<std::vector<int64_t>>("shape"),
                                            ctx.InputDim("Input"), ctx.Attr<int32_t>("input_dim_idx"),
                                            ctx.Attr<int32_t>("output_dim_idx")));
  ctx.SetOutputDType("Out", static_cast<DType>(ctx.Attr<int32_t>("dtype")));
}

void FillBatchSizeLikeKernel(ExecutionContext& ctx) {
  const Dims dims = BatchSizeLikeDims(ctx.Where(), ctx.Attr<std::vector<int64_t>>("shape"),
                                      ctx.Input("Input").dims(), ctx.Attr<int32_t>("input_dim_idx"),
                                      ctx.Attr<int32_t>("output_dim_idx"));
  const double value = ctx.Attr<double>("value");
  Tensor* out = ctx.Output("Out");
  out->Resize(dims);
  VisitDType(static_cast<DType>(ctx.Attr<int32_t>("dtype")), [&]<typename T>() {
    T* p = out->mutable_data<T>();
    for (int64_t i = 0; i < out->numel(); ++i) p[i] = static_cast<T>(value);
  });
}

// ---- sum: Out = Σ X_i, dense or SelectedRows ----

void SumShape(InferShapeContext& ctx) {
  ctx.ShareDim("X", "Out");
  ctx.SetOutputVarType("Out", ctx.InputVarType("X"));
  for (size_t i = 0; i < ctx.op().Inputs("X").size(); ++i) {
    if (ctx.InputVarType("X", i) == VarType::kDenseTensor) {
      ctx.SetOutputVarType("Out", VarType::kDenseTensor);
    }
  }
}

// Adds a SelectedRows into a dense tensor of its full shape.
template <typename T>
void AddRowsInto(const SelectedRows& rows, Tensor* dense) {
  int64_t width = rows.row_width();
  const T* src = rows.value().data<T>();
  T* dst = dense->data<T>();
  for (size_t r = 0; r < rows.rows().size(); ++r) {
    T* out = dst + rows.rows()[r] * width;
    for (int64_t j = 0; j < width; ++j) out[j] += src[r * width + j];
  }
}

void SumSelectedRows(ExecutionContext& ctx) {
  std::vector<int64_t> rows;
  std::vector<const SelectedRows*> parts;
  for (size_t i = 0; i < ctx.InputSize("X"); ++i) {
    ScopeVar* v = ctx.InputVar("X", i);
    if (v == nullptr) continue;
    parts.push_back(&v->GetSelectedRows());
    rows.insert(rows.end(), parts.back()->rows().begin(), parts.back()->rows().end());
  }
  FLOTILLA_ENFORCE(!parts.empty(), ctx.Where(), ": no inputs");
  Dims dims = parts[0]->value().dims();
  dims[0] = static_cast<int64_t>(rows.size());
  Tensor value(parts[0]->value().dtype(), dims);
  int64_t offset = 0;
  for (const SelectedRows* p : parts) {
    if (p->value().nbytes() > 0) {
      std::memcpy(static_cast<char*>(value.raw_data()) + offset, p->value().raw_data(),
                  p->value().nbytes());
    }
    offset += static_cast<int64_t>(p->value().nbytes());
  }
  *ctx.OutputVar("Out")->ResetSelectedRows() =
      SelectedRows(std::move(rows), std::move(value), parts[0]->height());
}

void SumKernel(ExecutionContext& ctx) {
  ScopeVar* out_var = ctx.OutputVar("Out");
  bool all_rows = true;
  for (size_t i = 0; i < ctx.InputSize("X"); ++i) {
    ScopeVar* v = ctx.InputVar("X", i);
    if (v != nullptr && !v->IsSelectedRows()) all_rows = false;
  }
  if (all_rows) return SumSelectedRows(ctx);
  // Dense result: dense inputs summed, SelectedRows inputs scattered in.
  std::vector<const Tensor*> dense;
  for (size_t i = 0; i < ctx.InputSize("X"); ++i) {
    ScopeVar* v = ctx.InputVar("X", i);
    if (v != nullptr && !v->IsSelectedRows()) dense.push_back(&v->GetTensor());
  }
  FLOTILLA_ENFORCE(!dense.empty(), ctx.Where(), ": no dense input");
  for (size_t i = 1; i < dense.size(); ++i) {
    FLOTILLA_ENFORCE_EQ(dense[i]->numel(), dense[0]->numel(), ctx.Where(), ": input ", i, " has shape ",
                        DimsToString(dense[i]->dims()), " but input 0 has ", DimsToString(dense[0]->dims()));
  }
  // Summed into Out's own buffer, kept across steps (no allocation per run;
  // gradients stay where a fused all-reduce bucket put them) — unless Out
  // shares memory with an input other than the first, then into a new one.
  Tensor* out = out_var->IsSelectedRows() ? out_var->ResetTensor() : out_var->GetMutableTensor();
  bool aliased = false;
  for (size_t i = 1; i < dense.size(); ++i) aliased = aliased || dense[i]->SharesBufferWith(*out);
  Tensor fresh;
  Tensor* acc = aliased ? &fresh : out;
  acc->CopyFrom(*dense[0]);
  VisitDType(acc->dtype(), [&]<typename T>() {
    for (size_t i = 1; i < dense.size(); ++i) {
      math::Add(acc->numel(), acc->data<T>(), dense[i]->data<T>(), acc->data<T>());
    }
  });
  for (size_t i = 0; i < ctx.InputSize("X"); ++i) {
    ScopeVar* v = ctx.InputVar("X", i);
    if (v == nullptr || !v->IsSelectedRows()) continue;
    VisitDType(acc->dtype(), [&]<typename T>() { AddRowsInto<T>(v->GetSelectedRows(), acc); });
  }
  if (aliased) out->ShareDataWith(fresh);
}

std::vector<OpDesc> SumGrad(const OpDesc& fwd) {
  // d(Σ X_i)/dX_i = 1: every input's gradient is the output's gradient.
  std::vector<OpDesc> ops;
  for (const auto& x : fwd.Inputs("X")) {
    ops.push_back(OpDesc("assign").In("X", {GradVarName(fwd.Output("Out"))}).Out("Out", {GradVarName(x)}));
  }
  return ops;
}

// ---- assign: Out = X (a copy) ----

void AssignShape(InferShapeContext& ctx) {
  ctx.ShareDim("X", "Out");
  ctx.SetOutputVarType("Out", ctx.InputVarType("X"));
}

void AssignKernel(ExecutionContext& ctx) {
  ScopeVar* in = ctx.InputVar("X");
  ScopeVar* out = ctx.OutputVar("Out");
  FLOTILLA_ENFORCE(in != nullptr, ctx.Where(), ": input X is missing");
  if (in->IsSelectedRows()) {
    const SelectedRows& src = in->GetSelectedRows();
    *out->ResetSelectedRows() = SelectedRows(src.rows(), src.value().Clone(), src.height());
    return;
  }
  out->GetMutableTensor()->CopyFrom(in->GetTensor());
}

std::vector<OpDesc> AssignGrad(const OpDesc& fwd) {
  return {OpDesc("assign").In("X", {GradVarName(fwd.Output("Out"))}).Out("Out", {GradVarName(fwd.Input("X"))})};
}

// ---- fill_zeros_like: Out = zeros shaped like X ----

void FillZerosLikeKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  out->set_dtype(x.dtype());
  out->SetZero();
}

}  // namespace

void RegisterBasicOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "fill_constant",
              .infer_shape = FillConstantShape,
              .kernels = {{Place::Kind::kCPU, FillConstantKernel}},
              .default_attrs = {{"value", 0.0},
                                {"dtype", static_cast<int32_t>(DType::kFloat32)},
                                {"shape", std::vector<int64_t>{1}}}});
  r.Register({.type = "fill_constant_batch_size_like",
              .infer_shape = FillBatchSizeLikeShape,
              .kernels = {{Place::Kind::kCPU, FillBatchSizeLikeKernel}},
              .default_attrs = {{"value", 0.0},
                                {"dtype", static_cast<int32_t>(DType::kFloat32)},
                                {"shape", std::vector<int64_t>{-1}},
                                {"input_dim_idx", int32_t{0}},
                                {"output_dim_idx", int32_t{0}}}});
  r.Register({.type = "sum",
              .infer_shape = SumShape,
              .kernels = {{Place::Kind::kCPU, SumKernel}},
              .grad_maker = SumGrad,
              .share_lod = {{"X", "Out"}}});
  r.Register({.type = "assign",
              .infer_shape = AssignShape,
              .kernels = {{Place::Kind::kCPU, AssignKernel}},
              .grad_maker = AssignGrad,
              .share_lod = {{"X", "Out"}}});
  r.Register({.type = "fill_zeros_like",
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
              .kernels = {{Place::Kind::kCPU, FillZerosLikeKernel}}});
}

}  // namespace flotilla::ops
