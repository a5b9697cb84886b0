// Paddle's tensor serialisation (see paddle_tensors.h for the layout).
#include "flotilla/io/paddle_tensors.h"

#include <cstring>
#include <filesystem>
#include <map>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/io/checkpoint.h"
#include "checkpoint_dir.h"
#include "manifest.h"

namespace flotilla::io {
namespace {

// A combined file larger than this is refused before it is read.
constexpr uint64_t kMaxCombinedBytes = uint64_t{1} << 40;
constexpr uint32_t kVersion = 0;

template <typename T> void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::string EncodeDesc(const Tensor& t) {
  std::string desc;
  desc.push_back(0x08);  // field 1, varint
  PutVarint(desc, static_cast<uint64_t>(t.dtype()));
  for (int64_t d : t.dims()) {
    desc.push_back(0x10);  // field 2, varint (unpacked, as Paddle's proto2 writes)
    PutVarint(desc, static_cast<uint64_t>(d));
  }
  return desc;
}

void EncodeOne(std::string& out, const Tensor& t) {
  FLOTILLA_ENFORCE(t.initialized() || t.numel() == 0, "cannot serialise an uninitialised tensor");
  Put<uint32_t>(out, kVersion);
  Put<uint64_t>(out, 0);  // no LoD
  Put<uint32_t>(out, kVersion);
  std::string desc = EncodeDesc(t);
  Put<int32_t>(out, static_cast<int32_t>(desc.size()));
  out += desc;
  if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
}

// Reads the bytes of one serialised tensor after another.
class Cursor {
 public:
  Cursor(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}

  template <typename T> T Get(const char* field) {
    T v;
    std::memcpy(&v, Take(sizeof(T), field).data(), sizeof(T));
    return v;
  }

