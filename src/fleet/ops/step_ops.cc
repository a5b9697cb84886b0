// c_grad_accumulate, c_step_gate and c_conditional_block: the pieces of
// gradient merge and LocalSGD, which act only on some steps.
#include <memory>

#include "fleet/ops/collective_ops.h"
#include "fleet/ops/op_families.h"
#include "flotilla/core/math.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {

namespace {

void GradAccumulateKernel(ExecutionContext& ctx) {
  std::vector<const Tensor*> grads = ctx.MultiInput("Grad");
  std::vector<Tensor*> accs = ctx.MultiOutput("Out");
  FLOTILLA_ENFORCE_EQ(grads.size(), accs.size(), ctx.Where(), ": Grad and Out differ in length");
  for (size_t i = 0; i < grads.size(); ++i) {
    FLOTILLA_CHECK(grads[i]->numel() == accs[i]->numel(), InvalidArgument, ctx.Where(),
                   ": gradient ", ctx.InputName("Grad", i), " has ", grads[i]->numel(),
                   " elements but its accumulator has ", accs[i]->numel());
    VisitDType(accs[i]->dtype(), [&]<typename T>() {
      T* acc = accs[i]->data<T>();
      const T* g = grads[i]->data<T>();
      for (int64_t j = 0, n = accs[i]->numel(); j < n; ++j) acc[j] += g[j];
    });
  }
}

// Steps count from 1. Before begin_step the action runs every step; from
// begin_step on, on every k_steps-th step.
bool GateOpen(int64_t step, int64_t k_steps, int64_t begin_step) {
  if (step < begin_step) return true;
  return (step - begin_step + 1) % k_steps == 0;
}

void StepGateKernel(ExecutionContext& ctx) {
  Tensor* step = ctx.Output("StepOut");
  int64_t s = ++step->data<int64_t>()[0];
  bool open = GateOpen(s, ctx.Attr<int32_t>("k_steps"), ctx.Attr<int32_t>("begin_step"));
  Tensor* cond = ctx.Output("Cond");
  cond->Resize({1});
  cond->mutable_data<int32_t>()[0] = open ? 1 : 0;
}

// The parsed sub-program and the executor that runs it, kept per op.
struct SubProgram {
  std::unique_ptr<Program> program;
  std::unique_ptr<Executor> executor;
};

void ConditionalBlockKernel(ExecutionContext& ctx) {
  if (ctx.Input("Cond").data<int32_t>()[0] == 0) return;
  auto* sub = ctx.OutputVar("State")->GetMutableObject<SubProgram>();
  if (!sub->program) {
    sub->program = std::make_unique<Program>(
        Program::Parse(Base64Decode(ctx.Attr<std::string>("sub_program")), ctx.Where()));
    sub->executor = std::make_unique<Executor>(ctx.place());
  }
  // The sub-program declares no variables, so every name resolves to the
  // caller's scope (or its ancestors) and results stay visible there.
  sub->executor->Run(*sub->program, {}, {}, &ctx.scope());
}

}  // namespace

void RegisterStepOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "c_grad_accumulate", .kernels = {{Place::Kind::kCPU, GradAccumulateKernel}}});
  r.Register({.type = "c_step_gate",
              .kernels = {{Place::Kind::kCPU, StepGateKernel}},
              .default_attrs = {{"k_steps", int32_t{1}}, {"begin_step", int32_t{1}}}});
  r.Register({.type = "c_conditional_block", .kernels = {{Place::Kind::kCPU, ConditionalBlockKernel}}});
}

}  // namespace flotilla::fleet
