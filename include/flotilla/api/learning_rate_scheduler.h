// Learning-rate schedules (Paddle's fluid.layers learning_rate_scheduler).
//
// Each schedule returns a [1] float32 variable of the default main program,
// recomputed at the start of every run by an `lr_schedule` op from the shared
// step counter; pass it to an optimizer (optimizer::SGD(exponential_decay(...))).
//
// The step counter is the persistable int64 [1] variable "@LR_DECAY_COUNTER@",
// created once per main program: the default startup program sets it to -1
// and one `increment` op at the very front of the main program adds 1, so the
// first run computes its rates at step 0, the second at step 1, and so on.
// Schedule ops follow the increment, ahead of every forward op. All these ops
// carry the LRSched role, so Program::Clone(for_test=true) drops them and an
// evaluation run neither advances the counter nor recomputes the rates.
//
// Arguments are checked when the schedule is built: decay_steps, warmup_steps,
// step_each_epoch, epochs or d_model <= 0, or values.size() !=
// boundaries.size() + 1, throw InvalidArgument naming the attribute.
// Not thread-safe (the default programs are per thread).
#pragma once

#include <cstdint>
#include <vector>

#include "flotilla/framework/program.h"

namespace flotilla::layers {

inline constexpr const char* kLearningRateCounterName = "@LR_DECAY_COUNTER@";

// The step counter of the default main program, created on first use.
Variable lr_decay_step_counter();

// With r = step / decay_steps (floored when staircase):
//   exponential_decay:  lr * decay_rate^r
//   natural_exp_decay:  lr * exp(-decay_rate * r)
//   inverse_time_decay: lr / (1 + decay_rate * r)
Variable exponential_decay(float learning_rate, int64_t decay_steps, float decay_rate,
                           bool staircase = false);
Variable natural_exp_decay(float learning_rate, int64_t decay_steps, float decay_rate,
                           bool staircase = false);
Variable inverse_time_decay(float learning_rate, int64_t decay_steps, float decay_rate,
                            bool staircase = false);

// (lr - end) * (1 - step / decay_steps)^power + end, with step capped at
// decay_steps; with cycle, decay_steps grows to the next multiple of itself
// at or above step (step 0 counts as the first cycle).
Variable polynomial_decay(float learning_rate, int64_t decay_steps,
                          float end_learning_rate = 0.0001f, float power = 1.0f,
                          bool cycle = false);

// values[i] for the first i with step < boundaries[i], else values.back().
Variable piecewise_decay(const std::vector<int64_t>& boundaries, const std::vector<float>& values);

// lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1).
Variable cosine_decay(float learning_rate, int64_t step_each_epoch, int64_t epochs);

// lr * d_model^-0.5 * min(s^-0.5, warmup_steps^-1.5 * s), s = step + 1
// (Paddle counts noam steps from 1).
Variable noam_decay(float d_model, int64_t warmup_steps, float learning_rate = 1.0f);

// start_lr + (end_lr - start_lr) * step / warmup_steps while step <
// warmup_steps, then learning_rate (a constant or another schedule).
Variable linear_lr_warmup(float learning_rate, int64_t warmup_steps, float start_lr, float end_lr);
Variable linear_lr_warmup(const Variable& learning_rate, int64_t warmup_steps, float start_lr,
                          float end_lr);

}  // namespace flotilla::layers
