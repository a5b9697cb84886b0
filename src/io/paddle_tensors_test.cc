#include "flotilla/io/paddle_tensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "flotilla/common/error.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

template <typename T> void Put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }

// The bytes Paddle writes for a float32 tensor [2] = {1, 2}, built field by
// field from the documented layout; `lod` adds one LoD level {0, 2}.
std::string PaddleFloatPair(bool lod, bool packed_dims) {
  std::string out;
  Put<uint32_t>(out, 0);
  Put<uint64_t>(out, lod ? 1 : 0);
  if (lod) {
    Put<uint64_t>(out, 2 * sizeof(uint64_t));
    Put<uint64_t>(out, 0);
    Put<uint64_t>(out, 2);
  }
  Put<uint32_t>(out, 0);
  std::string desc = packed_dims ? std::string("\x08\x05\x12\x01\x02", 5) : std::string("\x08\x05\x10\x02", 4);
  Put<int32_t>(out, static_cast<int32_t>(desc.size()));
  out += desc;
  Put<float>(out, 1.0f);
  Put<float>(out, 2.0f);
  return out;
}

TEST(PaddleTensorsTest, EncodesPaddlesLayout) {
  EXPECT_EQ(EncodePaddleTensors({Tensor::FromVector<float>({1.0f, 2.0f}, {2})}), PaddleFloatPair(false, false));
}

TEST(PaddleTensorsTest, DecodesLoDAndPackedDims) {
  for (bool lod : {false, true}) {
    for (bool packed : {false, true}) {
      auto t = DecodePaddleTensors(PaddleFloatPair(lod, packed), 1, "blob");
      ASSERT_EQ(t.size(), 1u);
      EXPECT_EQ(t[0].dims(), Dims({2}));
      EXPECT_EQ(t[0].ToVector<float>(), std::vector<float>({1.0f, 2.0f}));
    }
  }
}

TEST(PaddleTensorsTest, RoundTripsEveryDTypeAndEmptyTensors) {
  std::vector<Tensor> in = {Tensor::FromVector<int64_t>({1, -2, 3, 4, 5, 6}, {2, 3}),
                            Tensor::FromVector<int32_t>({7}, {1}), Tensor::FromVector<double>({0.5, 1.5}, {2, 1}),
                            Tensor(DType::kFloat32, {0, 4})};
  in[3].raw_mutable_data(DType::kFloat32);
  auto out = DecodePaddleTensors(EncodePaddleTensors(in), in.size(), "blob");
  ASSERT_EQ(out.size(), in.size());
  EXPECT_EQ(out[0].ToVector<int64_t>(), in[0].ToVector<int64_t>());
  EXPECT_EQ(out[1].ToVector<int32_t>(), in[1].ToVector<int32_t>());
  EXPECT_EQ(out[2].ToVector<double>(), in[2].ToVector<double>());
  EXPECT_EQ(out[2].dims(), Dims({2, 1}));
  EXPECT_EQ(out[3].dims(), Dims({0, 4}));
}

TEST(PaddleTensorsTest, RefusesTruncatedTrailingAndUnknownTypes) {
  std::string bytes = PaddleFloatPair(false, false);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(DecodePaddleTensors(bytes.substr(0, n), 1, "blob"), Corruption) << n;
  }
  EXPECT_THROW(DecodePaddleTensors(bytes + "x", 1, "blob"), Corruption);
  EXPECT_THROW(DecodePaddleTensors(bytes, 2, "blob"), Corruption);
  std::string fp16 = bytes;
  fp16[4 + 8 + 4 + 4 + 1] = 4;  // data type 4: float16
  EXPECT_THROW(DecodePaddleTensors(fp16, 1, "blob"), InvalidArgument);
}

TEST(PaddleTensorsTest, CombinedFileRoundTripsThroughScopes) {
  testing::TempDir dir;
  Scope src;
  *src.Var("b")->GetMutableTensor() = Tensor::FromVector<float>({3.0f}, {1});
  *src.Var("a")->GetMutableTensor() = Tensor::FromVector<int64_t>({4, 5}, {2});
  SaveCombined(dir / "sub/params", {"a", "b"}, src);
  Scope dst;
  LoadCombined(dir / "sub/params", {"a", "b"}, dst);
  EXPECT_EQ(dst.FindVar("a")->GetTensor().ToVector<int64_t>(), std::vector<int64_t>({4, 5}));
  EXPECT_EQ(dst.FindVar("b")->GetTensor().ToVector<float>(), std::vector<float>({3.0f}));
  EXPECT_THROW(LoadCombined(dir / "missing", {"a"}, dst), NotFound);
  EXPECT_THROW(SaveCombined(dir / "x", {"absent"}, src), NotFound);
  Scope untouched;
  EXPECT_THROW(LoadCombined(dir / "sub/params", {"a"}, untouched), Corruption);
  EXPECT_EQ(untouched.FindVar("a"), nullptr);
}

}  // namespace
}  // namespace flotilla::io
