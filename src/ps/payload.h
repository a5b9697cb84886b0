// Views of bytes fields as typed arrays. Protobuf keeps bytes fields in
// heap strings (malloc-aligned), so reading them as float/int64 in place is
// safe; a length that is not a whole number of elements throws
// InvalidArgument naming `what`.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

template <typename T>
std::span<const T> AsSpan(const std::string& bytes, const std::string& what) {
  FLOTILLA_ENFORCE(bytes.size() % sizeof(T) == 0, what, ": payload of ", bytes.size(),
                   " bytes is not a whole number of ", sizeof(T), "-byte elements");
  return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
}

// Resizes `bytes` to n elements of T and returns a writable view. New
// bytes are left uninitialised where the library allows (C++23): callers
// overwrite every element.
template <typename T>
std::span<T> ResizeAs(std::string* bytes, size_t n) {
#if defined(__cpp_lib_string_resize_and_overwrite)
  // The size is captured, not taken from the callback's argument: GCC 12
  // passes the new capacity there when the string grows.
  const size_t size = n * sizeof(T);
  bytes->resize_and_overwrite(size, [size](char*, size_t) { return size; });
#else
  bytes->resize(n * sizeof(T));
#endif
  return {reinterpret_cast<T*>(bytes->data()), n};
}

template <typename T>
void AssignBytes(std::string* bytes, std::span<const T> values) {
  bytes->assign(reinterpret_cast<const char*>(values.data()), values.size_bytes());
}

}  // namespace flotilla::ps
