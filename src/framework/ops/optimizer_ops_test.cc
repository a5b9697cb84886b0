#include <gtest/gtest.h>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

// Optimizer ops are not differentiable.
void AddOptimizerGradChecks(GradCheckRegistry& registry) {}

namespace {

void SetSparseGrad(Scope& scope, std::vector<int64_t> rows, const std::vector<double>& values,
                   int64_t height, int64_t width) {
  auto n = static_cast<int64_t>(rows.size());
  *scope.Var("g")->ResetSelectedRows() =
      SelectedRows(std::move(rows), Tensor::FromVector<double>(values, {n, width}), height);
}

const Tensor& Var(Scope& scope, const std::string& name) { return scope.GetVar(name).GetTensor(); }

// ---- sgd ----

OpDesc SgdOp() {
  return OpDesc("sgd").In("Param", {"p"}).In("Grad", {"g"}).In("LearningRate", {"lr"}).Out("ParamOut", {"p"});
}

TEST(OptimizerOps, SgdDenseUpdatesInPlace) {
  auto outs = RunOp(SgdOp(), {{"p", Tensor::FromVector<float>({1, 2, 3}, {3})},
                              {"g", Tensor::FromVector<float>({.1f, .2f, .3f}, {3})},
                              {"lr", Tensor::Scalar<float>(.5f)}});
  ExpectValuesNear(outs.at("p"), {.95, 1.9, 2.85}, 1e-6, "param");
}

TEST(OptimizerOps, SgdSparseSumsRepeatedRows) {
  Scope scope;
  SetTensor(scope, "p", Tensor::FromVector<double>({1, 1, 2, 2, 3, 3}, {3, 2}));
  SetTensor(scope, "lr", Tensor::Scalar<float>(.1f));
  SetSparseGrad(scope, {2, 0, 2}, {1, 1, 2, 2, 3, 3}, 3, 2);
  RunKernel(SgdOp(), scope);
  ExpectValuesNear(Var(scope, "p"), {.8, .8, 2, 2, 2.6, 2.6}, 1e-7, "param");
}

TEST(OptimizerOps, SgdWritesSeparateOutputLeavingParam) {
  Scope scope;
  SetTensor(scope, "p", Tensor::FromVector<double>({1}, {1}));
  SetTensor(scope, "g", Tensor::FromVector<double>({1}, {1}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(.25));
  RunKernel(OpDesc("sgd").In("Param", {"p"}).In("Grad", {"g"}).In("LearningRate", {"lr"}).Out("ParamOut", {"q"}),
            scope);
  ExpectValuesNear(Var(scope, "q"), {.75}, 1e-12, "out");
  ExpectValuesNear(Var(scope, "p"), {1}, 0, "param");
}

TEST(OptimizerOps, SgdRejectsBadGradAndLearningRate) {
  auto p = Tensor::FromVector<double>({1, 2}, {2});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SgdOp(), {{"p", p}, {"g", Tensor::FromVector<double>({1, 2, 3}, {3})}, {"lr", Tensor::Scalar<double>(1)}}); },
      {"sgd", "Grad", "[3]", "[2]"});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SgdOp(), {{"p", p}, {"g", p}, {"lr", Tensor::FromVector<double>({1, 2}, {2})}}); },
      {"LearningRate", "one element"});
  Scope scope;
  SetTensor(scope, "p", Tensor::FromVector<double>({1, 2}, {2, 1}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(1));
  SetSparseGrad(scope, {5}, {1}, 2, 1);
  ExpectErrorMentions<InvalidArgument>([&] { RunKernel(SgdOp(), scope); }, {"row 5", "2 rows"});
}

// ---- momentum ----

OpDesc MomentumOp(bool nesterov) {
  return OpDesc("momentum")
      .In("Param", {"p"})
      .In("Grad", {"g"})
      .In("Velocity", {"v"})
      .In("LearningRate", {"lr"})
      .Out("ParamOut", {"p"})
      .Out("VelocityOut", {"v"})
      .Set("mu", 0.9)
      .Set("use_nesterov", nesterov);
}

