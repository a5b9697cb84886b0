// Tensor: a dense, contiguous, row-major array on a Place.
//
// A Tensor is a value handle: copying it shares the underlying buffer (like
// Paddle's Tensor and a shared_ptr); Clone() makes a deep copy. The buffer is
// 64-byte aligned and grows only: Resize() to a smaller or equal byte size
// keeps the allocation, so an executor reusing tensors across steps does not
// allocate. Not thread-safe for concurrent mutation of the same tensor.
//
// A tensor may carry sequence offsets over its first dimension (Paddle's
// LoD, see core/lod.h). They travel with the value: copies, ShareDataWith,
// CopyFrom and Clone keep them; Slice drops them; Resize and Reshape leave
// them as they are. They are held immutable and shared between copies, so
// copying a tensor never copies its offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "flotilla/core/dims.h"
#include "flotilla/core/dtype.h"
#include "flotilla/core/lod.h"
#include "flotilla/core/place.h"

namespace flotilla {

// A block of bytes owned by shared_ptr<Buffer>: either allocated here
// (64-byte aligned) or memory of another owner (a NumPy array) that the
// Buffer keeps alive through `release`, which runs when the Buffer dies, on
// whichever thread drops the last reference. Flotilla never writes into
// external memory: a tensor asked for mutable data over an external buffer
// gets a buffer of its own first.
class Buffer {
 public:
  explicit Buffer(size_t bytes);
  Buffer(void* external, size_t bytes, std::function<void()> release);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  bool external() const { return static_cast<bool>(release_); }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::function<void()> release_;  // set for external memory
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Dims dims, Place place = CPUPlace());

  // Builds a tensor holding a copy of `values` with shape `dims`.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, Dims dims);
  template <typename T>
  static Tensor Scalar(T value);
  // A tensor over `buffer`'s bytes (no copy); the buffer must hold at least
  // Numel(dims) * SizeOf(dtype) bytes. Throws InvalidArgument otherwise.
  static Tensor Wrap(std::shared_ptr<Buffer> buffer, DType dtype, Dims dims);

  const Dims& dims() const { return dims_; }
  int64_t dim(int i) const;
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  const Place& place() const { return place_; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * SizeOf(dtype_); }
  // True once memory is allocated for the current shape and dtype.
  bool initialized() const;

  // Sets the shape; memory is (re)allocated lazily by mutable_data().
  Tensor& Resize(Dims dims);
  Tensor& set_dtype(DType dtype);
  // Reshapes without touching data; numel must be unchanged.
  Tensor& Reshape(Dims dims);

  // Pointer to the data, allocating when needed (always over an external
  // buffer, which stays untouched). Sets dtype to T.
  template <typename T> T* mutable_data();
  void* raw_mutable_data(DType dtype);
  // Pointer to existing data; throws InvalidArgument when uninitialized or
  // when T does not match dtype().
  template <typename T> const T* data() const;
  template <typename T> T* data();
  const void* raw_data() const;
  void* raw_data();
  template <typename T> std::span<const T> span() const { return {data<T>(), size_t(numel())}; }
  template <typename T> std::vector<T> ToVector() const;

  // Sequence offsets; empty for a plain tensor. set_lod does not validate
  // (CheckLoD does); set_lod({}) drops them.
  const LoD& lod() const;
  bool has_lod() const { return lod_ != nullptr; }
  int lod_level() const { return lod_ ? static_cast<int>(lod_->size()) : 0; }
  Tensor& set_lod(LoD lod);
  // Takes `other`'s offsets (none when it has none) without copying them.
  Tensor& ShareLoD(const Tensor& other) {
    lod_ = other.lod_;
    return *this;
  }

  // Shares `other`'s buffer, shape, dtype and offsets.
  void ShareDataWith(const Tensor& other) { *this = other; }
  // Deep copy into this tensor (reusing this tensor's buffer when large enough).
  void CopyFrom(const Tensor& other);
  Tensor Clone() const;
  // A view of rows [begin, end) of the first dimension; shares the buffer,
  // carries no offsets.
  Tensor Slice(int64_t begin, int64_t end) const;
  void SetZero();
  // Shares the buffer when both are the same; for tests and debugging.
  bool SharesBufferWith(const Tensor& other) const { return buffer_ == other.buffer_; }
  std::string DebugString(int max_items = 8) const;

 private:
  void CheckType(DType expected) const;

  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;  // bytes into buffer_
  Dims dims_;
  int64_t numel_ = 1;  // Numel(dims_), cached: kernels call numel() in loops
  DType dtype_ = DType::kFloat32;
  Place place_;
  std::shared_ptr<const LoD> lod_;  // null: no offsets
};

// ---- template definitions ----

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, Dims dims) {
  Tensor t(DTypeOf<T>(), std::move(dims));
  FLOTILLA_ENFORCE_EQ(static_cast<int64_t>(values.size()), t.numel(),
                      "Tensor::FromVector: values do not fill shape ", DimsToString(t.dims()));
  T* out = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
Tensor Tensor::Scalar(T value) {
  return FromVector<T>({value}, {1});
}

template <typename T>
T* Tensor::mutable_data() {
  return static_cast<T*>(raw_mutable_data(DTypeOf<T>()));
}

template <typename T>
const T* Tensor::data() const {
  CheckType(DTypeOf<T>());
  return static_cast<const T*>(raw_data());
}

template <typename T>
T* Tensor::data() {
  CheckType(DTypeOf<T>());
  return static_cast<T*>(raw_data());
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  const T* p = data<T>();
  return std::vector<T>(p, p + numel());
}

}  // namespace flotilla
