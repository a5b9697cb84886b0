#include "framework/ops/testing/grad_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/framework/program.h"
#include "framework/backward_internal.h"

namespace flotilla::testing {
namespace {

void DeclareInputs(Block& block, const std::map<std::string, Tensor>& inputs,
                   const std::vector<std::string>& check) {
  for (const auto& [name, value] : inputs) {
    VarDesc& v = block.CreateVar(name);
    v.dtype = value.dtype();
    v.shape = value.dims();
    v.stop_gradient = std::find(check.begin(), check.end(), name) == check.end();
  }
}

FeedMap CloneFeed(const std::map<std::string, Tensor>& inputs) {
  FeedMap feed;
  for (const auto& [name, value] : inputs) feed[name] = value.Clone();
  return feed;
}

double ToDouble(const Tensor& t, int64_t i) {
  return VisitDType(t.dtype(), [&]<typename T>() { return static_cast<double>(t.data<T>()[i]); });
}

void AddToElement(Tensor& t, int64_t i, double delta) {
  VisitDType(t.dtype(), [&]<typename T>() { t.data<T>()[i] += static_cast<T>(delta); });
}

bool IsFloat(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

// Output variables that form L.
std::vector<std::string> LossOutputs(const GradCheckCase& c, const std::map<std::string, Tensor>& outs) {
  if (!c.outputs.empty()) return c.outputs;
  std::vector<std::string> names;
  for (const auto& [name, value] : outs) {
    if (IsFloat(value.dtype())) names.push_back(name);
  }
  return names;
}

double Loss(const GradCheckCase& c, const std::map<std::string, Tensor>& inputs,
            const std::vector<std::string>& outputs, const std::map<std::string, Tensor>& weights) {
  auto outs = RunOp(c.op, inputs);
  double loss = 0;
  for (const auto& name : outputs) {
    const Tensor& o = outs.at(name);
    const Tensor& w = weights.at(name);
    for (int64_t i = 0; i < o.numel(); ++i) loss += ToDouble(o, i) * ToDouble(w, i);
  }
  return loss;
}

std::map<std::string, Tensor> AnalyticGrads(const GradCheckCase& c,
                                            const std::vector<std::string>& outputs,
                                            const std::map<std::string, Tensor>& weights) {
  Program program;
  Block& block = program.global_block();
  DeclareInputs(block, c.inputs, c.check);
  block.AppendOp(c.op);
  FeedMap feed = CloneFeed(c.inputs);
  for (const auto& name : outputs) {
    VarDesc& g = block.CreateVar(GradVarName(name));
    g.dtype = weights.at(name).dtype();
    g.shape = weights.at(name).dims();
    feed[GradVarName(name)] = weights.at(name);
  }
  std::set<std::string> no_grad;
  for (const auto& [name, value] : c.inputs) {
    if (std::find(c.check.begin(), c.check.end(), name) == c.check.end()) no_grad.insert(name);
  }
  auto grads = internal::AppendBackwardOps(block, outputs, no_grad);
  std::vector<std::string> fetch;
  for (const auto& x : c.check) {
    EXPECT_TRUE(grads.count(x)) << c.label << ": backward produced no gradient for '" << x << "'";
    if (!grads.count(x)) return {};
    fetch.push_back(grads.at(x));
  }
  Executor exe;
  Scope scope;
  auto values = exe.Run(program, feed, fetch, &scope);
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < c.check.size(); ++i) out[c.check[i]] = values[i];
  return out;
}

}  // namespace

Tensor RandomTensor(const Dims& dims, double lo, double hi, unsigned seed, DType dtype) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype, dims);
  VisitDType(dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng));
  });
  return t;
}

std::map<std::string, Tensor> RunOp(const OpDesc& op, const std::map<std::string, Tensor>& inputs) {
  RegisterAllOps();
  Program program;
  Block& block = program.global_block();
  DeclareInputs(block, inputs, {});
  block.AppendOp(op);
  std::vector<std::string> fetch = block.op(0).OutputArgumentNames();
  Executor exe;
  Scope scope;
  auto values = exe.Run(program, CloneFeed(inputs), fetch, &scope);
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < fetch.size(); ++i) out[fetch[i]] = values[i];
  return out;
}

void RunGradCheck(const GradCheckCase& c) {
  RegisterAllOps();
  auto forward = RunOp(c.op, c.inputs);
  auto outputs = LossOutputs(c, forward);
  ASSERT_FALSE(outputs.empty()) << c.label << ": the op has no float output to differentiate";
  std::map<std::string, Tensor> weights;
  unsigned seed = 100;
  for (const auto& name : outputs) {
    const Tensor& o = forward.at(name);
    weights[name] = RandomTensor(o.dims(), 0.5, 1.5, seed++, o.dtype());
  }
  auto analytic = AnalyticGrads(c, outputs, weights);
  if (analytic.empty()) return;
  for (const auto& x : c.check) {
    const Tensor& grad = analytic.at(x);
    const Tensor& value = c.inputs.at(x);
    ASSERT_EQ(grad.numel(), value.numel()) << c.label << ": gradient of '" << x << "' has shape "
                                           << DimsToString(grad.dims()) << ", input has "
                                           << DimsToString(value.dims());
    for (int64_t i = 0; i < value.numel(); ++i) {
      auto plus = c.inputs;
      plus[x] = value.Clone();
      AddToElement(plus[x], i, c.delta);
      auto minus = c.inputs;
      minus[x] = value.Clone();
      AddToElement(minus[x], i, -c.delta);
      double numeric = (Loss(c, plus, outputs, weights) - Loss(c, minus, outputs, weights)) / (2 * c.delta);
      double a = ToDouble(grad, i);
      EXPECT_NEAR(a, numeric, c.atol + c.rtol * std::abs(numeric))
          << c.label << ": d/d" << x << "[" << i << "]";
    }
  }
}

}  // namespace flotilla::testing
