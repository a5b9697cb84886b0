// A ResNet basic block and a bottleneck block (behind a conv-bn-relu stem
// and a max pool, followed by global average pooling) match PyTorch 1.13
// forward and backward to 1e-4: Flotilla runs them here, writes input,
// parameters (by their Paddle names), output and gradients, and
// tests/torch_resnet_blocks.py recomputes everything in torch. Skipped, with
// the reason, where python3-torch is not installed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "flotilla/api/layers.h"
#include "flotilla/framework/backward.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/models/resnet.h"
#include "launch_test_util.h"

namespace flotilla {
namespace {

nlohmann::json Write(const std::string& dir, const std::string& name, const Tensor& t) {
  std::string file = name;
  for (char& c : file) c = (c == '/' || c == '@') ? '_' : c;
  file += ".f32";
  std::ofstream(dir + "/" + file, std::ios::binary)
      .write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
  return {{"file", file}, {"shape", t.dims()}};
}

Tensor Random(const Dims& dims, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(Numel(dims));
  for (auto& x : v) x = d(rng);
  return Tensor::FromVector(v, dims);
}

void SetVar(Scope& scope, const std::string& name, const Tensor& value) {
  scope.GetVar(name).GetMutableTensor()->CopyFrom(value);
}

// Builds stem + block, runs forward and backward, writes DIR/<kind>.json.
void RunFlotilla(const std::string& dir, const std::string& kind) {
  RegisterAllOps();
  Program main, startup;
  ProgramGuard guard(main, startup);
  UniqueNameGuard names;
  startup.set_random_seed(7);
  auto x = layers::data("x", {4, 10, 10});
  x.set_stop_gradient(false);
  auto g = layers::data("g", {16, 1, 1});
  auto y = models::ConvBnLayer(x, 8, 3, 1, "relu", "conv1");
  y = layers::pool2d(y, 3, "max", 2, 1);
  y = kind == "basic" ? models::BasicBlock(y, 16, 2, false, "res3a")
                      : models::BottleneckBlock(y, 4, 2, "res3a");
  auto out = layers::pool2d(y, 1, "avg", 1, 0, true);
  auto loss = layers::reduce_sum(layers::elementwise_mul(out, g));
  auto params_grads = AppendBackward(loss);
  std::vector<std::string> fetch{out.name(), GradVarName("x")};
  for (const auto& [p, grad] : params_grads) fetch.push_back(grad.name());
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  // Batch-norm scales and offsets away from their 1/0 start, so they matter.
  for (const auto& [p, grad] : params_grads) {
    if (p.name().find("_scale") != std::string::npos) SetVar(scope, p.name(), Random(p.shape(), 3, 0.5f, 1.5f));
    if (p.name().find("_offset") != std::string::npos) SetVar(scope, p.name(), Random(p.shape(), 4, -0.5f, 0.5f));
  }
  Tensor xv = Random({3, 4, 10, 10}, 1, -1, 1), gv = Random({3, 16, 1, 1}, 2, 0.5f, 1.5f);
  auto values = exe.Run(main, {{"x", xv}, {"g", gv}}, fetch, &scope);
  nlohmann::json c = {{"kind", kind}, {"block", "res3a"}, {"stride", 2}};
  c["input"] = Write(dir, kind + "_x", xv);
  c["upstream"] = Write(dir, kind + "_g", gv);
  c["output"] = Write(dir, kind + "_out", values[0]);
  c["input_grad"] = Write(dir, kind + "_x@GRAD", values[1]);
  for (size_t i = 0; i < params_grads.size(); ++i) {
    const std::string& p = params_grads[i].first.name();
    c["params"][p] = Write(dir, kind + "_" + p, scope.GetVar(p).GetTensor());
    c["param_grads"][p] = Write(dir, kind + "_" + p + "@GRAD", values[2 + i]);
  }
  std::ofstream(dir + "/" + kind + ".json") << c.dump(1);
}

TEST(ResNetBlocks, MatchPyTorchForwardAndBackward) {
  launch_test::TempDir dir;
  RunFlotilla(dir.path(), "basic");
  RunFlotilla(dir.path(), "bottleneck");
  const std::string script = std::string(std::getenv("FLOTILLA_SOURCE_DIR")) + "/tests/torch_resnet_blocks.py";
  const std::string log = dir / "torch.log";
  const int status = std::system(("/usr/bin/python3 " + script + " " + dir.path() + " 1e-4 > " + log + " 2>&1").c_str());
  const std::string report = launch_test::ReadText(log);
  std::printf("%s", report.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << report;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << report;
  EXPECT_NE(report.find("bottleneck res3a_branch2c_weights@GRAD"), std::string::npos) << report;
}

}  // namespace
}  // namespace flotilla
