#include "flotilla/io/evaluate.h"

#include <gtest/gtest.h>

#include "flotilla/framework/op_registry.h"

namespace flotilla::io {
namespace {

TEST(EvaluateMean, WeightsBatchesBySize) {
  RegisterAllOps();
  Program program;
  Block& block = program.global_block();
  VarDesc& x = block.CreateVar("x");
  x.shape = {-1, 1};
  x.is_data = true;
  block.AppendOp(OpDesc("mean").In("X", {"x"}).Out("Out", {"m"}));
  auto samples = std::make_shared<std::vector<Sample>>();
  for (float v : {1.0f, 2.0f, 3.0f}) samples->push_back({Tensor::FromVector<float>({v}, {1})});
  DataFeeder feeder({block.GetVariable("x")});
  Executor exe;
  Scope scope;
  // Batches [1, 2] and [3]: means 1.5 and 3, weighted (2·1.5 + 1·3) / 3 = 2.
  double mean = EvaluateMean(exe, program, feeder, Batch(FromSamples(samples), 2), "m", &scope);
  EXPECT_DOUBLE_EQ(mean, 2.0);
  EXPECT_THROW(EvaluateMean(exe, program, feeder, Batch(FromSamples(samples), 2), "x", &scope),
               InvalidArgument);
}

}  // namespace
}  // namespace flotilla::io
