// mul and matmul: matrix products through math::Gemm (OpenBLAS).
//
// Both forward and gradient kernels issue Gemm calls on the stored operands
// and express transposes through Gemm's trans flags, so no transposed copy
// is ever made. mul is exactly one Gemm per call; matmul is one per batch
// unless the batch folds into the rows of X (Y shared, X not transposed).
#include "flotilla/core/math.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"

namespace flotilla::ops {
namespace {

// ---- mul: Out = flatten(X, x_num_col_dims) * flatten(Y, y_num_col_dims) ----

struct MulShape {
  int64_t m = 0, k = 0, n = 0;
  Dims out;
};

// Flattens X and Y, checks that the inner sizes agree, and derives Out's
// dims (X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:]).
template <typename Ctx>
MulShape ComputeMulShape(const Ctx& ctx, const Dims& x, const Dims& y) {
  int xc = ctx.template Attr<int32_t>("x_num_col_dims");
  int yc = ctx.template Attr<int32_t>("y_num_col_dims");
  FLOTILLA_ENFORCE(xc >= 1 && xc < static_cast<int>(x.size()), ctx.Where(),
                   ": attribute x_num_col_dims (", xc, ") must be in [1, ", x.size(), ") for ",
                   DescribeInput(ctx, "X", x));
  FLOTILLA_ENFORCE(yc >= 1 && yc < static_cast<int>(y.size()), ctx.Where(),
                   ": attribute y_num_col_dims (", yc, ") must be in [1, ", y.size(), ") for ",
                   DescribeInput(ctx, "Y", y));
  Dims x2 = FlattenTo2D(x, xc);
  Dims y2 = FlattenTo2D(y, yc);
  FLOTILLA_ENFORCE(!KnownAndDiffer(x2[1], y2[0]), ctx.Where(), ": X's columns (", x2[1],
                   ") must equal Y's rows (", y2[0], "); ", DescribeInput(ctx, "X", x), ", ",
                   DescribeInput(ctx, "Y", y));
  MulShape s{x2[0], x2[1], y2[1], Dims(x.begin(), x.begin() + xc)};
  s.out.insert(s.out.end(), y.begin() + yc, y.end());
  return s;
}

void MulInferShape(InferShapeContext& ctx) {
  MulShape s = ComputeMulShape(ctx, ctx.InputDim("X"), ctx.InputDim("Y"));
  ctx.SetOutputDim("Out", s.out);
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

void MulKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  MulShape s = ComputeMulShape(ctx, x.dims(), y.dims());
  Tensor* out = ctx.Output("Out");
  out->Resize(s.out);
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    math::Gemm(false, false, s.m, s.n, s.k, T(1), x.data<T>(), s.k, y.data<T>(), s.n, T(0),
               out->mutable_data<T>(), s.n);
  });
}

// dX = dOut * Y^T, dY = X^T * dOut (all on the flattened 2-D views).
void MulGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradVarName("Out"));
  MulShape s = ComputeMulShape(ctx, x.dims(), y.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    if (ctx.HasOutput(GradVarName("X"))) {
      Tensor* dx = ctx.Output(GradVarName("X"));
      dx->Resize(x.dims());
      math::Gemm(false, true, s.m, s.k, s.n, T(1), dout.data<T>(), s.n, y.data<T>(), s.n, T(0),
                 dx->mutable_data<T>(), s.k);
    }
    if (ctx.HasOutput(GradVarName("Y"))) {
      Tensor* dy = ctx.Output(GradVarName("Y"));
      dy->Resize(y.dims());
      math::Gemm(true, false, s.k, s.n, s.m, T(1), x.data<T>(), s.k, dout.data<T>(), s.n, T(0),
                 dy->mutable_data<T>(), s.n);
    }
  });
}

// ---- matmul: Out = alpha * op(X) * op(Y), batched over leading dims ----

