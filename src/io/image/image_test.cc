#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "flotilla/io/image.h"

namespace flotilla::io {
namespace {

// A smooth gradient (JPEG keeps it within a few levels).
Image Gradient(int h, int w) {
  Image img{h, w, std::vector<uint8_t>(size_t(h) * w * 3)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img.pixels[(size_t(y) * w + x) * 3];
      p[0] = uint8_t(x * 255 / (w - 1));
      p[1] = uint8_t(y * 255 / (h - 1));
      p[2] = 128;
    }
  return img;
}

TEST(Image, JpegRoundTrip) {
  Image img = Gradient(24, 40);
  Image back = DecodeJpeg(EncodeJpeg(img, 95), "gradient.jpeg");
  ASSERT_EQ(back.height, 24);
  ASSERT_EQ(back.width, 40);
  int worst = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) worst = std::max(worst, std::abs(int(img.pixels[i]) - back.pixels[i]));
  EXPECT_LE(worst, 8);
}

TEST(Image, TruncatedAndForeignBytesAreCorruptionNamingTheFile) {
  std::string jpeg = EncodeJpeg(Gradient(32, 32));
  try {
    DecodeJpeg(jpeg.substr(0, jpeg.size() / 2), "train/3/00007.jpeg");
    ADD_FAILURE() << "a truncated JPEG decoded";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find("train/3/00007.jpeg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DecodeJpeg("GIF89a not a jpeg", "x.jpeg"), Corruption);
  EXPECT_THROW(DecodeJpeg("", "empty.jpeg"), Corruption);
}

TEST(Image, ResizeCropFlip) {
  Image img = Gradient(8, 8);
  Image r = Resize(img, 16, 4);
  EXPECT_EQ(r.height, 16);
  EXPECT_EQ(r.width, 4);
  Image c = Crop(img, 2, 3, 4, 5);
  EXPECT_EQ(c.pixels[0], img.pixels[(2 * 8 + 3) * 3]);
  Image f = FlipHorizontal(img);
  EXPECT_EQ(f.pixels[0], img.pixels[7 * 3]);
  EXPECT_THROW(Crop(img, 6, 0, 4, 4), InvalidArgument);
  Image same = Resize(img, 8, 8);
  EXPECT_EQ(same.pixels, img.pixels);
}

TEST(Image, AugmentationsGiveTheRequestedSize) {
  Image img = Gradient(30, 50);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20; ++i) {
    Image a = RandomResizedCrop(img, 16, rng);
    EXPECT_EQ(a.height, 16);
    EXPECT_EQ(a.width, 16);
  }
  Image v = ResizeShortCenterCrop(img, 20, 16);
  EXPECT_EQ(v.height, 16);
  EXPECT_EQ(v.width, 16);
  float out[3 * 16 * 16];
  const float mean[3] = {128, 128, 128}, std[3] = {2, 2, 2};
  NormalizeToCHW(v, mean, std, out);
  EXPECT_FLOAT_EQ(out[2 * 256], (v.pixels[2] - 128.0f) / 2);
}

}  // namespace
}  // namespace flotilla::io
