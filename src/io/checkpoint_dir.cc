#include "checkpoint_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/safe_file.h"
#include "flotilla/common/strings.h"
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

// The CRC32C of a tensor file's content, without its 4-byte CRC trailer.
uint32_t ContentCrc(const std::string& bytes) {
  return bytes.size() < 4 ? 0 : Crc32c(bytes.data(), bytes.size() - 4);
}

// The last 4 bytes of a file (its CRC trailer, little-endian); false when
// the file is shorter.
bool ReadTrailer(const std::string& path, uint64_t size, uint32_t* crc) {
  if (size < 4) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char b[4];
  const bool ok = ::pread(fd, b, 4, static_cast<off_t>(size - 4)) == 4;
  ::close(fd);
  *crc = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  return ok;
}

// The marker goes in first, without an fsync: a process killed right after
// creating the directory leaves it empty or marked, and the clean-up
// (CheckpointManager) removes both.
void PlaceMarker(const SafeDir& dir) {
  const int fd = dir.OpenFile(kMarkerName, O_WRONLY | O_CREAT | O_EXCL, 0644);
  const std::string_view text(kMarkerText);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  FLOTILLA_CHECK(ok, Unavailable, "cannot write '", dir.PathOf(kMarkerName), "': ",
                 std::strerror(errno));
}

// Removes the temporary directory `name` of a failed commit. A writer
// still at work in it (a parameter server saving its tables) may add a
// file while the tree is removed; once a directory is gone nothing can be
// created in it, so a few more rounds leave nothing behind.
void RemoveFailedCommit(const SafeDir& parent, const std::string& name) {
  for (int round = 0; round < 200; ++round) {
    if (RemoveMarkedDir(parent, name) && !parent.Exists(name)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
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
  if (e.whole_file_crc) {
    FLOTILLA_CHECK(Crc32c(bytes.data(), bytes.size()) == e.crc32c, Corruption, what,
                   " fails its CRC32C checksum (corrupt)");
  } else {
    FLOTILLA_CHECK(ContentCrc(bytes) == e.crc32c, Corruption, what,
                   " fails its CRC32C checksum against its MANIFEST entry (content ",
                   Hex32(ContentCrc(bytes)), ", the MANIFEST says ", Hex32(e.crc32c),
                   "): altered, or copied in from another checkpoint");
  }
  Tensor t = DecodeTensor(bytes, what);
  FLOTILLA_CHECK(t.dtype() == e.dtype && t.dims() == e.dims, Corruption, what, " holds ",
                 DTypeName(t.dtype()), " ", DimsToString(t.dims()), " but the manifest says ",
                 DTypeName(e.dtype), " ", DimsToString(e.dims));
  return t;
}

}  // namespace

bool RemoveMarkedDir(const SafeDir& parent, const std::string& name) {
  if (parent.IsDir(name)) {
    try {
      const SafeDir dir = parent.Subdir(name, /*create=*/false);
      for (const auto& entry : dir.List()) {
        if (entry != kMarkerName) dir.RemoveTree(entry);
      }
    } catch (const Error&) {
      // removed meanwhile, or unreadable: RemoveTree below says whether it went
    }
  }
  return parent.RemoveTree(name);
}

std::string TempName(const std::string& name, const char* kind) {
  return StrCat(name, ".", kind, ".", ::getpid(), ".", HexEncode(RandomBytes(8)));
}

void CommitDirAtomic(const std::string& dir_in, const std::function<void(const std::string&)>& fill) {
  // "out/" names the directory "out": the temporary sits beside it, not in it.
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::filesystem::path target = std::filesystem::path(dir).lexically_normal();
  const std::string name = target.filename().string();
  FLOTILLA_CHECK(!name.empty() && name != "." && name != "..", InvalidArgument,
                 "cannot save a checkpoint as '", dir, "': not a directory name");
  const std::string parent_path = target.has_parent_path() ? target.parent_path().string() : ".";
  const SafeDir parent = SafeDir::Create(parent_path, "the directory of checkpoint '" + dir + "'");
  FLOTILLA_CHECK(!parent.IsLink(name), InvalidArgument, "checkpoint '", dir,
                 "' is refused: it is a symbolic link");
  const std::string tmp = TempName(name, "tmp");
  try {
    PlaceMarker(parent.Subdir(tmp, /*create=*/true));
    fill(parent.PathOf(tmp));
    if (parent.IsDir(name)) {
      // Swap the two directories in one step (no moment without `dir`),
      // then drop the old one, which now sits at `tmp`.
      parent.Exchange(tmp, name);
      RemoveMarkedDir(parent, tmp);
    } else {
      parent.Rename(tmp, name);
    }
  } catch (...) {
    RemoveFailedCommit(parent, tmp);
    throw;
  }
}

void VerifyFiles(const std::string& dir) {
  for (const auto& e : ReadManifest(dir)) {
    const std::string path = JoinPath(dir, e.file);
    struct stat st {};
    FLOTILLA_CHECK(::lstat(path.c_str(), &st) == 0, NotFound, "checkpoint file '", path,
                   "' of variable '", e.name, "' is missing");
    FLOTILLA_CHECK(S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == e.bytes,
                   Corruption, "checkpoint file '", path, "' of variable '", e.name,
                   "' is not the regular file of ", e.bytes, " bytes its MANIFEST names");
    if (e.whole_file_crc) continue;
    uint32_t trailer = 0;
    FLOTILLA_CHECK(ReadTrailer(path, e.bytes, &trailer) && trailer == e.crc32c, Corruption,
                   "checkpoint file '", path, "' of variable '", e.name,
                   "' fails its CRC32C checksum against its MANIFEST entry (file ", Hex32(trailer),
                   ", the MANIFEST says ", Hex32(e.crc32c),
                   "): altered, or copied in from another checkpoint");
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
    e.crc32c = ContentCrc(bytes);
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
