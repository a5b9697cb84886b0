// Bounds on what checkpoint files may claim: shapes that overflow and
// stray names in a checkpoint root (manifest paths and file sizes:
// checkpoint_test.cc).
#include <gtest/gtest.h>

#include "flotilla/common/checksum.h"
#include "flotilla/common/file_util.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/checkpoint_manager.h"
#include "io/tensor_file.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

using testing::TempDir;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// A well-formed tensor file (magic, version, checksum) whose header claims
// float32 `dims` over `data_bytes` bytes of data.
std::string TensorFileClaiming(const Dims& dims, size_t data_bytes) {
  std::string out = "FLTN";
  Put<uint32_t>(&out, 1);
  Put<uint32_t>(&out, static_cast<uint32_t>(DType::kFloat32));
  Put<uint32_t>(&out, static_cast<uint32_t>(dims.size()));
  for (int64_t d : dims) Put<int64_t>(&out, d);
  out.append(data_bytes, '\0');
  Put<uint32_t>(&out, Crc32c(out.data(), out.size()));
  return out;
}

TEST(DecodeBounds, ShapesWhoseByteCountOverflowAreCorruption) {
  // 2^61 x 8 float32 elements: the element count wraps to 0 in 64 bits and
  // a decoder trusting it would accept a tensor with no data behind it.
  const std::vector<Dims> shapes = {
      {int64_t{1} << 61, 8}, {int64_t{1} << 62, int64_t{1} << 62}, {int64_t{1} << 62}, {-1, 0}};
  for (const Dims& dims : shapes) {
    EXPECT_THROW(internal::DecodeTensor(TensorFileClaiming(dims, 0), "test tensor"), Corruption)
        << DimsToString(dims);
  }
  EXPECT_THROW(Numel({int64_t{1} << 40, int64_t{1} << 40}), InvalidArgument);
  EXPECT_EQ(Numel({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
}

TEST(CheckpointManagerBounds, AStrayDirectoryInTheRootDoesNotBreakLaterSaves) {
  Program program;
  VarDesc& v = program.global_block().CreateVar("w");
  v.shape = {2};
  v.dtype = DType::kFloat32;
  v.persistable = true;
  Scope scope;
  *scope.Var("w")->GetMutableTensor() = Tensor::FromVector<float>({1, 2}, {2});
  TempDir tmp;
  const std::string root = tmp / "root";
  for (const char* stray : {"step-99999999999999999999", "step-", "step-12x", "step--3"}) {
    MakeDirs(root + "/" + stray);
  }
  CheckpointManager ckpt(root, 2);
  for (int64_t step : {1, 2, 3}) {
    TrainingState s;
    s.step = step;
    ckpt.Save(program, scope, s);
  }
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(FileExists(root + "/step-99999999999999999999"));
}

}  // namespace
}  // namespace flotilla::io
