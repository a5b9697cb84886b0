#include "tensor_file.h"

#include <bit>
#include <cstring>

#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/io/checkpoint.h"

static_assert(std::endian::native == std::endian::little,
              "tensor files are little-endian; add byte swapping for this host");

namespace flotilla::io {
namespace internal {
namespace {

constexpr char kMagic[4] = {'F', 'L', 'T', 'N'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kVersionWithLoD = 2;
constexpr size_t kFixedHeader = 4 + 3 * sizeof(uint32_t);
constexpr uint32_t kMaxRank = 64;
constexpr uint32_t kMaxLoDLevels = 64;

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T Get(const std::string& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

bool IsKnownDType(uint32_t code) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    if (code == static_cast<uint32_t>(d)) return true;
  }
  return false;
}

void PutLoD(std::string* out, const LoD& lod) {
  Put<uint32_t>(out, static_cast<uint32_t>(lod.size()));
  for (const LoDLevel& level : lod) {
    Put<uint64_t>(out, level.size());
    for (int64_t offset : level) Put<int64_t>(out, offset);
  }
}

// Reads the offsets at `*at` (advancing it) within `body` bytes.
LoD GetLoD(const std::string& bytes, size_t* at, size_t body, const std::string& what) {
  FLOTILLA_CHECK(*at + sizeof(uint32_t) <= body, Corruption, what, " is truncated inside its LoD");
  const uint32_t levels = Get<uint32_t>(bytes, *at);
  *at += sizeof(uint32_t);
  FLOTILLA_CHECK(levels <= kMaxLoDLevels, Corruption, what, " claims ", levels, " LoD levels");
  LoD lod(levels);
  for (LoDLevel& level : lod) {
    FLOTILLA_CHECK(*at + sizeof(uint64_t) <= body, Corruption, what, " is truncated inside its LoD");
    const uint64_t count = Get<uint64_t>(bytes, *at);
    *at += sizeof(uint64_t);
    FLOTILLA_CHECK(count <= (body - *at) / sizeof(int64_t), Corruption, what, " claims ", count,
                   " LoD offsets, more than its bytes hold");
    level.resize(count);
    for (uint64_t i = 0; i < count; ++i) level[i] = Get<int64_t>(bytes, *at + i * sizeof(int64_t));
    *at += count * sizeof(int64_t);
  }
  return lod;
}

}  // namespace

std::string EncodeTensor(const Tensor& tensor) {
  std::string out(kMagic, sizeof(kMagic));
  Put<uint32_t>(&out, tensor.has_lod() ? kVersionWithLoD : kVersion);
  Put<uint32_t>(&out, static_cast<uint32_t>(tensor.dtype()));
  Put<uint32_t>(&out, static_cast<uint32_t>(tensor.rank()));
  for (int64_t d : tensor.dims()) Put<int64_t>(&out, d);
  if (tensor.has_lod()) PutLoD(&out, tensor.lod());
  if (tensor.nbytes() > 0) {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  }
  Put<uint32_t>(&out, Crc32c(out.data(), out.size()));
  return out;
}

Tensor DecodeTensor(const std::string& bytes, const std::string& what) {
  FLOTILLA_CHECK(bytes.size() >= kFixedHeader + sizeof(uint32_t), Corruption, what,
                 " is truncated: ", bytes.size(), " bytes is shorter than a tensor header");
  FLOTILLA_CHECK(std::memcmp(bytes.data(), kMagic, 4) == 0, Corruption, what,
                 " is not a Flotilla tensor file (bad magic)");
  const size_t body = bytes.size() - sizeof(uint32_t);
  FLOTILLA_CHECK(Crc32c(bytes.data(), body) == Get<uint32_t>(bytes, body), Corruption, what,
                 " fails its CRC32C checksum (truncated or corrupt)");
  const uint32_t version = Get<uint32_t>(bytes, 4);
  FLOTILLA_CHECK(version == kVersion || version == kVersionWithLoD, Corruption, what,
                 " has unsupported version ", version);
  uint32_t code = Get<uint32_t>(bytes, 8);
  uint32_t rank = Get<uint32_t>(bytes, 12);
  FLOTILLA_CHECK(IsKnownDType(code) && rank <= kMaxRank, Corruption, what,
                 " has an invalid header (dtype code ", code, ", rank ", rank, ")");
  size_t data_at = kFixedHeader + rank * sizeof(int64_t);
  FLOTILLA_CHECK(data_at <= body, Corruption, what, " is truncated inside its header");
  Dims dims(rank);
  for (uint32_t i = 0; i < rank; ++i) dims[i] = Get<int64_t>(bytes, kFixedHeader + i * 8);
  LoD lod;
  if (version == kVersionWithLoD) lod = GetLoD(bytes, &data_at, body, what);
  const DType dtype = static_cast<DType>(code);
  // Sized and checked against the bytes present before anything is allocated.
  const size_t data_bytes = CheckedByteSize(dims, SizeOf(dtype), body - data_at, what);
  FLOTILLA_CHECK(data_bytes == body - data_at, Corruption, what, " holds ", body - data_at,
                 " data bytes but its header says ", DTypeName(dtype), " ", DimsToString(dims));
  FLOTILLA_CHECK(IsValidLoD(lod, dims.empty() ? -1 : dims[0]), Corruption, what,
                 " holds an invalid LoD ", LoDToString(lod), " for shape ", DimsToString(dims));
  Tensor t(dtype, dims);
  void* dst = t.raw_mutable_data(t.dtype());
  if (t.nbytes() > 0) std::memcpy(dst, bytes.data() + data_at, t.nbytes());
  t.set_lod(std::move(lod));
  return t;
}

}  // namespace internal

void SaveTensor(const std::string& path, const Tensor& tensor) {
  WriteFileAtomic(path, internal::EncodeTensor(tensor));
}

Tensor LoadTensor(const std::string& path) {
  const std::string what = "tensor file '" + path + "'";
  return internal::DecodeTensor(ReadFileAtMost(path, UINT64_MAX, what), what);
}

}  // namespace flotilla::io