// One batched product. Matrices of a batch are contiguous; an operand that
// is not batched (2-D) is shared by every batch.
struct MatMulShape {
  bool tx = false, ty = false;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool x_batched = false, y_batched = false;
  Dims out;
  int64_t ldx() const { return tx ? m : k; }  // stored row widths
  int64_t ldy() const { return ty ? k : n; }
  int64_t x_stride() const { return x_batched ? m * k : 0; }
  int64_t y_stride() const { return y_batched ? k * n : 0; }
};

template <typename Ctx>
Dims MatMulBatchDims(const Ctx& ctx, const Dims& x, const Dims& y) {
  Dims xb(x.begin(), x.end() - 2), yb(y.begin(), y.end() - 2);
  if (xb.empty()) return yb;
  if (yb.empty()) return xb;
  FLOTILLA_ENFORCE(xb.size() == yb.size(), ctx.Where(), ": batch dims of ",
                   DescribeInput(ctx, "X", x), " and ", DescribeInput(ctx, "Y", y),
                   " must match, or one operand must be 2-D");
  for (size_t i = 0; i < xb.size(); ++i) {
    FLOTILLA_ENFORCE(!KnownAndDiffer(xb[i], yb[i]), ctx.Where(), ": batch dims of ",
                     DescribeInput(ctx, "X", x), " and ", DescribeInput(ctx, "Y", y),
                     " must match");
    if (xb[i] < 0) xb[i] = yb[i];
  }
  return xb;
}

template <typename Ctx>
MatMulShape ComputeMatMulShape(const Ctx& ctx, const Dims& x, const Dims& y) {
  FLOTILLA_ENFORCE(x.size() >= 2 && y.size() >= 2, ctx.Where(),
                   ": X and Y must be at least 2-D; got ", DescribeInput(ctx, "X", x), " and ",
                   DescribeInput(ctx, "Y", y));
  MatMulShape s;
  s.tx = ctx.template Attr<bool>("transpose_X");
  s.ty = ctx.template Attr<bool>("transpose_Y");
  int64_t xr = x[x.size() - 2], xc = x.back(), yr = y[y.size() - 2], yc = y.back();
  s.m = s.tx ? xc : xr;
  s.k = s.tx ? xr : xc;
  int64_t ky = s.ty ? yc : yr;
  s.n = s.ty ? yr : yc;
  FLOTILLA_ENFORCE(!KnownAndDiffer(s.k, ky), ctx.Where(), ": X's columns (", s.k,
                   ") must equal Y's rows (", ky, ") after transpose_X=", s.tx,
                   ", transpose_Y=", s.ty, "; ", DescribeInput(ctx, "X", x), ", ",
                   DescribeInput(ctx, "Y", y));
  s.out = MatMulBatchDims(ctx, x, y);
  s.batch = Numel(s.out);
  s.x_batched = x.size() > 2;
  s.y_batched = y.size() > 2;
  s.out.push_back(s.m);
  s.out.push_back(s.n);
  return s;
}

// A shared Y with an untransposed X is one tall product: fold the batch into
// X's rows so the whole call is a single Gemm.
MatMulShape FoldBatch(MatMulShape s) {
  if (s.batch > 1 && s.x_batched && !s.y_batched && !s.tx) {
    s.m *= s.batch;
    s.batch = 1;
  }
  return s;
}

void MatMulInferShape(InferShapeContext& ctx) {
  MatMulShape s = ComputeMatMulShape(ctx, ctx.InputDim("X"), ctx.InputDim("Y"));
  ctx.SetOutputDim("Out", s.out);
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

template <typename T>
void MatMulForward(const MatMulShape& s, T alpha, const T* x, const T* y, T* out) {
  for (int64_t b = 0; b < s.batch; ++b) {
    math::Gemm(s.tx, s.ty, s.m, s.n, s.k, alpha, x + b * s.x_stride(), s.ldx(),
               y + b * s.y_stride(), s.ldy(), T(0), out + b * s.m * s.n, s.n);
  }
}

void MatMulKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  MatMulShape s = ComputeMatMulShape(ctx, x.dims(), y.dims());
  Tensor* out = ctx.Output("Out");
  out->Resize(s.out);
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    MatMulForward<T>(FoldBatch(s), static_cast<T>(ctx.Attr<float>("alpha")), x.data<T>(),
                     y.data<T>(), out->mutable_data<T>());
  });
}

