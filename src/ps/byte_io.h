// Little-endian binary images for tables and RPC payloads. ByteReader checks
// every read against the end of the input and throws Corruption naming the
// source, so a truncated or mangled image never reads out of bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

class ByteWriter {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  template <typename T>
  void PutSpan(std::span<const T> v) {
    out_.append(reinterpret_cast<const char*>(v.data()), v.size_bytes());
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  ByteReader(std::string_view in, std::string what) : in_(in), what_(std::move(what)) {}

  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, Take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string GetString() {
    const uint32_t n = Get<uint32_t>();
    return std::string(Take(n), n);
  }
  template <typename T>
  void GetSpan(std::span<T> out) {
    const char* from = Take(out.size_bytes());
    if (!out.empty()) std::memcpy(out.data(), from, out.size_bytes());  // an empty span's data() may be null
  }
  // A count of elements of `element_bytes` each that must fit in what is
  // left: a corrupt count throws Corruption here instead of sizing a huge
  // buffer.
  size_t GetCount(size_t element_bytes) {
    const uint64_t n = Get<uint64_t>();
    FLOTILLA_CHECK(n <= (in_.size() - pos_) / element_bytes, Corruption, what_, ": count ", n,
                   " at offset ", pos_, " exceeds the ", in_.size() - pos_, " bytes left");
    return static_cast<size_t>(n);
  }
  template <typename T>
  size_t GetCount() {
    return GetCount(sizeof(T));
  }
  bool done() const { return pos_ == in_.size(); }
  size_t left() const { return in_.size() - pos_; }
  const std::string& what() const { return what_; }

 private:
  const char* Take(size_t n) {
    FLOTILLA_CHECK(n <= in_.size() - pos_, Corruption, what_, ": truncated (needs ", n,
                   " more bytes at offset ", pos_, " of ", in_.size(), ")");
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }

  std::string_view in_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace flotilla::ps
