// Test helpers for ops whose variables a feed cannot express: in-place
// state (optimizer moments, AUC histograms) and SelectedRows gradients.
// RunKernel calls an op's CPU kernel directly on variables of a Scope the
// test owns, with the op's default attributes filled in.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "flotilla/framework/scope.h"

namespace flotilla::testing {

inline void RunKernel(const OpDesc& op, Scope& scope) {
  RegisterAllOps();
  const OpInfo& info = OpRegistry::Global().Get(op.type);
  OpDesc full = op;
  for (const auto& [name, value] : info.default_attrs) {
    if (!full.HasAttr(name)) full.attrs[name] = value;
  }
  RuntimeContext rt;
  for (const auto& [slot, names] : full.inputs) {
    for (const auto& n : names) rt.inputs[slot].push_back(n == kEmptyVarName ? nullptr : scope.FindVar(n));
  }
  for (const auto& [slot, names] : full.outputs) {
    for (const auto& n : names) rt.outputs[slot].push_back(n == kEmptyVarName ? nullptr : scope.Var(n));
  }
  Place place = CPUPlace();
  ExecutionContext ctx(full, rt, scope, place);
  info.kernels.at(Place::Kind::kCPU)(ctx);
}

inline void SetTensor(Scope& scope, const std::string& name, const Tensor& value) {
  scope.Var(name)->ResetTensor()->ShareDataWith(value.Clone());
}

inline std::vector<double> Values(const Tensor& t) {
  return VisitDType(t.dtype(), [&]<typename T>() {
    std::vector<double> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<double>(t.data<T>()[i]));
    return out;
  });
}

inline void ExpectValuesNear(const Tensor& t, const std::vector<double>& expected, double tol,
                             const std::string& what) {
  std::vector<double> got = Values(t);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << what << "[" << i << "]";
}

// Runs `body` and expects a flotilla::Error subclass E whose message holds
// every string of `parts`.
template <typename E, typename Fn>
void ExpectErrorMentions(Fn&& body, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "expected an error mentioning " << (parts.empty() ? "" : parts[0]);
  } catch (const E& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

}  // namespace flotilla::testing
