// Fuzzes checkpoints as read back from disk: MANIFEST parsing, the tensor
// files a manifest names (ReadTensors: sizes, checksums, shapes), and the
// step directories and STATE.json of a CheckpointManager.
//
// Input: a mode byte, then by mode (mod 5):
//   0  a MANIFEST as is;
//   1  a MANIFEST without its checksum line (the target appends it); one
//      that parses must format back to the same entries;
//   2  a MANIFEST without its checksum line (u16-length string), then the
//      bytes written as every file it names; its variables are read;
//   3  two stray directory names (u16-length strings), then a STATE.json
//      for step-7 of a checkpoint root; the root's steps are listed and the
//      latest is loaded;
//   4  as 3, but a STATE.json that parses as a JSON object is sealed as a
//      save seals it (its MANIFEST's CRC32C and its own CRC32C added), so
//      the fields behind the checksum are reached.
// Every MANIFEST format is reached: the header line is part of the input
// ("flotilla-checkpoint 2", or 1 as older releases wrote).
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "flotilla/common/checksum.h"
#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"
#include "flotilla/io/checkpoint_manager.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/scratch_dir.h"
#include "io/checkpoint_dir.h"
#include "io/manifest.h"

namespace flotilla::fuzz {
namespace {

using io::ManifestEntry;

std::string WithChecksumLine(const std::string& text) {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", Crc32c(text.data(), text.size()));
  return text + "manifest-crc32c " + hex + "\n";
}

bool SameEntries(const std::vector<ManifestEntry>& a, const std::vector<ManifestEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].dims != b[i].dims ||
        a[i].file != b[i].file || a[i].bytes != b[i].bytes || a[i].crc32c != b[i].crc32c) {
      return false;
    }
  }
  return true;
}

// A fresh, empty directory under the scratch directory.
std::string FreshDir(const std::string& name) {
  const std::string dir = ScratchDir() + "/" + name;
  RemoveAll(dir);
  MakeDirs(dir);
  return dir;
}

void ParseRoundTrip(const std::string& text) {
  auto entries = io::internal::ParseManifest(text, "fuzz MANIFEST");
  auto again = io::internal::ParseManifest(io::internal::FormatManifest(entries), "formatted");
  if (!SameEntries(entries, again)) std::abort();
}

void ReadCheckpoint(const std::string& manifest, const std::string& file_bytes) {
  const std::string dir = FreshDir("ckpt");
  WriteFileAtomic(dir + "/" + io::internal::kManifestName, manifest);
  std::vector<std::string> names;
  for (const auto& e : io::internal::ParseManifest(manifest, "fuzz MANIFEST")) {
    WriteFileAtomic(dir + "/" + e.file, file_bytes);  // plain names only (the parser's rule)
    names.push_back(e.name);
  }
  (void)io::internal::ReadTensors(dir, names);
}

// Names that are one plain path component; anything else is not made.
bool Plain(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

// `state` with "manifest_crc32c" and "crc32c" as CheckpointManager::Save
// writes them; as it is when it is not a JSON object.
std::string Sealed(const std::string& state, const std::string& manifest) {
  auto j = nlohmann::json::parse(state, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return state;
  j["manifest_crc32c"] = io::internal::Hex32(Crc32c(manifest.data(), manifest.size()));
  j.erase("crc32c");
  const std::string body = j.dump();
  j["crc32c"] = io::internal::Hex32(Crc32c(body.data(), body.size()));
  return j.dump(1);
}

void LoadLatest(FuzzInput& in, bool seal) {
  const std::string root = FreshDir("root");
  for (int i = 0; i < 2; ++i) {
    const std::string stray = in.Str(64);
    if (Plain(stray)) MakeDirs(root + "/" + stray);
  }
  const std::string step = root + "/step-7";
  MakeDirs(step);
  const std::string manifest = io::internal::FormatManifest({});
  WriteFileAtomic(step + "/" + io::internal::kManifestName, manifest);
  WriteFileAtomic(step + "/STATE.json", seal ? Sealed(in.Rest(), manifest) : in.Rest());
  io::CheckpointManager manager(root);
  (void)manager.Steps();
  (void)manager.Verify(7);
  if (!manager.LatestStep()) return;
  Program program;
  Scope scope;
  (void)manager.Load(program, scope);
}

}  // namespace
}  // namespace flotilla::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flotilla::fuzz;
  FuzzInput in(data, size);
  try {
    switch (in.U8() % 5) {
      case 0: (void)flotilla::io::internal::ParseManifest(in.Rest(), "fuzz MANIFEST"); break;
      case 1: ParseRoundTrip(WithChecksumLine(in.Rest())); break;
      case 2: {
        const std::string manifest = WithChecksumLine(in.Str());
        ReadCheckpoint(manifest, in.Rest());
        break;
      }
      case 3: LoadLatest(in, /*seal=*/false); break;
      default: LoadLatest(in, /*seal=*/true); break;
    }
  } catch (const flotilla::Error&) {
    // refused with a named error
  }
  return 0;
}
