// JPEG through libjpeg-turbo's TurboJPEG API. One handle per thread.
#include <turbojpeg.h>

#include <memory>

#include "flotilla/common/enforce.h"
#include "flotilla/io/image.h"

namespace flotilla::io {
namespace {

struct HandleCloser {
  void operator()(void* h) const { tjDestroy(h); }
};
using Handle = std::unique_ptr<void, HandleCloser>;

tjhandle Decompressor() {
  thread_local Handle h(tjInitDecompress());
  FLOTILLA_CHECK(h != nullptr, Internal, "libjpeg-turbo: cannot create a decompressor");
  return h.get();
}

tjhandle Compressor() {
  thread_local Handle h(tjInitCompress());
  FLOTILLA_CHECK(h != nullptr, Internal, "libjpeg-turbo: cannot create a compressor");
  return h.get();
}

}  // namespace

Image DecodeJpeg(const std::string& bytes, const std::string& what, int64_t max_pixels) {
  tjhandle h = Decompressor();
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, data, bytes.size(), &width, &height, &subsamp, &colorspace) != 0) {
    FLOTILLA_THROW(Corruption, what, " is not a JPEG image (", bytes.size(), " bytes): ",
                   tjGetErrorStr2(h));
  }
  FLOTILLA_CHECK(width > 0 && height > 0 && int64_t(width) * height <= max_pixels, Corruption, what,
                 " declares ", width, "x", height, " pixels (at most ", max_pixels, " allowed)");
  Image img{height, width, std::vector<uint8_t>(size_t(width) * height * 3)};
  // TJFLAG_STOPONWARNING: a truncated file is an error, not a grey bottom.
  if (tjDecompress2(h, data, bytes.size(), img.pixels.data(), width, 0, height, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    FLOTILLA_THROW(Corruption, what, " is a damaged JPEG: ", tjGetErrorStr2(h));
  }
  return img;
}

std::string EncodeJpeg(const Image& image, int quality) {
  FLOTILLA_ENFORCE(quality >= 1 && quality <= 100, "EncodeJpeg: quality must be in [1, 100], got ", quality);
  FLOTILLA_ENFORCE(image.pixels.size() == size_t(image.width) * image.height * 3,
                   "EncodeJpeg: ", image.width, "x", image.height, " image holds ", image.pixels.size(),
                   " bytes, not width * height * 3");
  tjhandle h = Compressor();
  unsigned char* out = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): TurboJPEG's type
  if (tjCompress2(h, image.pixels.data(), image.width, 0, image.height, TJPF_RGB, &out, &size,
                  TJSAMP_444, quality, 0) != 0) {
    std::string why = tjGetErrorStr2(h);
    tjFree(out);
    FLOTILLA_THROW(Internal, "libjpeg-turbo cannot encode a ", image.width, "x", image.height,
                   " image: ", why);
  }
  std::string bytes(reinterpret_cast<char*>(out), size);
  tjFree(out);
  return bytes;
}

}  // namespace flotilla::io
