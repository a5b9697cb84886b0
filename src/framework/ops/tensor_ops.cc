// Tensor plumbing: concat, reshape (and Paddle's reshape2 name), cast, and
// the random initialisers uniform_random and gaussian_random.
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"

namespace flotilla::ops {
namespace {

// ---- concat: Out = X_0 ++ X_1 ++ ... along attribute axis ----

template <typename Ctx>
int ConcatAxis(const Ctx& ctx, int rank) {
  int axis = ctx.template Attr<int32_t>("axis");
  int normalised = axis < 0 ? axis + rank : axis;
  FLOTILLA_ENFORCE(normalised >= 0 && normalised < rank, ctx.Where(), ": attribute axis (", axis,
                   ") is out of range for inputs of rank ", rank);
  return normalised;
}

// Out's dims; every input must match X[0] except along the axis.
template <typename Ctx>
Dims ConcatDims(const Ctx& ctx, const std::vector<Dims>& ins) {
  FLOTILLA_ENFORCE(!ins.empty(), ctx.Where(), ": needs at least one input X");
  const int rank = static_cast<int>(ins[0].size());
  const int axis = ConcatAxis(ctx, rank);
  Dims out = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) {
    FLOTILLA_ENFORCE(static_cast<int>(ins[i].size()) == rank, ctx.Where(), ": X[", i, "] ",
                     DescribeInput(ctx, "X", ins[i], i), " and X[0] ",
                     DescribeInput(ctx, "X", ins[0]), " differ in rank");
    for (int d = 0; d < rank; ++d) {
      if (d == axis) continue;
      FLOTILLA_ENFORCE(!KnownAndDiffer(ins[i][d], out[d]), ctx.Where(), ": X[", i, "] ",
                       DescribeInput(ctx, "X", ins[i], i), " does not match X[0] ",
                       DescribeInput(ctx, "X", ins[0]), "; only dim ", axis, " may differ");
    }
    out[axis] = (out[axis] < 0 || ins[i][axis] < 0) ? -1 : out[axis] + ins[i][axis];
  }
  return out;
}

void ConcatInferShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", ConcatDims(ctx, ctx.InputDims("X")));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

// Row layout of one concat: `outer` rows; part i holds part_bytes[i] of each.
struct ConcatLayout {
  int64_t outer = 1;
  std::vector<size_t> part_bytes;
  size_t row_bytes = 0;
};

ConcatLayout LayoutOf(const std::vector<Dims>& parts, int axis, DType dtype) {
  ConcatLayout l;
  l.outer = Product(parts[0], 0, axis);
  for (const Dims& d : parts) {
    l.part_bytes.push_back(Product(d, axis, d.size()) * SizeOf(dtype));
    l.row_bytes += l.part_bytes.back();
  }
  return l;
}

void ConcatKernel(ExecutionContext& ctx) {
  std::vector<const Tensor*> xs = ctx.MultiInput("X");
  std::vector<Dims> dims;
  for (size_t i = 0; i < xs.size(); ++i) {
    FLOTILLA_ENFORCE(xs[i]->dtype() == xs[0]->dtype(), ctx.Where(), ": X[", i, "] is ",
                     DTypeName(xs[i]->dtype()), " but X[0] is ", DTypeName(xs[0]->dtype()));
    dims.push_back(xs[i]->dims());
  }
  Tensor* out = ctx.Output("Out");
  out->Resize(ConcatDims(ctx, dims));
  ConcatLayout l = LayoutOf(dims, ConcatAxis(ctx, xs[0]->rank()), xs[0]->dtype());
  char* dst = static_cast<char*>(out->raw_mutable_data(xs[0]->dtype()));
  size_t offset = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const char* src = static_cast<const char*>(xs[i]->raw_data());
    for (int64_t o = 0; o < l.outer; ++o) {
      std::memcpy(dst + o * l.row_bytes + offset, src + o * l.part_bytes[i], l.part_bytes[i]);
    }
    offset += l.part_bytes[i];
  }
}

// X_i@GRAD is the slice of Out@GRAD that X_i filled; absent ones are skipped.
void ConcatGradKernel(ExecutionContext& ctx) {
  std::vector<const Tensor*> xs = ctx.MultiInput("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  std::vector<Dims> dims;
  for (const Tensor* x : xs) dims.push_back(x->dims());
  ConcatLayout l = LayoutOf(dims, ConcatAxis(ctx, xs[0]->rank()), g.dtype());
  FLOTILLA_ENFORCE(static_cast<size_t>(g.nbytes()) == l.outer * l.row_bytes, ctx.Where(),
                   ": Out@GRAD has shape ", DimsToString(g.dims()), ", not the concat of X");
  const char* src = static_cast<const char*>(g.raw_data());
  size_t offset = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (ctx.OutputVar(GradVarName("X"), i) != nullptr) {
      Tensor* dx = ctx.Output(GradVarName("X"), i);
      dx->Resize(dims[i]);
      char* dst = static_cast<char*>(dx->raw_mutable_data(g.dtype()));
      for (int64_t o = 0; o < l.outer; ++o) {
        std::memcpy(dst + o * l.part_bytes[i], src + o * l.row_bytes + offset, l.part_bytes[i]);
      }
    }
    offset += l.part_bytes[i];
  }
}

