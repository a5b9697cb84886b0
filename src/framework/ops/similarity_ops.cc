// cos_sim: the cosine similarity of matching rows (Paddle's op).
//
//   cos_sim(X [N, ...], Y [N or 1, ...]) -> Out [N, 1], XNorm [N, 1], YNorm [M, 1]
//
// Rows are X's and Y's dims after the first, flattened; a one-row Y is
// compared with every row of X. Out = x·y / max(|x||y|, eps): attribute eps
// (default 0, Paddle's op) keeps zero rows finite, as
// paddle.nn.functional.cosine_similarity's clip does. The gradient, where
// |x||y| > eps:
//   dX = g (y / n - out x / |x|^2),  dY = g (x / n - out y / |y|^2)
// and g y / n, g x / n where eps holds n.
#include <algorithm>
#include <cmath>
#include <string>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"

namespace flotilla::ops {
namespace {

int64_t RowWidth(const Dims& dims) {
  int64_t width = 1;
  for (size_t i = 1; i < dims.size(); ++i) width *= dims[i];
  return width;
}

void CheckShapes(const std::string& where, const Dims& x, const Dims& y) {
  FLOTILLA_ENFORCE(x.size() >= 2 && y.size() == x.size(), where, ": X ", DimsToString(x), " and Y ",
                   DimsToString(y), " must have the same rank, at least 2");
  const bool known = !HasUnknownDim(x) && !HasUnknownDim(y);
  FLOTILLA_ENFORCE(!known || RowWidth(x) == RowWidth(y), where, ": rows of X ", DimsToString(x),
                   " and of Y ", DimsToString(y), " differ in size");
  FLOTILLA_ENFORCE(y[0] == 1 || y[0] == x[0] || y[0] < 0 || x[0] < 0, where, ": Y ", DimsToString(y),
                   " must have X's rows (", x[0], ") or one row");
}

void CosSimShape(InferShapeContext& ctx) {
  const Dims x = ctx.InputDim("X"), y = ctx.InputDim("Y");
  CheckShapes(ctx.Where(), x, y);
  ctx.SetOutputDim("Out", {x[0], 1});
  ctx.SetOutputDim("XNorm", {x[0], 1});
  ctx.SetOutputDim("YNorm", {y[0], 1});
}

template <typename T>
T RowNorm(const T* row, int64_t width) {
  T sum = 0;
  for (int64_t k = 0; k < width; ++k) sum += row[k] * row[k];
  return std::sqrt(sum);
}

void CosSimKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  CheckShapes(ctx.Where(), x.dims(), y.dims());
  FLOTILLA_ENFORCE(x.dtype() == y.dtype(), ctx.Where(), ": X is ", DTypeName(x.dtype()), " but Y is ",
                   DTypeName(y.dtype()));
  const int64_t rows = x.dims()[0], y_rows = y.dims()[0], width = RowWidth(x.dims());
  const double eps = ctx.Attr<float>("eps");
  Tensor* out = ctx.Output("Out");
  Tensor* x_norm = ctx.Output("XNorm");
  Tensor* y_norm = ctx.Output("YNorm");
  out->Resize({rows, 1});
  x_norm->Resize({rows, 1});
  y_norm->Resize({y_rows, 1});
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out->mutable_data<T>();
    T* xn = x_norm->mutable_data<T>();
    T* yn = y_norm->mutable_data<T>();
    for (int64_t r = 0; r < y_rows; ++r) yn[r] = RowNorm(yp + r * width, width);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = xp + r * width;
      const int64_t yr = y_rows == 1 ? 0 : r;
      const T* yrow = yp + yr * width;
      T dot = 0;
      for (int64_t k = 0; k < width; ++k) dot += xr[k] * yrow[k];
      xn[r] = RowNorm(xr, width);
      op[r] = dot / std::max(xn[r] * yn[yr], static_cast<T>(eps));
    }
  });
}

void CosSimGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& out = ctx.Input("Out");
  const Tensor& x_norm = ctx.Input("XNorm");
  const Tensor& y_norm = ctx.Input("YNorm");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  const int64_t rows = x.dims()[0], y_rows = y.dims()[0], width = RowWidth(x.dims());
  FLOTILLA_ENFORCE(g.numel() == rows, ctx.Where(), ": Out@GRAD has shape ", DimsToString(g.dims()),
                   " but X has ", rows, " rows");
  const double eps = ctx.Attr<float>("eps");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    T* dx = nullptr;
    T* dy = nullptr;
    if (ctx.HasOutput(GradVarName("X"))) {
      Tensor* t = ctx.Output(GradVarName("X"));
      t->Resize(x.dims());
      dx = t->mutable_data<T>();
    }
    if (ctx.HasOutput(GradVarName("Y"))) {
      Tensor* t = ctx.Output(GradVarName("Y"));
      t->Resize(y.dims());
      dy = t->mutable_data<T>();
      std::fill(dy, dy + y.numel(), T(0));
    }
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    const T* op = out.data<T>();
    const T* xn = x_norm.data<T>();
    const T* yn = y_norm.data<T>();
    const T* gp = g.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t yr = y_rows == 1 ? 0 : r;
      const T* xr = xp + r * width;
      const T* yrow = yp + yr * width;
      const T n = std::max(xn[r] * yn[yr], static_cast<T>(eps));
      const bool clamped = xn[r] * yn[yr] <= static_cast<T>(eps);
      const T x_coef = clamped ? T(0) : op[r] / (xn[r] * xn[r]);
      const T y_coef = clamped ? T(0) : op[r] / (yn[yr] * yn[yr]);
      for (int64_t k = 0; k < width; ++k) {
        if (dx != nullptr) dx[r * width + k] = gp[r] * (yrow[k] / n - x_coef * xr[k]);
        if (dy != nullptr) dy[yr * width + k] += gp[r] * (xr[k] / n - y_coef * yrow[k]);
      }
    }
  });
}

}  // namespace

void RegisterSimilarityOps() {
  OpRegistry::Global().RegisterWithGrad(
      {.type = "cos_sim",
       .infer_shape = CosSimShape,
       .kernels = {{Place::Kind::kCPU, CosSimKernel}},
       .default_attrs = {{"eps", 0.0f}}},
      {.forward_inputs = {"X", "Y"},
       .forward_outputs = {"Out", "XNorm", "YNorm"},
       .output_grads = {"Out"},
       .input_grads = {"X", "Y"}},
      CosSimGradKernel);
}

}  // namespace flotilla::ops