  std::string_view Take(uint64_t n, const char* field) {
    FLOTILLA_CHECK(n <= bytes_.size() - pos_, Corruption, what_, " is truncated: ", field, " needs ", n,
                   " bytes at offset ", pos_, ", ", bytes_.size() - pos_, " left");
    std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  bool done() const { return pos_ == bytes_.size(); }
  size_t pos() const { return pos_; }
  const std::string& what() const { return what_; }

 private:
  std::string_view bytes_;
  std::string what_;
  size_t pos_ = 0;
};

uint64_t GetVarint(std::string_view s, size_t& i, const std::string& what) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    FLOTILLA_CHECK(i < s.size(), Corruption, what, ": a tensor description ends inside a number");
    auto byte = static_cast<uint8_t>(s[i++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return v;
  }
  FLOTILLA_THROW(Corruption, what, ": a tensor description holds an over-long number");
}

void AppendDims(std::string_view s, size_t& i, Dims& dims, const std::string& what) {
  uint64_t len = GetVarint(s, i, what);
  FLOTILLA_CHECK(len <= s.size() - i, Corruption, what, ": a tensor description's dims are truncated");
  size_t end = i + len;
  while (i < end) dims.push_back(static_cast<int64_t>(GetVarint(s, i, what)));
}

// The data type and dims of a TensorDesc message.
std::pair<int64_t, Dims> DecodeDesc(std::string_view s, const std::string& what) {
  int64_t type = -1;
  Dims dims;
  size_t i = 0;
  while (i < s.size()) {
    uint64_t key = GetVarint(s, i, what);
    if (key == 0x08) {
      type = static_cast<int64_t>(GetVarint(s, i, what));
    } else if (key == 0x10) {
      dims.push_back(static_cast<int64_t>(GetVarint(s, i, what)));
    } else if (key == 0x12) {  // packed dims
      AppendDims(s, i, dims, what);
    } else {
      FLOTILLA_THROW(Corruption, what, ": a tensor description has an unknown field (key ", key, ")");
    }
  }
  FLOTILLA_CHECK(type >= 0, Corruption, what, ": a tensor description has no data type");
  return {type, dims};
}

DType PaddleType(int64_t type, const std::string& what) {
  switch (type) {
    case 2: return DType::kInt32;
    case 3: return DType::kInt64;
    case 5: return DType::kFloat32;
    case 6: return DType::kFloat64;
    default:
      FLOTILLA_THROW(InvalidArgument, what, ": Paddle data type ", type,
                     " is not in Flotilla (int32, int64, float32, float64 are)");
  }
}

void SkipLoD(Cursor& in) {
  FLOTILLA_CHECK(in.Get<uint32_t>("version") == kVersion, Corruption, in.what(),
                 ": unknown tensor version at offset ", in.pos() - 4);
  auto levels = in.Get<uint64_t>("LoD levels");
  for (uint64_t l = 0; l < levels; ++l) in.Take(in.Get<uint64_t>("LoD level size"), "LoD offsets");
}

Tensor DecodeOne(Cursor& in) {
  SkipLoD(in);
  FLOTILLA_CHECK(in.Get<uint32_t>("tensor version") == kVersion, Corruption, in.what(),
                 ": unknown tensor version at offset ", in.pos() - 4);
  auto desc_bytes = in.Get<int32_t>("description size");
  FLOTILLA_CHECK(desc_bytes >= 0, Corruption, in.what(), ": negative description size");
  auto [type, dims] = DecodeDesc(in.Take(static_cast<uint64_t>(desc_bytes), "description"), in.what());
  DType dtype = PaddleType(type, in.what());
  uint64_t numel = 1;
  for (int64_t d : dims) {
    FLOTILLA_CHECK(d >= 0 && (d == 0 || numel <= kMaxCombinedBytes / static_cast<uint64_t>(d)), Corruption,
                   in.what(), ": impossible dims ", DimsToString(dims));
    numel *= static_cast<uint64_t>(d);
  }
  std::string_view data = in.Take(numel * SizeOf(dtype), "tensor data");
  Tensor t(dtype, dims);
  if (!data.empty()) std::memcpy(t.raw_mutable_data(dtype), data.data(), data.size());
  return t;
}

std::string VarPath(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

void CheckFits(const Program& program, const std::string& name, const Tensor& t, const std::string& what) {
  const VarDesc& v = program.global_block().Var(name);
  FLOTILLA_ENFORCE(v.dtype == t.dtype() && DimsCompatible(v.shape, t.dims()), "variable '", name, "' in ", what,
                   " is ", DTypeName(t.dtype()), " ", DimsToString(t.dims()), " but the program expects ",
                   DTypeName(v.dtype), " ", DimsToString(v.shape));
}

}  // namespace

std::string EncodePaddleTensors(const std::vector<Tensor>& tensors) {
  std::string out;
  for (const Tensor& t : tensors) EncodeOne(out, t);
  return out;
}

std::vector<Tensor> DecodePaddleTensors(std::string_view bytes, size_t count, const std::string& what) {
  Cursor in(bytes, what);
  std::vector<Tensor> out;
  for (size_t i = 0; i < count; ++i) out.push_back(DecodeOne(in));
  FLOTILLA_CHECK(in.done(), Corruption, what, " holds ", bytes.size() - in.pos(),
                 " bytes after its ", count, " tensors (a different variable list?)");
  return out;
}

std::string SerializePaddleVars(const std::vector<std::string>& names, const Scope& scope) {
  std::vector<Tensor> tensors;
  for (const std::string& name : names) {
    ScopeVar* var = scope.FindVar(name);
    FLOTILLA_CHECK(var != nullptr && var->IsTensor() && var->IsInitialized(), NotFound,
                   "cannot save variable '", name, "': it holds no dense tensor in the scope "
                   "(run the startup program first?)");
    tensors.push_back(var->GetTensor());
  }
  return EncodePaddleTensors(tensors);
}

void DeserializePaddleVars(std::string_view bytes, const std::vector<std::string>& names, Scope& scope,
                           const std::string& what, const Program* program) {
  std::vector<Tensor> tensors = DecodePaddleTensors(bytes, names.size(), what);
  for (size_t i = 0; program != nullptr && i < names.size(); ++i) CheckFits(*program, names[i], tensors[i], what);
  for (size_t i = 0; i < names.size(); ++i) *scope.Var(names[i])->GetMutableTensor() = std::move(tensors[i]);
}

void SaveCombined(const std::string& path, const std::vector<std::string>& names, const Scope& scope) {
  std::string bytes = SerializePaddleVars(names, scope);
  std::filesystem::path target(path);
  if (target.has_parent_path()) MakeDirs(target.parent_path().string());
  WriteFileAtomic(path, bytes);
}

void LoadCombined(const std::string& path, const std::vector<std::string>& names, Scope& scope,
                  const Program* program) {
  FLOTILLA_CHECK(FileExists(path), NotFound, "parameter file '", path, "' is missing");
  const std::string what = "parameter file '" + path + "'";
  DeserializePaddleVars(ReadFileAtMost(path, kMaxCombinedBytes, "parameter file"), names, scope, what, program);
}

void SaveVarFiles(const std::string& dir, const std::vector<std::string>& names, const Scope& scope) {
  for (const std::string& name : names) SaveCombined(VarPath(dir, name), {name}, scope);
}

void LoadVarsFromDir(const std::string& dir, const std::vector<std::string>& names, Scope& scope,
                     const Program* program) {
  std::map<std::string, Tensor> tensors;
  if (FileExists(VarPath(dir, internal::kManifestName))) {
    tensors = internal::ReadTensors(dir, names);
  } else {
    for (const std::string& name : names) {
      const std::string path = VarPath(dir, name);
      FLOTILLA_CHECK(FileExists(path), NotFound, "variable '", name, "' is not in '", dir,
                     "' (neither a Flotilla checkpoint with a MANIFEST nor a file per variable: ", path,
                     " is missing)");
      const std::string what = "parameter file '" + path + "'";
      tensors[name] = std::move(DecodePaddleTensors(ReadFileAtMost(path, kMaxCombinedBytes, "parameter file"), 1,
                                                    what)[0]);
    }
  }
  if (program != nullptr) {
    for (const auto& [name, t] : tensors) CheckFits(*program, name, t, "'" + dir + "'");
  }
  for (auto& [name, t] : tensors) *scope.Var(name)->GetMutableTensor() = std::move(t);
}

}  // namespace flotilla::io
