// FuzzInput: reads typed fields off the front of a fuzz input. Reads past
// the end yield zeros and empty strings, so every input is a valid sequence
// of choices; the same bytes always make the same choices (seed corpora are
// written in this layout by tests/fuzz/make_seeds.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace flotilla::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  uint8_t U8() { return Fixed<uint8_t>(); }
  uint16_t U16() { return Fixed<uint16_t>(); }
  uint32_t U32() { return Fixed<uint32_t>(); }
  int64_t I64() { return Fixed<int64_t>(); }
  // A string of U16() % (max + 1) bytes (fewer when the input ends).
  std::string Str(size_t max = 65535) { return Take(U16() % (max + 1)); }
  // Up to n bytes.
  std::string Take(size_t n) {
    n = std::min(n, left());
    std::string out(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return out;
  }
  // Everything that is left.
  std::string Rest() { return Take(left()); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  template <typename T>
  T Fixed() {
    T v{};
    const size_t n = std::min(sizeof(T), left());
    std::memcpy(&v, p_, n);
    p_ += n;
    return v;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

// The fuzz targets' writer side: appends fields in FuzzInput's layout.
class FuzzWriter {
 public:
  FuzzWriter& U8(uint8_t v) { return Raw(&v, 1); }
  FuzzWriter& U16(uint16_t v) { return Raw(&v, 2); }
  FuzzWriter& U32(uint32_t v) { return Raw(&v, 4); }
  FuzzWriter& I64(int64_t v) { return Raw(&v, 8); }
  FuzzWriter& Str(const std::string& s) {
    U16(static_cast<uint16_t>(s.size()));
    return Raw(s.data(), s.size());
  }
  FuzzWriter& Bytes(const std::string& s) { return Raw(s.data(), s.size()); }
  const std::string& data() const { return out_; }

 private:
  FuzzWriter& Raw(const void* p, size_t n) {
    out_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string out_;
};

}  // namespace flotilla::fuzz
