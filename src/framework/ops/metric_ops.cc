// accuracy and auc: evaluation metrics, not differentiable.
//
// accuracy differs from Paddle's in one respect: Paddle feeds it the output
// of a top_k op (Out = top-k values, Indices = their columns). Flotilla has
// no top_k op, so accuracy takes the class probabilities [N, C] in Out and
// finds the top k (attribute k) itself; a sample counts as correct when its
// label is among them (ties go to the lower column, like a stable sort).
// When an Indices input is given it is used as Paddle does.
//
// auc is Paddle's streaming ROC AUC: each batch adds its predictions to two
// persistable histograms (StatPos/StatNeg, num_thresholds + 1 buckets, updated
// in place through StatPosOut/StatNegOut), and AUC is computed from the
// histograms, i.e. over every batch seen so far. This is Paddle's global form
// (slide_steps = 0); the sliding-window form is not supported.
#include <cmath>
#include <cstring>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/input_checks.h"

namespace flotilla::ops {
namespace {

// ---- accuracy ----

void AccuracyShape(InferShapeContext& ctx) {
  for (const char* slot : {"Accuracy", "Correct", "Total"}) ctx.SetOutputDim(slot, {1});
  ctx.SetOutputDType("Accuracy", DType::kFloat32);
  ctx.SetOutputDType("Correct", DType::kInt32);
  ctx.SetOutputDType("Total", DType::kInt32);
}

// True when column `label` is among the k largest of row[0, c).
template <typename T>
bool InTopK(const T* row, int64_t c, int64_t label, int64_t k) {
  int64_t ahead = 0;  // columns ranked before the label's
  for (int64_t j = 0; j < c && ahead < k; ++j) {
    ahead += row[j] > row[label] || (row[j] == row[label] && j < label);
  }
  return ahead < k;
}

int64_t CountFromProbabilities(const ExecutionContext& ctx, const Tensor& out,
                               const int64_t* label, int64_t n) {
  int64_t c = out.dim(1);
  int64_t k = ctx.Attr<int64_t>("k");
  FLOTILLA_ENFORCE(k >= 1, ctx.Where(), ": attribute 'k' must be >= 1, got ", k);
  return VisitFloatDType(out.dtype(), ctx.Where(), [&]<typename T>() {
    int64_t correct = 0;
    for (int64_t i = 0; i < n; ++i) {
      FLOTILLA_ENFORCE(label[i] >= 0 && label[i] < c, ctx.Where(), ": label ", label[i],
                       " of row ", i, " is out of range [0, ", c, ")");
      correct += InTopK(out.data<T>() + i * c, c, label[i], k);
    }
    return correct;
  });
}

int64_t CountFromIndices(const ExecutionContext& ctx, const Tensor& indices, const int64_t* label,
                         int64_t n) {
  FLOTILLA_ENFORCE(indices.rank() == 2 && indices.dim(0) == n && indices.dtype() == DType::kInt64,
                   ctx.Where(), ": Indices must be int64 [", n, ", k], got ",
                   DTypeName(indices.dtype()), " ", DimsToString(indices.dims()));
  int64_t k = indices.dim(1);
  const int64_t* idx = indices.data<int64_t>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      if (idx[i * k + j] == label[i]) {
        ++correct;
        break;
      }
    }
  }
  return correct;
}

void AccuracyKernel(ExecutionContext& ctx) {
  const Tensor& out = ctx.Input("Out");
  FLOTILLA_ENFORCE(out.rank() == 2, ctx.Where(), ": Out must be [N, classes], got ",
                   DimsToString(out.dims()));
  int64_t n = out.dim(0);
  const int64_t* label = HardLabels(ctx.Input("Label"), n, ctx.Where());
  int64_t correct = ctx.HasInput("Indices")
                        ? CountFromIndices(ctx, ctx.Input("Indices"), label, n)
                        : CountFromProbabilities(ctx, out, label, n);
  Tensor* acc = ctx.Output("Accuracy");
  acc->Resize({1});
  acc->mutable_data<float>()[0] = n == 0 ? 0.f : static_cast<float>(correct) / static_cast<float>(n);
  if (ctx.HasOutput("Correct")) {
    ctx.Output("Correct")->Resize({1}).mutable_data<int32_t>()[0] = static_cast<int32_t>(correct);
  }
  if (ctx.HasOutput("Total")) {
    ctx.Output("Total")->Resize({1}).mutable_data<int32_t>()[0] = static_cast<int32_t>(n);
  }
}

// ---- auc ----

void AucShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("AUC", {1});
  ctx.SetOutputDType("AUC", DType::kFloat64);
  ctx.ShareDim("StatPos", "StatPosOut");
  ctx.ShareDim("StatNeg", "StatNegOut");
}