// dX of batch b; a shared (2-D) X accumulates over batches (beta = 1).
//   !tx: dX = alpha * dC * op(Y)^T      tx: dX = alpha * op(Y) * dC^T
template <typename T>
void MatMulGradX(const MatMulShape& s, T alpha, const T* y, const T* dc, T* dx) {
  for (int64_t b = 0; b < s.batch; ++b) {
    T beta = (b > 0 && !s.x_batched) ? T(1) : T(0);
    const T* yb = y + b * s.y_stride();
    const T* dcb = dc + b * s.m * s.n;
    T* dxb = dx + b * s.x_stride();
    if (s.tx) {
      math::Gemm(s.ty, true, s.k, s.m, s.n, alpha, yb, s.ldy(), dcb, s.n, beta, dxb, s.m);
    } else {
      math::Gemm(false, !s.ty, s.m, s.k, s.n, alpha, dcb, s.n, yb, s.ldy(), beta, dxb, s.k);
    }
  }
}

//   !ty: dY = alpha * op(X)^T * dC      ty: dY = alpha * dC^T * op(X)
template <typename T>
void MatMulGradY(const MatMulShape& s, T alpha, const T* x, const T* dc, T* dy) {
  for (int64_t b = 0; b < s.batch; ++b) {
    T beta = (b > 0 && !s.y_batched) ? T(1) : T(0);
    const T* xb = x + b * s.x_stride();
    const T* dcb = dc + b * s.m * s.n;
    T* dyb = dy + b * s.y_stride();
    if (s.ty) {
      math::Gemm(true, s.tx, s.n, s.k, s.m, alpha, dcb, s.n, xb, s.ldx(), beta, dyb, s.k);
    } else {
      math::Gemm(!s.tx, false, s.k, s.n, s.m, alpha, xb, s.ldx(), dcb, s.n, beta, dyb, s.n);
    }
  }
}

void MatMulGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradVarName("Out"));
  MatMulShape s = FoldBatch(ComputeMatMulShape(ctx, x.dims(), y.dims()));
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    T alpha = static_cast<T>(ctx.Attr<float>("alpha"));
    if (ctx.HasOutput(GradVarName("X"))) {
      Tensor* dx = ctx.Output(GradVarName("X"));
      dx->Resize(x.dims());
      MatMulGradX<T>(s, alpha, y.data<T>(), dout.data<T>(), dx->mutable_data<T>());
    }
    if (ctx.HasOutput(GradVarName("Y"))) {
      Tensor* dy = ctx.Output(GradVarName("Y"));
      dy->Resize(y.dims());
      if (s.batch == 0) dy->SetZero();
      MatMulGradY<T>(s, alpha, x.data<T>(), dout.data<T>(), dy->mutable_data<T>());
    }
  });
}

// Both products: X and Y in, Out@GRAD in, X@GRAD and Y@GRAD out.
const GradSlots kProductGrad = {.forward_inputs = {"X", "Y"}, .output_grads = {"Out"}, .input_grads = {"X", "Y"}};

}  // namespace

void RegisterMathOps() {
  auto& r = OpRegistry::Global();
  r.RegisterWithGrad({.type = "mul",
                      .infer_shape = MulInferShape,
                      .kernels = {{Place::Kind::kCPU, MulKernel}},
                      .default_attrs = {{"x_num_col_dims", int32_t{1}}, {"y_num_col_dims", int32_t{1}}},
                      .share_lod = {{"X", "Out"}}},
                     kProductGrad, MulGradKernel);
  r.RegisterWithGrad({.type = "matmul",
                      .infer_shape = MatMulInferShape,
                      .kernels = {{Place::Kind::kCPU, MatMulKernel}},
                      .default_attrs = {{"transpose_X", false}, {"transpose_Y", false}, {"alpha", 1.0f}}},
                     kProductGrad, MatMulGradKernel);
}

}  // namespace flotilla::ops
