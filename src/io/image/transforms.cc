#include <algorithm>
#include <cmath>

#include "flotilla/common/enforce.h"
#include "flotilla/io/image.h"

namespace flotilla::io {

Image Resize(const Image& img, int height, int width) {
  FLOTILLA_ENFORCE(height > 0 && width > 0 && img.height > 0 && img.width > 0,
                   "Resize: cannot resize ", img.width, "x", img.height, " to ", width, "x", height);
  Image out{height, width, std::vector<uint8_t>(size_t(height) * width * 3)};
  const double sy = double(img.height) / height, sx = double(img.width) / width;
  std::vector<int> x0(width), x1(width);
  std::vector<float> wx(width);
  for (int x = 0; x < width; ++x) {
    const double s = std::clamp((x + 0.5) * sx - 0.5, 0.0, double(img.width - 1));
    x0[x] = static_cast<int>(s);
    x1[x] = std::min(x0[x] + 1, img.width - 1);
    wx[x] = static_cast<float>(s - x0[x]);
  }
  for (int y = 0; y < height; ++y) {
    const double s = std::clamp((y + 0.5) * sy - 0.5, 0.0, double(img.height - 1));
    const int y0 = static_cast<int>(s), y1 = std::min(y0 + 1, img.height - 1);
    const float wy = static_cast<float>(s - y0);
    const uint8_t* r0 = img.pixels.data() + size_t(y0) * img.width * 3;
    const uint8_t* r1 = img.pixels.data() + size_t(y1) * img.width * 3;
    uint8_t* o = out.pixels.data() + size_t(y) * width * 3;
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float top = r0[x0[x] * 3 + c] * (1 - wx[x]) + r0[x1[x] * 3 + c] * wx[x];
        const float bot = r1[x0[x] * 3 + c] * (1 - wx[x]) + r1[x1[x] * 3 + c] * wx[x];
        o[x * 3 + c] = static_cast<uint8_t>(std::lround(std::clamp(top * (1 - wy) + bot * wy, 0.0f, 255.0f)));
      }
    }
  }
  return out;
}

Image Crop(const Image& img, int top, int left, int height, int width) {
  FLOTILLA_ENFORCE(top >= 0 && left >= 0 && height > 0 && width > 0 && top + height <= img.height &&
                       left + width <= img.width,
                   "Crop: window ", width, "x", height, " at (", left, ", ", top, ") is outside a ",
                   img.width, "x", img.height, " image");
  Image out{height, width, std::vector<uint8_t>(size_t(height) * width * 3)};
  for (int y = 0; y < height; ++y) {
    const uint8_t* src = img.pixels.data() + (size_t(top + y) * img.width + left) * 3;
    std::copy(src, src + size_t(width) * 3, out.pixels.data() + size_t(y) * width * 3);
  }
  return out;
}

Image FlipHorizontal(const Image& img) {
  Image out = img;
  for (int y = 0; y < img.height; ++y) {
    uint8_t* row = out.pixels.data() + size_t(y) * img.width * 3;
    for (int l = 0, r = img.width - 1; l < r; ++l, --r) {
      for (int c = 0; c < 3; ++c) std::swap(row[l * 3 + c], row[r * 3 + c]);
    }
  }
  return out;
}

Image RandomResizedCrop(const Image& img, int size, std::mt19937_64& rng, double lower_scale,
                        double lower_ratio, double upper_ratio) {
  const double area = double(img.height) * img.width;
  std::uniform_real_distribution<double> scale(lower_scale, 1.0);
  std::uniform_real_distribution<double> log_ratio(std::log(lower_ratio), std::log(upper_ratio));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * scale(rng), ratio = std::exp(log_ratio(rng));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w < 1 || h < 1 || w > img.width || h > img.height) continue;
    const int top = std::uniform_int_distribution<int>(0, img.height - h)(rng);
    const int left = std::uniform_int_distribution<int>(0, img.width - w)(rng);
    return Resize(Crop(img, top, left, h, w), size, size);
  }
  const int side = std::min(img.height, img.width);
  return Resize(Crop(img, (img.height - side) / 2, (img.width - side) / 2, side, side), size, size);
}

Image ResizeShortCenterCrop(const Image& img, int resize_short, int size) {
  FLOTILLA_ENFORCE(resize_short >= size, "ResizeShortCenterCrop: resize_short (", resize_short,
                   ") must be >= the crop size (", size, ")");
  const double s = double(resize_short) / std::min(img.height, img.width);
  const int h = std::max(size, static_cast<int>(std::lround(img.height * s)));
  const int w = std::max(size, static_cast<int>(std::lround(img.width * s)));
  Image r = Resize(img, h, w);
  return Crop(r, (h - size) / 2, (w - size) / 2, size, size);
}

void NormalizeToCHW(const Image& img, const float mean[3], const float std[3], float* out) {
  const size_t plane = size_t(img.height) * img.width;
  for (int c = 0; c < 3; ++c) {
    const float inv = 1.0f / std[c];
    float* o = out + c * plane;
    for (size_t i = 0; i < plane; ++i) o[i] = (img.pixels[i * 3 + c] - mean[c]) * inv;
  }
}

}  // namespace flotilla::io
