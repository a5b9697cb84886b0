// Images for the vision readers: 8-bit RGB pixels decoded from JPEG by
// libjpeg-turbo, and the augmentations of Paddle's (and torchvision's)
// ImageNet training recipe. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "flotilla/core/tensor.h"

namespace flotilla::io {

// Row-major height x width x 3 (RGB).
struct Image {
  int height = 0;
  int width = 0;
  std::vector<uint8_t> pixels;
};

// Decodes a JPEG (any colour space, converted to RGB). Throws Corruption
// naming `what` (the file) and libjpeg-turbo's reason for bytes that are not
// a whole JPEG — truncated files included — and for images larger than
// max_pixels (checked from the header, before anything is allocated).
Image DecodeJpeg(const std::string& bytes, const std::string& what,
                 int64_t max_pixels = int64_t{1} << 28);
// Encodes `image` as a baseline JPEG of the given quality (1..100).
std::string EncodeJpeg(const Image& image, int quality = 95);

// Bilinear resize (pixel centres aligned, like torchvision and OpenCV).
Image Resize(const Image& image, int height, int width);
// The [top, top + height) x [left, left + width) window; must lie inside.
Image Crop(const Image& image, int top, int left, int height, int width);
Image FlipHorizontal(const Image& image);

// Inception-style crop: a window covering a uniform fraction of the area in
// [lower_scale, 1] with aspect ratio log-uniform in [lower_ratio,
// upper_ratio] (10 tries, then the centre crop), resized to size x size.
Image RandomResizedCrop(const Image& image, int size, std::mt19937_64& rng, double lower_scale = 0.08,
                        double lower_ratio = 3.0 / 4, double upper_ratio = 4.0 / 3);
// Resizes the short side to `resize_short`, then takes the centre size x size.
Image ResizeShortCenterCrop(const Image& image, int resize_short, int size);

// Writes (pixel - mean[c]) / std[c] in CHW order into out[3 * H * W]; mean
// and std are on the 0..255 scale.
void NormalizeToCHW(const Image& image, const float mean[3], const float std[3], float* out);

}  // namespace flotilla::io
