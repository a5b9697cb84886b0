// Learning-rate scheduling ops: increment (the step counter) and lr_schedule
// (Paddle's fluid.layers learning_rate_scheduler formulas). Not
// differentiable: they run before the forward pass, tagged kOpRoleLRSched.
//
// lr_schedule reads the step as a double and computes in double precision,
// then stores the rate as float32, so a schedule equals its formula to
// float32 rounding at every step. Attributes are checked both at shape
// inference (when a layer appends the op) and in the kernel, so a bad
// schedule fails when it is built, not first at run time.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/input_checks.h"

namespace flotilla::ops {
namespace {

// ---- increment: Out = X + step (X a one-element int or float tensor) ----

void IncrementShape(InferShapeContext& ctx) {
  FLOTILLA_ENFORCE(ctx.InputDim("X") == Dims{1}, ctx.Where(), ": X must have shape [1], got ",
                   DimsToString(ctx.InputDim("X")));
  ctx.ShareDim("X", "Out");
}

void IncrementKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  double value = ScalarValue(x, ctx.Where(), "X") + ctx.Attr<double>("step");
  Tensor* out = ctx.Output("Out");
  if (out->dtype() != x.dtype() || out->numel() != 1) *out = Tensor(x.dtype(), x.dims());
  VisitDType(x.dtype(), [&]<typename T>() { out->mutable_data<T>()[0] = static_cast<T>(value); });
}

// ---- lr_schedule: Out = schedule(kind)(Step) ----

// The attribute `name` as a double, which must be > 0.
double Positive(const OpDesc& op, const std::string& where, const std::string& name) {
  double v = op.Attr<double>(name);
  FLOTILLA_ENFORCE(v > 0, where, ": attribute '", name, "' must be > 0, got ", v);
  return v;
}

void CheckPiecewise(const OpDesc& op, const std::string& where) {
  auto boundaries = op.Attr<std::vector<int64_t>>("boundaries");
  auto values = op.Attr<std::vector<float>>("values");
  FLOTILLA_ENFORCE(values.size() == boundaries.size() + 1, where, ": attributes 'boundaries' (",
                   boundaries.size(), " entries) and 'values' (", values.size(),
                   " entries) must satisfy len(values) == len(boundaries) + 1");
  FLOTILLA_ENFORCE(std::is_sorted(boundaries.begin(), boundaries.end()), where,
                   ": attribute 'boundaries' must be non-decreasing");
}

bool IsDecayKind(const std::string& kind) {
  return kind == "exponential_decay" || kind == "natural_exp_decay" ||
         kind == "inverse_time_decay" || kind == "polynomial_decay";
}

// Throws InvalidArgument naming the op and attribute for a bad schedule.
void CheckSchedule(const OpDesc& op, const std::string& where) {
  auto kind = op.Attr<std::string>("kind");
  if (IsDecayKind(kind)) {
    Positive(op, where, "decay_steps");
  } else if (kind == "piecewise_decay") {
    CheckPiecewise(op, where);
  } else if (kind == "cosine_decay") {
    Positive(op, where, "step_each_epoch");
    Positive(op, where, "epochs");
  } else if (kind == "noam_decay") {
    Positive(op, where, "d_model");
    Positive(op, where, "warmup_steps");
  } else if (kind == "linear_lr_warmup") {
    Positive(op, where, "warmup_steps");
  } else {
    FLOTILLA_THROW(InvalidArgument, where, ": attribute 'kind' = '", kind,
                   "' is not a known schedule (exponential_decay, natural_exp_decay, "
                   "inverse_time_decay, polynomial_decay, piecewise_decay, cosine_decay, "
                   "noam_decay, linear_lr_warmup)");
  }
}

// step / decay_steps, floored when "staircase" is set.
double DecayRatio(const OpDesc& op, double step) {
  double ratio = step / op.Attr<double>("decay_steps");
  return op.AttrOr<bool>("staircase", false) ? std::floor(ratio) : ratio;
}

double Polynomial(const OpDesc& op, double step, double lr) {
  double decay_steps = op.Attr<double>("decay_steps");
  if (op.AttrOr<bool>("cycle", false)) {
    // Paddle treats step 0 as the first cycle, not a zero-length one.
    double cycles = step == 0 ? 1 : std::ceil(step / decay_steps);
    decay_steps *= cycles;
  } else {
    step = std::min(step, decay_steps);
  }
  double end = op.Attr<double>("end_learning_rate");
  return (lr - end) * std::pow(1 - step / decay_steps, op.Attr<double>("power")) + end;
}

double Piecewise(const OpDesc& op, double step) {
  auto boundaries = op.Attr<std::vector<int64_t>>("boundaries");
  auto values = op.Attr<std::vector<float>>("values");
  for (size_t i = 0; i < boundaries.size(); ++i) {
    if (step < static_cast<double>(boundaries[i])) return values[i];
  }
  return values.back();
}

double Cosine(const OpDesc& op, double step, double lr) {
  double epoch = std::floor(step / op.Attr<double>("step_each_epoch"));
  return lr * 0.5 * (std::cos(epoch * std::numbers::pi / op.Attr<double>("epochs")) + 1);
}

// Paddle counts noam steps from 1 (its counter's begin=1): step + 1 here.
double Noam(const OpDesc& op, double step, double lr) {
  double s = step + 1;
  double a = std::pow(s, -0.5);
  double b = std::pow(op.Attr<double>("warmup_steps"), -1.5) * s;
  return lr * std::pow(op.Attr<double>("d_model"), -0.5) * std::min(a, b);
}

double LinearWarmup(const OpDesc& op, double step, double lr) {
  double warmup = op.Attr<double>("warmup_steps");
  if (step >= warmup) return lr;
  double start = op.Attr<double>("start_lr");
  return start + (op.Attr<double>("end_lr") - start) * (step / warmup);
}

// exponential, natural_exp and inverse_time decay by r = DecayRatio.
double RatioDecay(const std::string& kind, const OpDesc& op, double step, double lr) {
  double rate = op.Attr<double>("decay_rate");
  double r = DecayRatio(op, step);
  if (kind == "exponential_decay") return lr * std::pow(rate, r);
  if (kind == "natural_exp_decay") return lr * std::exp(-rate * r);
  return lr / (1 + rate * r);
}

// The rate at `step` for a checked schedule; `lr` is the base rate.
double ScheduledRate(const OpDesc& op, double step, double lr) {
  auto kind = op.Attr<std::string>("kind");
  if (kind == "polynomial_decay") return Polynomial(op, step, lr);
  if (IsDecayKind(kind)) return RatioDecay(kind, op, step, lr);
  if (kind == "piecewise_decay") return Piecewise(op, step);
  if (kind == "cosine_decay") return Cosine(op, step, lr);
  if (kind == "noam_decay") return Noam(op, step, lr);
  return LinearWarmup(op, step, lr);
}

void LrScheduleShape(InferShapeContext& ctx) {
  CheckSchedule(ctx.op(), ctx.Where());
  if (ctx.HasInput("LearningRate")) {
    FLOTILLA_ENFORCE(ctx.InputDim("LearningRate") == Dims{1}, ctx.Where(),
                     ": LearningRate must have shape [1], got ",
                     DimsToString(ctx.InputDim("LearningRate")));
  }
  ctx.SetOutputDim("Out", {1});
  ctx.SetOutputDType("Out", DType::kFloat32);
}

void LrScheduleKernel(ExecutionContext& ctx) {
  CheckSchedule(ctx.op(), ctx.Where());
  double step = ScalarValue(ctx.Input("Step"), ctx.Where(), "Step");
  double lr = ctx.HasInput("LearningRate")
                  ? ScalarValue(ctx.Input("LearningRate"), ctx.Where(), "LearningRate")
                  : ctx.Attr<double>("learning_rate");
  Tensor* out = ctx.Output("Out");
  if (out->dtype() != DType::kFloat32 || out->numel() != 1) *out = Tensor(DType::kFloat32, {1});
  out->mutable_data<float>()[0] = static_cast<float>(ScheduledRate(ctx.op(), step, lr));
}

}  // namespace

void RegisterLearningRateOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "increment",
              .infer_shape = IncrementShape,
              .kernels = {{Place::Kind::kCPU, IncrementKernel}},
              .default_attrs = {{"step", 1.0f}}});
  r.Register({.type = "lr_schedule",
              .infer_shape = LrScheduleShape,
              .kernels = {{Place::Kind::kCPU, LrScheduleKernel}},
              .default_attrs = {{"learning_rate", 1.0f}, {"staircase", false}, {"cycle", false}},
              .no_grad_inputs = {"Step", "LearningRate"}});
}

}  // namespace flotilla::ops