void InitMomentum(Scope& scope) {
  SetTensor(scope, "p", Tensor::FromVector<double>({1, 2}, {2}));
  SetTensor(scope, "v", Tensor::FromVector<double>({.5, -.5}, {2}));
  SetTensor(scope, "g", Tensor::FromVector<double>({1, 1}, {2}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(.1));
}

TEST(OptimizerOps, MomentumDense) {
  Scope scope;
  InitMomentum(scope);
  RunKernel(MomentumOp(false), scope);
  ExpectValuesNear(Var(scope, "v"), {1.45, .55}, 1e-12, "velocity");
  ExpectValuesNear(Var(scope, "p"), {.855, 1.945}, 1e-12, "param");
}

TEST(OptimizerOps, MomentumNesterov) {
  Scope scope;
  InitMomentum(scope);
  RunKernel(MomentumOp(true), scope);
  ExpectValuesNear(Var(scope, "p"), {.7695, 1.8505}, 1e-12, "param");
}

TEST(OptimizerOps, MomentumSparseDecaysVelocityOfAbsentRows) {
  Scope scope;
  SetTensor(scope, "p", Tensor::FromVector<double>({1, 2}, {2, 1}));
  SetTensor(scope, "v", Tensor::FromVector<double>({1, 1}, {2, 1}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(.1));
  SetSparseGrad(scope, {1}, {2}, 2, 1);
  RunKernel(MomentumOp(false), scope);
  ExpectValuesNear(Var(scope, "v"), {.9, 2.9}, 1e-12, "velocity");
  ExpectValuesNear(Var(scope, "p"), {.91, 1.71}, 1e-12, "param");
}

// ---- adam ----

OpDesc AdamOp(bool lazy = false) {
  return OpDesc("adam")
      .In("Param", {"p"})
      .In("Grad", {"g"})
      .In("LearningRate", {"lr"})
      .In("Moment1", {"m1"})
      .In("Moment2", {"m2"})
      .In("Beta1Pow", {"b1p"})
      .In("Beta2Pow", {"b2p"})
      .Out("ParamOut", {"p"})
      .Out("Moment1Out", {"m1"})
      .Out("Moment2Out", {"m2"})
      .Out("Beta1PowOut", {"b1p"})
      .Out("Beta2PowOut", {"b2p"})
      .Set("beta1", 0.9)
      .Set("beta2", 0.999)
      .Set("epsilon", 1e-8)
      .Set("lazy_mode", lazy);
}

void InitAdam(Scope& scope, const Tensor& p, double m1, double m2) {
  Tensor a = p.Clone(), b = p.Clone();
  for (int64_t i = 0; i < p.numel(); ++i) {
    a.data<double>()[i] = m1;
    b.data<double>()[i] = m2;
  }
  SetTensor(scope, "p", p);
  SetTensor(scope, "m1", a);
  SetTensor(scope, "m2", b);
  SetTensor(scope, "b1p", Tensor::Scalar<float>(.9f));
  SetTensor(scope, "b2p", Tensor::Scalar<float>(.999f));
  SetTensor(scope, "lr", Tensor::Scalar<float>(.01f));
}

TEST(OptimizerOps, AdamFirstStepMovesByLearningRate) {
  Scope scope;
  InitAdam(scope, Tensor::FromVector<double>({1, 2}, {2}), 0, 0);
  SetTensor(scope, "g", Tensor::FromVector<double>({.5, -2}, {2}));
  RunKernel(AdamOp(), scope);
  // Bias correction makes the first step lr·sign(g).
  ExpectValuesNear(Var(scope, "p"), {.99, 2.01}, 1e-6, "param");  // float beta powers
  ExpectValuesNear(Var(scope, "m1"), {.05, -.2}, 1e-12, "moment1");
  ExpectValuesNear(Var(scope, "m2"), {.00025, .004}, 1e-12, "moment2");
  ExpectValuesNear(Var(scope, "b1p"), {.81}, 1e-6, "beta1 pow");
  ExpectValuesNear(Var(scope, "b2p"), {.998001}, 1e-6, "beta2 pow");
  EXPECT_EQ(Var(scope, "b1p").dtype(), DType::kFloat32);
}

TEST(OptimizerOps, AdamSparseNonLazyEqualsDenseGrad) {
  Scope sparse, dense;
  for (Scope* s : {&sparse, &dense}) InitAdam(*s, Tensor::FromVector<double>({1, 2, 3}, {3, 1}), .1, .01);
  SetSparseGrad(sparse, {0, 0}, {.25, .25}, 3, 1);
  SetTensor(dense, "g", Tensor::FromVector<double>({.5, 0, 0}, {3, 1}));
  RunKernel(AdamOp(), sparse);
  RunKernel(AdamOp(), dense);
  for (const char* v : {"p", "m1", "m2"}) ExpectValuesNear(Var(sparse, v), Values(Var(dense, v)), 1e-12, v);
  ExpectValuesNear(Var(sparse, "m1"), {.14, .09, .09}, 1e-12, "moment1");
}

TEST(OptimizerOps, AdamLazyUpdatesOnlyListedRows) {
  Scope lazy, dense;
  for (Scope* s : {&lazy, &dense}) InitAdam(*s, Tensor::FromVector<double>({1, 2, 3}, {3, 1}), .1, .01);
  SetSparseGrad(lazy, {0, 0}, {.25, .25}, 3, 1);
  SetTensor(dense, "g", Tensor::FromVector<double>({.5, 0, 0}, {3, 1}));
  RunKernel(AdamOp(true), lazy);
  RunKernel(AdamOp(), dense);
  ExpectValuesNear(Var(lazy, "m1"), {.14, .1, .1}, 1e-12, "moment1");
  ExpectValuesNear(Var(lazy, "m2"), {Values(Var(dense, "m2"))[0], .01, .01}, 1e-12, "moment2");
  ExpectValuesNear(Var(lazy, "p"), {Values(Var(dense, "p"))[0], 2, 3}, 1e-12, "param");
}

TEST(OptimizerOps, AdamRejectsMismatchedMoment) {
  Scope scope;
  InitAdam(scope, Tensor::FromVector<double>({1, 2}, {2}), 0, 0);
  SetTensor(scope, "g", Tensor::FromVector<double>({1, 1}, {2}));
  SetTensor(scope, "m2", Tensor::FromVector<double>({0}, {1}));
  ExpectErrorMentions<InvalidArgument>([&] { RunKernel(AdamOp(), scope); }, {"adam", "Moment2", "[1]"});
}

// ---- adagrad ----

OpDesc AdagradOp() {
  return OpDesc("adagrad")
      .In("Param", {"p"})
      .In("Grad", {"g"})
      .In("Moment", {"m"})
      .In("LearningRate", {"lr"})
      .Out("ParamOut", {"p"})
      .Out("MomentOut", {"m"})
      .Set("epsilon", 1e-6);
}

TEST(OptimizerOps, AdagradDense) {
  Scope scope;
  SetTensor(scope, "p", Tensor::FromVector<double>({1, 1}, {2}));
  SetTensor(scope, "m", Tensor::FromVector<double>({0, 3}, {2}));
  SetTensor(scope, "g", Tensor::FromVector<double>({1, -1}, {2}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(.1));
  RunKernel(AdagradOp(), scope);
  ExpectValuesNear(Var(scope, "m"), {1, 4}, 1e-12, "moment");
  ExpectValuesNear(Var(scope, "p"), {1 - .1 / 1.000001, 1 + .1 / 2.000001}, 1e-12, "param");
}

TEST(OptimizerOps, AdagradSparseMergesDuplicateRows) {
  Scope scope;
  SetTensor(scope, "p", Tensor::FromVector<double>({1, 1}, {2, 1}));
  SetTensor(scope, "m", Tensor::FromVector<double>({0, 0}, {2, 1}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(.1));
  SetSparseGrad(scope, {1, 1}, {1, 2}, 2, 1);
  RunKernel(AdagradOp(), scope);
  // Merged gradient 3 (not 1 then 2): moment 9, not 1 + 4.
  ExpectValuesNear(Var(scope, "m"), {0, 9}, 1e-12, "moment");
  ExpectValuesNear(Var(scope, "p"), {1, 1 - .3 / 3.000001}, 1e-12, "param");
}

}  // namespace
}  // namespace flotilla::testing
