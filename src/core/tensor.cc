#include "flotilla/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include "flotilla/common/enforce.h"

namespace flotilla {

namespace {
constexpr size_t kAlignment = 64;
}

Buffer::Buffer(size_t bytes) : size_(bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (data_ == nullptr) throw std::bad_alloc();
}

Buffer::Buffer(void* external, size_t bytes, std::function<void()> release)
    : data_(external), size_(bytes), release_(std::move(release)) {
  FLOTILLA_ENFORCE(static_cast<bool>(release_), "Buffer over external memory needs a release function");
}

Buffer::~Buffer() {
  if (release_) {
    release_();
  } else {
    std::free(data_);
  }
}

Tensor Tensor::Wrap(std::shared_ptr<Buffer> buffer, DType dtype, Dims dims) {
  Tensor t;
  t.Resize(std::move(dims));
  t.dtype_ = dtype;
  FLOTILLA_ENFORCE(buffer != nullptr && buffer->size() >= t.nbytes(), "Tensor::Wrap: a buffer of ",
                   buffer ? buffer->size() : 0, " bytes cannot hold a ", DTypeName(dtype), " tensor of shape ",
                   DimsToString(t.dims_));
  t.buffer_ = std::move(buffer);
  return t;
}

Tensor::Tensor(DType dtype, Dims dims, Place place)
    : dims_(std::move(dims)), numel_(Numel(dims_)), dtype_(dtype), place_(place) {
  FLOTILLA_ENFORCE(numel_ >= 0, "cannot create a tensor of shape ", DimsToString(dims_));
  raw_mutable_data(dtype);
}

int64_t Tensor::dim(int i) const {
  FLOTILLA_ENFORCE(i >= 0 && i < rank(), "dim ", i, " out of range for tensor of shape ",
                   DimsToString(dims_));
  return dims_[i];
}

bool Tensor::initialized() const {
  return buffer_ != nullptr && buffer_->size() >= offset_ + nbytes();
}

Tensor& Tensor::Resize(Dims dims) {
  for (auto d : dims) FLOTILLA_ENFORCE(d >= 0, "cannot resize a tensor to ", DimsToString(dims));
  dims_ = std::move(dims);
  numel_ = Numel(dims_);
  return *this;
}

Tensor& Tensor::set_dtype(DType dtype) {
  dtype_ = dtype;
  return *this;
}

Tensor& Tensor::Reshape(Dims dims) {
  FLOTILLA_ENFORCE_EQ(Numel(dims), numel(), "cannot reshape ", DimsToString(dims_), " to ",
                      DimsToString(dims));
  dims_ = std::move(dims);
  numel_ = Numel(dims_);
  return *this;
}

void* Tensor::raw_mutable_data(DType dtype) {
  dtype_ = dtype;
  size_t need = nbytes();
  if (buffer_ == nullptr || buffer_->external() || buffer_->size() < offset_ + need) {
    buffer_ = std::make_shared<Buffer>(need);
    offset_ = 0;
  }
  return static_cast<char*>(buffer_->data()) + offset_;
}

const void* Tensor::raw_data() const {
  FLOTILLA_ENFORCE(initialized(), "tensor of shape ", DimsToString(dims_),
                   " is not initialized (no data allocated)");
  return static_cast<const char*>(buffer_->data()) + offset_;
}

void* Tensor::raw_data() {
  return const_cast<void*>(static_cast<const Tensor*>(this)->raw_data());
}

void Tensor::CheckType(DType expected) const {
  FLOTILLA_ENFORCE(dtype_ == expected, "tensor holds ", DTypeName(dtype_), " but ",
                   DTypeName(expected), " was requested");
}

const LoD& Tensor::lod() const {
  static const LoD kNone;
  return lod_ ? *lod_ : kNone;
}

Tensor& Tensor::set_lod(LoD lod) {
  lod_ = lod.empty() ? nullptr : std::make_shared<const LoD>(std::move(lod));
  return *this;
}

void Tensor::CopyFrom(const Tensor& other) {
  lod_ = other.lod_;
  if (buffer_ != nullptr && buffer_ == other.buffer_ && offset_ == other.offset_) {
    dims_ = other.dims_;
    numel_ = other.numel_;
    dtype_ = other.dtype_;
    return;
  }
  dims_ = other.dims_;
  numel_ = other.numel_;
  place_ = other.place_;
  void* dst = raw_mutable_data(other.dtype_);
  if (other.nbytes() > 0) std::memcpy(dst, other.raw_data(), other.nbytes());
}

Tensor Tensor::Clone() const {
  Tensor t;
  t.CopyFrom(*this);
  return t;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  FLOTILLA_ENFORCE(rank() >= 1 && begin >= 0 && begin <= end && end <= dims_[0],
                   "slice [", begin, ", ", end, ") out of range for shape ", DimsToString(dims_));
  Tensor t = *this;
  int64_t row = dims_[0] == 0 ? 0 : numel() / dims_[0];
  t.offset_ = offset_ + static_cast<size_t>(begin * row) * SizeOf(dtype_);
  t.dims_[0] = end - begin;
  t.lod_ = nullptr;
  t.numel_ = Numel(t.dims_);
  return t;
}

void Tensor::SetZero() {
  void* p = raw_mutable_data(dtype_);
  if (nbytes() > 0) std::memset(p, 0, nbytes());
}

std::string Tensor::DebugString(int max_items) const {
  std::ostringstream out;
  out << "Tensor(" << DTypeName(dtype_) << ", " << DimsToString(dims_);
  if (lod_) out << ", lod " << LoDToString(*lod_);
  if (initialized()) {
    out << ", [";
    int64_t n = std::min<int64_t>(numel(), max_items);
    VisitDType(dtype_, [&]<typename T>() {
      for (int64_t i = 0; i < n; ++i) out << (i ? ", " : "") << data<T>()[i];
    });
    if (numel() > n) out << ", ...";
    out << "]";
  }
  out << ")";
  return out.str();
}

}  // namespace flotilla
