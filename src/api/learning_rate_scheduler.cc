#include "flotilla/api/learning_rate_scheduler.h"

#include <algorithm>

#include "api/layer_helper.h"
#include "flotilla/api/layers.h"

namespace flotilla::layers {
namespace {

bool IsLrSchedOp(const OpDesc& op) { return (op.Role() & kOpRoleLRSched) != 0; }

// Where a new schedule op goes: after the leading LRSched ops (counter first,
// then schedules in the order they were built), and after whatever op writes
// its `input` rate when that comes later.
size_t SchedulePosition(const Block& block, const std::string& input) {
  size_t pos = 0;
  while (pos < block.op_size() && IsLrSchedOp(block.op(pos))) ++pos;
  if (input.empty()) return pos;
  for (size_t i = block.op_size(); i-- > pos;) {
    auto outs = block.op(i).OutputArgumentNames();
    if (std::find(outs.begin(), outs.end(), input) != outs.end()) return i + 1;
  }
  return pos;
}

// Inserts lr_schedule(kind) reading the step counter (and `base`, when
// valid) and returns its fresh [1] float32 output.
Variable Schedule(const std::string& kind, AttributeMap attrs, const Variable& base = {}) {
  Variable step = lr_decay_step_counter();
  internal::LayerHelper helper(kind);
  Variable out = helper.CreateTmp(DType::kFloat32, "lr");
  out.desc().shape = {1};
  out.set_stop_gradient(true);
  OpDesc op("lr_schedule");
  op.In("Step", {step.name()}).Out("Out", {out.name()});
  if (base.valid()) op.In("LearningRate", {base.name()});
  op.attrs = std::move(attrs);
  op.Set("kind", kind).Set(kOpRoleAttr, int32_t(kOpRoleLRSched));
  Block& main = helper.main_block();
  main.InsertOp(SchedulePosition(main, base.valid() ? base.name() : ""), std::move(op));
  return out;
}

Variable Decay(const std::string& kind, float lr, int64_t decay_steps, float decay_rate,
               bool staircase) {
  return Schedule(kind, {{"learning_rate", lr},
                         {"decay_steps", decay_steps},
                         {"decay_rate", decay_rate},
                         {"staircase", staircase}});
}

AttributeMap WarmupAttrs(int64_t warmup_steps, float start_lr, float end_lr) {
  return {{"warmup_steps", warmup_steps}, {"start_lr", start_lr}, {"end_lr", end_lr}};
}

}  // namespace

Variable lr_decay_step_counter() {
  Block& main = default_main_program().global_block();
  if (main.HasVar(kLearningRateCounterName)) return Variable(&main, kLearningRateCounterName);
  Variable counter = create_global_var({1}, -1, DType::kInt64, true, kLearningRateCounterName);
  main.PrependOp(OpDesc("increment")
                     .In("X", {counter.name()})
                     .Out("Out", {counter.name()})
                     .Set("step", 1.0f)
                     .Set(kOpRoleAttr, int32_t(kOpRoleLRSched)));
  return counter;
}

Variable exponential_decay(float learning_rate, int64_t decay_steps, float decay_rate,
                           bool staircase) {
  return Decay("exponential_decay", learning_rate, decay_steps, decay_rate, staircase);
}

Variable natural_exp_decay(float learning_rate, int64_t decay_steps, float decay_rate,
                           bool staircase) {
  return Decay("natural_exp_decay", learning_rate, decay_steps, decay_rate, staircase);
}

Variable inverse_time_decay(float learning_rate, int64_t decay_steps, float decay_rate,
                            bool staircase) {
  return Decay("inverse_time_decay", learning_rate, decay_steps, decay_rate, staircase);
}

Variable polynomial_decay(float learning_rate, int64_t decay_steps, float end_learning_rate,
                          float power, bool cycle) {
  return Schedule("polynomial_decay", {{"learning_rate", learning_rate},
                                       {"decay_steps", decay_steps},
                                       {"end_learning_rate", end_learning_rate},
                                       {"power", power},
                                       {"cycle", cycle}});
}

Variable piecewise_decay(const std::vector<int64_t>& boundaries, const std::vector<float>& values) {
  return Schedule("piecewise_decay", {{"boundaries", boundaries}, {"values", values}});
}

Variable cosine_decay(float learning_rate, int64_t step_each_epoch, int64_t epochs) {
  return Schedule(
      "cosine_decay",
      {{"learning_rate", learning_rate}, {"step_each_epoch", step_each_epoch}, {"epochs", epochs}});
}

Variable noam_decay(float d_model, int64_t warmup_steps, float learning_rate) {
  return Schedule(
      "noam_decay",
      {{"learning_rate", learning_rate}, {"d_model", d_model}, {"warmup_steps", warmup_steps}});
}

Variable linear_lr_warmup(float learning_rate, int64_t warmup_steps, float start_lr, float end_lr) {
  AttributeMap attrs = WarmupAttrs(warmup_steps, start_lr, end_lr);
  attrs["learning_rate"] = learning_rate;
  return Schedule("linear_lr_warmup", std::move(attrs));
}

Variable linear_lr_warmup(const Variable& learning_rate, int64_t warmup_steps, float start_lr,
                          float end_lr) {
  FLOTILLA_ENFORCE(
      learning_rate.valid() && learning_rate.block() == &default_main_program().global_block(),
      "linear_lr_warmup: learning_rate must be a variable of the default main "
      "program's global block");
  return Schedule("linear_lr_warmup", WarmupAttrs(warmup_steps, start_lr, end_lr), learning_rate);
}

}  // namespace flotilla::layers