// The histogram output, holding the input's counts (it is usually the same
// variable, updated in place).
int64_t* StatOut(ExecutionContext& ctx, const std::string& in_slot, int64_t buckets) {
  const Tensor& in = ctx.Input(in_slot);
  FLOTILLA_ENFORCE(in.dtype() == DType::kInt64 && in.numel() == buckets, ctx.Where(), ": ",
                   in_slot, " must be an int64 histogram of num_thresholds + 1 = ", buckets,
                   " buckets, got ", DTypeName(in.dtype()), " ", DimsToString(in.dims()));
  Tensor* out = ctx.Output(in_slot + "Out");
  if (out != &in && !out->SharesBufferWith(in)) out->CopyFrom(in);
  return out->data<int64_t>();
}

template <typename T>
void AddToHistograms(const ExecutionContext& ctx, const Tensor& predict, const int64_t* label,
                     int64_t thresholds, int64_t* pos, int64_t* neg) {
  int64_t n = predict.dim(0), width = predict.dim(1);
  const T* p = predict.data<T>();
  // Check the whole batch first so a bad row leaves the histograms untouched.
  for (int64_t i = 0; i < n; ++i) {
    T v = p[i * width + width - 1];
    FLOTILLA_ENFORCE(v >= T(0) && v <= T(1), ctx.Where(), ": Predict of row ", i, " is ", v,
                     "; probabilities must lie in [0, 1]");
  }
  for (int64_t i = 0; i < n; ++i) {
    auto bucket = static_cast<int64_t>(p[i * width + width - 1] * static_cast<T>(thresholds));
    (label[i] != 0 ? pos : neg)[bucket] += 1;
  }
}

// Area under the ROC curve traced from the highest bucket down (trapezoids,
// so equal scores count half), normalised by positives × negatives.
double HistogramAuc(const int64_t* pos, const int64_t* neg, int64_t buckets) {
  double tot_pos = 0, tot_neg = 0, area = 0;
  for (int64_t b = buckets - 1; b >= 0; --b) {
    double prev_pos = tot_pos, prev_neg = tot_neg;
    tot_pos += static_cast<double>(pos[b]);
    tot_neg += static_cast<double>(neg[b]);
    area += (tot_neg - prev_neg) * (tot_pos + prev_pos) / 2.0;
  }
  return tot_pos > 0 && tot_neg > 0 ? area / tot_pos / tot_neg : 0.0;
}

void CheckAucAttrs(const ExecutionContext& ctx) {
  FLOTILLA_CHECK(ctx.Attr<std::string>("curve") == "ROC", Unimplemented, ctx.Where(),
                 ": attribute 'curve' = '", ctx.Attr<std::string>("curve"),
                 "' is not supported; only \"ROC\" is");
  FLOTILLA_CHECK(ctx.Attr<int64_t>("slide_steps") == 0, Unimplemented, ctx.Where(),
                 ": attribute 'slide_steps' must be 0 (streaming AUC over all batches), got ",
                 ctx.Attr<int64_t>("slide_steps"));
  FLOTILLA_ENFORCE(ctx.Attr<int64_t>("num_thresholds") >= 1, ctx.Where(),
                   ": attribute 'num_thresholds' must be >= 1, got ",
                   ctx.Attr<int64_t>("num_thresholds"));
}

void AucKernel(ExecutionContext& ctx) {
  CheckAucAttrs(ctx);
  int64_t thresholds = ctx.Attr<int64_t>("num_thresholds");
  const Tensor& predict = ctx.Input("Predict");
  FLOTILLA_ENFORCE(predict.rank() == 2 && predict.dim(1) >= 1, ctx.Where(),
                   ": Predict must be [N, 2] or [N, 1] probabilities, got ",
                   DimsToString(predict.dims()));
  const int64_t* label = HardLabels(ctx.Input("Label"), predict.dim(0), ctx.Where());
  int64_t* pos = StatOut(ctx, "StatPos", thresholds + 1);
  int64_t* neg = StatOut(ctx, "StatNeg", thresholds + 1);
  VisitFloatDType(predict.dtype(), ctx.Where(), [&]<typename T>() {
    AddToHistograms<T>(ctx, predict, label, thresholds, pos, neg);
  });
  Tensor* auc = ctx.Output("AUC");
  auc->Resize({1});
  auc->mutable_data<double>()[0] = HistogramAuc(pos, neg, thresholds + 1);
}

}  // namespace

void RegisterMetricOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "accuracy",
              .infer_shape = AccuracyShape,
              .kernels = {{Place::Kind::kCPU, AccuracyKernel}},
              .default_attrs = {{"k", int64_t{1}}},
              .no_grad_inputs = {"Out", "Indices", "Label"}});
  r.Register({.type = "auc",
              .infer_shape = AucShape,
              .kernels = {{Place::Kind::kCPU, AucKernel}},
              .default_attrs = {{"curve", std::string("ROC")},
                                {"num_thresholds", int64_t{4095}},
                                {"slide_steps", int64_t{0}}},
              .no_grad_inputs = {"Predict", "Label", "StatPos", "StatNeg"}});
}

}  // namespace flotilla::ops