// ---- reshape: Out = X with the dims of attribute shape ----
// Paddle's reshape2 rules: 0 copies X's dim at that index, one -1 is
// inferred from the element count. Unknown (-1) input dims stay unknown.

template <typename Ctx>
Dims ReshapeDims(const Ctx& ctx, const Dims& in) {
  std::vector<int32_t> shape = ctx.template Attr<std::vector<int32_t>>("shape");
  Dims out;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == -1) {
      FLOTILLA_ENFORCE(infer_at < 0, ctx.Where(), ": attribute shape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (s == 0) {
      FLOTILLA_ENFORCE(i < in.size(), ctx.Where(), ": attribute shape[", i,
                       "] is 0 (copy X's dim) but ", DescribeInput(ctx, "X", in), " has rank ",
                       in.size());
      s = in[i];
    } else {
      FLOTILLA_ENFORCE(s > 0, ctx.Where(), ": attribute shape[", i, "] is ", s,
                       "; expected a positive size, 0 or -1");
    }
    out.push_back(s);
  }
  const int64_t in_numel = Numel(in);
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) != infer_at) known = (out[i] < 0 || known < 0) ? -1 : known * out[i];
  }
  if (in_numel < 0 || known < 0) return out;  // compile time, unknown batch
  if (infer_at >= 0) {
    FLOTILLA_ENFORCE(known > 0 && in_numel % known == 0, ctx.Where(), ": ",
                     DescribeInput(ctx, "X", in), " (", in_numel,
                     " elements) cannot be reshaped to ", DimsToString(out));
    out[infer_at] = in_numel / known;
  }
  FLOTILLA_ENFORCE(Numel(out) == in_numel, ctx.Where(), ": ", DescribeInput(ctx, "X", in), " (",
                   in_numel, " elements) cannot be reshaped to ", DimsToString(out));
  return out;
}

void ReshapeInferShape(InferShapeContext& ctx) {
  Dims in = ctx.InputDim("X");
  ctx.SetOutputDim("Out", ReshapeDims(ctx, in));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  if (ctx.HasOutput("XShape")) {  // reshape2: [0] + X's dims, as in Paddle
    Dims xshape{0};
    xshape.insert(xshape.end(), in.begin(), in.end());
    ctx.SetOutputDim("XShape", xshape);
  }
}

void ReshapeKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Dims dims = ReshapeDims(ctx, x.dims());
  Tensor* out = ctx.Output("Out");
  // A copy, not a shared buffer: ops writing Out in place must not clobber X.
  if (out != &x) out->CopyFrom(x);
  out->Reshape(dims);
}

void ReshapeGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("X"))) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  FLOTILLA_ENFORCE(g.numel() == x.numel(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " but X has ", DimsToString(x.dims()));
  Tensor* dx = ctx.Output(GradVarName("X"));
  dx->CopyFrom(g);
  dx->Reshape(x.dims());
}

std::vector<OpDesc> ReshapeGrad(const OpDesc& fwd) {
  return GradOpBuilder(fwd, "reshape_grad").ForwardInputs({"X"}).OutputGrads({"Out"})
      .InputGrads({"X"});
}

// ---- cast: Out = X converted to attribute out_dtype ----

template <typename Ctx>
DType DTypeAttr(const Ctx& ctx, const std::string& name) {
  int32_t code = ctx.template Attr<int32_t>(name);
  for (DType t : {DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64}) {
    if (static_cast<int32_t>(t) == code) return t;
  }
  FLOTILLA_THROW(InvalidArgument, ctx.Where(), ": attribute ", name, " (", code,
                 ") is not a dtype code; expected 2 (int32), 3 (int64), 5 (float32) or "
                 "6 (float64)");
}

void CastInferShape(InferShapeContext& ctx) {
  DTypeAttr(ctx, "in_dtype");
  ctx.SetOutputDim("Out", ctx.InputDim("X"));
  ctx.SetOutputDType("Out", DTypeAttr(ctx, "out_dtype"));
}

void CastKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const DType to = DTypeAttr(ctx, "out_dtype");
  Tensor* out = ctx.Output("Out");
  if (x.dtype() == to) {
    if (out != &x) out->CopyFrom(x);
    return;
  }
  out->Resize(x.dims());
  VisitDType(x.dtype(), [&]<typename From>() {
    VisitDType(to, [&]<typename To>() {
      const From* src = x.data<From>();
      To* dst = out->mutable_data<To>();
      for (int64_t i = 0; i < x.numel(); ++i) dst[i] = static_cast<To>(src[i]);
    });
  });
}

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

// dX = dOut cast back (Paddle's choice); integer casts carry no gradient.
std::vector<OpDesc> CastGrad(const OpDesc& fwd) {
  auto in = static_cast<DType>(fwd.Attr<int32_t>("in_dtype"));
  auto out = static_cast<DType>(fwd.Attr<int32_t>("out_dtype"));
  if (!IsFloat(in) || !IsFloat(out)) return {};
  return {OpDesc("cast")
              .In("X", {GradVarName(fwd.Output("Out"))})
              .Out("Out", {GradVarName(fwd.Input("X"))})
              .Set("in_dtype", static_cast<int32_t>(out))
              .Set("out_dtype", static_cast<int32_t>(in))};
}

