// Fuzzes the feed path of the Python bindings below pybind: a caller's
// buffer, shape and dtype wrapped as a Tensor without a copy (Tensor::Wrap,
// what _core does with a NumPy array's data pointer, nbytes, shape and
// dtype), then checked and run by an Executor and batched by a DataFeeder
// against variable x: float32 [-1, 3].
//
// Input: a dtype byte (int32, int64, float32, float64), a rank byte (0-4),
// that many i64 dims, then the buffer (the rest of the input).
#include <cstdlib>

#include "flotilla/common/error.h"
#include "flotilla/core/tensor.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "flotilla/io/data_feeder.h"
#include "fuzz/fuzz_input.h"

namespace flotilla::fuzz {
namespace {

struct Model {
  Model() {
    ops::RegisterBasicOps();  // "sum"; the target links no other kernels
    VarDesc& x = program.global_block().CreateVar("x");
    x.shape = {-1, 3};
    x.is_data = true;
    x.stop_gradient = true;
    program.global_block().AppendOp(OpDesc("sum").In("X", {"x", "x"}).Out("Out", {"y"}));
  }
  Program program;
};

Model& TheModel() {
  static Model model;
  return model;
}

Tensor WrapInput(FuzzInput& in) {
  constexpr DType kDTypes[] = {DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64};
  const DType dtype = kDTypes[in.U8() % 4];
  Dims dims(in.U8() % 5);
  for (auto& d : dims) d = in.I64();
  auto bytes = std::make_shared<std::string>(in.Rest());
  auto buffer = std::make_shared<Buffer>(bytes->data(), bytes->size(), [bytes] {});
  Tensor t = Tensor::Wrap(std::move(buffer), dtype, dims);
  if (t.nbytes() > bytes->size()) std::abort();  // Wrap must refuse a short buffer
  return t;
}

}  // namespace
}  // namespace flotilla::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flotilla;
  fuzz::FuzzInput in(data, size);
  fuzz::Model& model = fuzz::TheModel();
  try {
    Tensor x = fuzz::WrapInput(in);
    try {
      Executor exe;
      Scope scope;
      (void)exe.Run(model.program, {{"x", x}}, {"y"}, &scope);
    } catch (const Error&) {
    }
    if (x.rank() > 0) {
      io::DataFeeder feeder({model.program.global_block().GetVariable("x")});
      (void)feeder.Feed({{x}, {x}});
    }
  } catch (const Error&) {
    // refused with a named error
  }
  return 0;
}
