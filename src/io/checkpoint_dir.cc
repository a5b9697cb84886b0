#include "checkpoint_dir.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "manifest.h"
#include "tensor_file.h"

namespace flotilla::io::internal {
namespace {

const Tensor& TensorToSave(const Scope& scope, const std::string& name) {
  ScopeVar* var = scope.FindVar(name);
  FLOTILLA_CHECK(var != nullptr, NotFound, "cannot save variable '", name,
                 "': it is not in the scope (run the startup program first?)");
  FLOTILLA_CHECK(var->IsTensor() && var->IsInitialized(), NotFound, "cannot save variable '",
                 name, "': it holds no dense tensor data (run the startup program first?)");
  return var->GetTensor();
}

std::string JoinPath(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

// Reads one tensor file and checks it against its manifest entry.
Tensor ReadEntry(const std::string& dir, const ManifestEntry& e) {
  const std::string path = JoinPath(dir, e.file);
  const std::string what = StrCat("checkpoint file '", path, "' of variable '", e.name, "'");
  FLOTILLA_CHECK(FileExists(path), NotFound, what, " is missing");
  // Never more than the manifest's size is read.
  std::string bytes = ReadFileAtMost(path, e.bytes, what + " (per the MANIFEST)");
  FLOTILLA_CHECK(bytes.size() == e.bytes, Corruption, what, " is truncated or altered: ",
                 bytes.size(), " bytes, the manifest says ", e.bytes);
  FLOTILLA_CHECK(Crc32c(bytes.data(), bytes.size()) == e.crc32c, Corruption, what,
                 " fails its CRC32C checksum (corrupt)");
  Tensor t = DecodeTensor(bytes, what);
  FLOTILLA_CHECK(t.dtype() == e.dtype && t.dims() == e.dims, Corruption, what, " holds ",
                 DTypeName(t.dtype()), " ", DimsToString(t.dims()), " but the manifest says ",
                 DTypeName(e.dtype), " ", DimsToString(e.dims));
  return t;
}

}  // namespace

void CommitDirAtomic(const std::string& dir_in, const std::function<void(const std::string&)>& fill) {
  // "out/" names the directory "out": the temporary sits beside it, not in it.
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::filesystem::path target(dir);
  if (target.has_parent_path()) MakeDirs(target.parent_path().string());
  const std::string tmp = dir + ".tmp." + std::to_string(::getpid());
  RemoveAll(tmp);
  try {
    MakeDirs(tmp);
    fill(tmp);
    RenameDirAtomic(tmp, dir);
  } catch (...) {
    RemoveAll(tmp);
    throw;
  }
}

void WriteTensors(const std::string& tmp, const std::vector<std::string>& names,
                  const Scope& scope) {
  std::vector<ManifestEntry> entries;
  for (const auto& name : std::set<std::string>(names.begin(), names.end())) {
    const Tensor& t = TensorToSave(scope, name);
    ManifestEntry e{name, t.dtype(), t.dims(), EncodeName(name) + ".tensor", 0, 0};
    std::string bytes = EncodeTensor(t);
    e.bytes = bytes.size();
    e.crc32c = Crc32c(bytes.data(), bytes.size());
    WriteFileAtomic(JoinPath(tmp, e.file), bytes);
    entries.push_back(std::move(e));
  }
  WriteFileAtomic(JoinPath(tmp, kManifestName), FormatManifest(entries));
}

std::map<std::string, Tensor> ReadTensors(const std::string& dir,
                                          const std::vector<std::string>& names,
                                          const EntryCheck& check) {
  std::map<std::string, ManifestEntry> by_name;
  for (auto& e : ReadManifest(dir)) by_name.emplace(e.name, std::move(e));
  std::map<std::string, Tensor> out;
  for (const auto& name : names) {
    auto it = by_name.find(name);
    FLOTILLA_CHECK(it != by_name.end(), NotFound, "variable '", name,
                   "' is not in checkpoint '", dir, "'");
    if (check) check(it->second);
    out[name] = ReadEntry(dir, it->second);
  }
  return out;
}

}  // namespace flotilla::io::internal