// ---- uniform_random, gaussian_random ----

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A fixed seed gives the same values on every run. Unlike Paddle it is mixed
// with the output's name, so parameters of the same shape initialised under
// one program-wide seed do not come out identical. Seed 0 draws a fresh seed
// from one process-wide generator.
std::mt19937_64 MakeEngine(int64_t seed, const std::string& out_name) {
  if (seed != 0) {
    const uint64_t a = static_cast<uint64_t>(seed), b = Fnv1a(out_name);
    std::seed_seq seq{uint32_t(a), uint32_t(a >> 32), uint32_t(b), uint32_t(b >> 32)};
    return std::mt19937_64(seq);
  }
  static std::mutex mu;
  static std::mt19937_64 process_engine{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return std::mt19937_64(process_engine());
}

template <typename Ctx>
Dims RandomShape(const Ctx& ctx) {
  auto shape = ctx.template Attr<std::vector<int64_t>>("shape");
  return Dims(shape.begin(), shape.end());
}

void RandomInferShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", RandomShape(ctx));
  ctx.SetOutputDType("Out", DTypeAttr(ctx, "dtype"));
}

// Resizes Out to the shape attribute and fills it from `dist`.
template <template <typename> class Dist, typename... Params>
void FillRandom(ExecutionContext& ctx, Params... params) {
  Dims dims = RandomShape(ctx);
  for (int64_t d : dims) {
    FLOTILLA_ENFORCE(d >= 0, ctx.Where(), ": attribute shape ", DimsToString(dims),
                     " must not hold negative sizes at run time");
  }
  Tensor* out = ctx.Output("Out");
  out->Resize(dims);
  std::mt19937_64 engine = MakeEngine(ctx.Attr<int64_t>("seed"), ctx.OutputName("Out"));
  VisitFloatDType(DTypeAttr(ctx, "dtype"), ctx.Where(), [&]<typename T>() {
    Dist<T> dist(static_cast<T>(params)...);
    T* p = out->mutable_data<T>();
    for (int64_t i = 0; i < out->numel(); ++i) p[i] = dist(engine);
  });
}

void UniformRandomKernel(ExecutionContext& ctx) {
  float lo = ctx.Attr<float>("min"), hi = ctx.Attr<float>("max");
  FLOTILLA_ENFORCE(lo <= hi, ctx.Where(), ": attribute min (", lo, ") must not exceed max (",
                   hi, ")");
  FillRandom<std::uniform_real_distribution>(ctx, lo, hi);
}

void GaussianRandomKernel(ExecutionContext& ctx) {
  float mean = ctx.Attr<float>("mean"), std = ctx.Attr<float>("std");
  FLOTILLA_ENFORCE(std >= 0, ctx.Where(), ": attribute std (", std, ") must be >= 0");
  FillRandom<std::normal_distribution>(ctx, mean, std);
}

}  // namespace

void RegisterTensorOps() {
  auto& r = OpRegistry::Global();
  r.RegisterWithGrad({.type = "concat",
                      .infer_shape = ConcatInferShape,
                      .kernels = {{Place::Kind::kCPU, ConcatKernel}},
                      .default_attrs = {{"axis", int32_t{0}}}},
                     {.forward_inputs = {"X"}, .output_grads = {"Out"}, .input_grads = {"X"}}, ConcatGradKernel);
  for (const char* type : {"reshape", "reshape2"}) {
    r.Register({.type = type,
                .infer_shape = ReshapeInferShape,
                .kernels = {{Place::Kind::kCPU, ReshapeKernel}},
                .grad_maker = ReshapeGrad,
                .default_attrs = {{"shape", std::vector<int32_t>{}}}});
  }
  r.Register({.type = "reshape_grad",
              .infer_shape = InferGradShapeLikeForward,
              .kernels = {{Place::Kind::kCPU, ReshapeGradKernel}}});
  r.Register({.type = "cast",
              .infer_shape = CastInferShape,
              .kernels = {{Place::Kind::kCPU, CastKernel}},
              .grad_maker = CastGrad,
              .share_lod = {{"X", "Out"}}});
  const int32_t f32 = static_cast<int32_t>(DType::kFloat32);
  r.Register({.type = "uniform_random",
              .infer_shape = RandomInferShape,
              .kernels = {{Place::Kind::kCPU, UniformRandomKernel}},
              .default_attrs = {{"min", -1.0f}, {"max", 1.0f}, {"seed", int32_t{0}},
                                {"dtype", f32}}});
  r.Register({.type = "gaussian_random",
              .infer_shape = RandomInferShape,
              .kernels = {{Place::Kind::kCPU, GaussianRandomKernel}},
              .default_attrs = {{"mean", 0.0f}, {"std", 1.0f}, {"seed", int32_t{0}},
                                {"dtype", f32}}});
}

}  // namespace flotilla::ops
