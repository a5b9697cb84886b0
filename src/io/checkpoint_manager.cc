#include "flotilla/io/checkpoint_manager.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <charconv>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "checkpoint_dir.h"
#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/safe_file.h"
#include "flotilla/trace/trace.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/strings.h"
#include "flotilla/io/checkpoint.h"
#include "manifest.h"

namespace flotilla::io {

namespace {

using internal::Hex32;

constexpr char kStepPrefix[] = "step-";
constexpr char kStateFile[] = "STATE.json";
constexpr uint64_t kMaxStateBytes = 16u << 20;
constexpr char kWhat[] = "checkpoint directory";

// The CRC32C of the MANIFEST in `dir`, which STATE.json names: a state
// belongs to the tensors it was saved with.
uint32_t ManifestCrc(const std::string& dir) {
  const std::string text = ReadFileAtMost(dir + "/" + internal::kManifestName,
                                          internal::kMaxManifestBytes, "checkpoint manifest");
  return Crc32c(text.data(), text.size());
}

// STATE.json: the state, the MANIFEST's CRC32C and "crc32c", the CRC32C of
// the compact JSON of everything else.
std::string EncodeState(const TrainingState& s, uint32_t manifest_crc) {
  nlohmann::json j = {{"step", s.step},
                      {"rng_seed", s.rng_seed},
                      {"reader", {{"pass", s.reader.pass}, {"batches", s.reader.batches}}},
                      {"extra", s.extra},
                      {"manifest_crc32c", Hex32(manifest_crc)}};
  const std::string body = j.dump();
  j["crc32c"] = Hex32(Crc32c(body.data(), body.size()));
  return j.dump(1) + "\n";
}

// An integer field of STATE.json (a float such as 1e35 would not convert).
template <typename T>
T IntegerField(const nlohmann::json& j, const char* name, const std::string& path) {
  const nlohmann::json& v = j.at(name);
  const bool fits = v.is_number_unsigned()
                        ? std::is_unsigned_v<T> || v.get<uint64_t>() <= INT64_MAX
                        : std::is_signed_v<T> && v.is_number_integer();
  FLOTILLA_CHECK(fits, Corruption, "training state '", path, "' is damaged: '", name, "' is ",
                 v.dump(), ", expected ", std::is_signed_v<T> ? "an int64" : "a uint64");
  return v.get<T>();
}

// A STATE.json's checksum fields; absent in those of older releases.
struct StateSeal {
  std::optional<std::string> crc, manifest_crc;
};

// Checks the "crc32c" field of `j` (which is removed) against the rest.
StateSeal Unseal(nlohmann::json& j, const std::string& path) {
  StateSeal seal;
  if (!j.is_object() || !j.contains("crc32c")) return seal;
  FLOTILLA_CHECK(j["crc32c"].is_string(), Corruption, "training state '", path,
                 "' is damaged: 'crc32c' is not a string");
  seal.crc = j["crc32c"].get<std::string>();
  j.erase("crc32c");
  const std::string body = j.dump();
  FLOTILLA_CHECK(*seal.crc == Hex32(Crc32c(body.data(), body.size())), Corruption,
                 "training state '", path, "' fails its CRC32C checksum (edited or corrupt)");
  if (j.contains("manifest_crc32c") && j["manifest_crc32c"].is_string()) {
    seal.manifest_crc = j["manifest_crc32c"].get<std::string>();
  }
  return seal;
}

TrainingState DecodeState(const std::string& text, const std::string& path, StateSeal* seal) {
  TrainingState s;
  try {
    auto j = nlohmann::json::parse(text);
    *seal = Unseal(j, path);
    s.step = IntegerField<int64_t>(j, "step", path);
    s.rng_seed = IntegerField<uint64_t>(j, "rng_seed", path);
    s.reader.pass = IntegerField<int64_t>(j.at("reader"), "pass", path);
    s.reader.batches = IntegerField<int64_t>(j.at("reader"), "batches", path);
    s.extra = j.value("extra", std::string());
  } catch (const nlohmann::json::exception& e) {
    FLOTILLA_THROW(Corruption, "training state '", path, "' is damaged: ", e.what());
  }
  return s;
}

// "step-12" → 12; anything else (temporaries, other files, a number too
// large for int64) → nullopt: a stray name never breaks a save.
std::optional<int64_t> StepOf(const std::string& name) {
  if (!StartsWith(name, kStepPrefix)) return std::nullopt;
  const std::string digits = name.substr(sizeof(kStepPrefix) - 1);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return step;
}

// What a killed save or prune leaves: "step-12.tmp.<pid>.<random>" (a save
// killed before its rename) and "step-12.old.<pid>.<random>" (a prune killed while
// removing). Only removed when it carries Flotilla's marker.
bool IsLeftoverName(const std::string& name) {
  for (const char* infix : {".tmp.", ".old."}) {
    const size_t at = name.find(infix);
    if (at != std::string::npos && StepOf(name.substr(0, at)) && at + 5 < name.size()) return true;
  }
  return false;
}

// A directory Flotilla made: it carries the marker, or (saved by a release
// before the marker) a MANIFEST of Flotilla's format. An empty leftover (a
// save killed before it placed the marker) holds nothing of anyone's.
bool IsFlotillas(const SafeDir& root, const std::string& name, bool leftover) {
  if (!root.IsDir(name)) return false;
  const SafeDir dir = root.Subdir(name, /*create=*/false);
  if (dir.Exists(internal::kMarkerName) || (leftover && dir.List().empty())) return true;
  try {
    return StartsWith(dir.ReadAtMost(internal::kManifestName, internal::kMaxManifestBytes),
                      "flotilla-checkpoint ");
  } catch (const Error&) {
    return false;
  }
}

// The step directories of `dir`, newest first (valid or not).
std::vector<int64_t> StepDirsNewestFirst(const std::string& dir) {
  std::vector<int64_t> steps;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return steps;
  while (dirent* e = readdir(d)) {
    if (auto step = StepOf(e->d_name)) steps.push_back(*step);
  }
  closedir(d);
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

}  // namespace

CheckpointManager::CheckpointManager(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {
  FLOTILLA_ENFORCE(keep_ >= 1, "a CheckpointManager must keep at least 1 checkpoint, not ", keep_);
}

std::string CheckpointManager::StepDir(int64_t step) const {
  return StrCat(dir_, "/", kStepPrefix, step);
}

std::string CheckpointManager::Save(const Program& program, const Scope& scope,
                                    const TrainingState& state,
                                    const std::function<void(const std::string&)>& also) {
  FLOTILLA_ENFORCE(state.step >= 0, "checkpoint step must not be negative, got ", state.step);
  trace::Span span(trace::Category::kCheckpoint, FLOTILLA_TRACE_NAME("save checkpoint"));
  span.Arg("step", state.step);
  const SafeDir root = SafeDir::Create(dir_, kWhat);
  RemoveLeftovers(root);
  const std::string target = StepDir(state.step);
  internal::CommitDirAtomic(target, [&](const std::string& tmp) {
    internal::WriteTensors(tmp, PersistableNames(program), scope);
    if (also) also(tmp);
    WriteFileAtomic(tmp + "/" + kStateFile, EncodeState(state, ManifestCrc(tmp)));
  });
  Prune(root);
  return target;
}

std::vector<int64_t> CheckpointManager::Steps() const {
  std::vector<int64_t> steps;
  for (int64_t step : StepDirsNewestFirst(dir_)) {
    struct stat st {};
    const bool real_dir = ::lstat(StepDir(step).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (real_dir && FileExists(StepDir(step) + "/" + kStateFile)) steps.push_back(step);
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

std::string CheckpointManager::Verify(int64_t step) const {
  try {
    ReadState(step);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TrainingState CheckpointManager::ReadState(int64_t step) const {
  const std::string path = StepDir(step);
  struct stat st {};
  FLOTILLA_CHECK(::lstat(path.c_str(), &st) == 0, NotFound, "checkpoint '", path,
                 "' does not exist");
  FLOTILLA_CHECK(S_ISDIR(st.st_mode), Corruption, "checkpoint '", path,
                 "' is not a directory (a symbolic link?)");
  const std::string state_path = path + "/" + kStateFile;
  FLOTILLA_CHECK(FileExists(state_path), NotFound, "checkpoint '", path, "' has no ", kStateFile,
                 " (a save that did not finish, or a directory Flotilla did not write)");
  StateSeal seal;
  TrainingState state =
      DecodeState(ReadFileAtMost(state_path, kMaxStateBytes, "training state"), state_path, &seal);
  FLOTILLA_CHECK(state.step == step, Corruption, "training state '", state_path, "' is of step ",
                 state.step, ", not ", step, " (renamed or copied from another checkpoint?)");
  if (seal.manifest_crc) {
    FLOTILLA_CHECK(*seal.manifest_crc == Hex32(ManifestCrc(path)), Corruption, "the ",
                   internal::kManifestName, " of checkpoint '", path,
                   "' is not the one its training state was saved with");
  }
  const auto manifest = ReadManifest(path);
  const bool format1 = !manifest.empty() && manifest.front().whole_file_crc;
  FLOTILLA_CHECK(seal.crc.has_value() || format1 || manifest.empty(), Corruption,
                 "training state '", state_path, "' has no checksum (edited?)");
  internal::VerifyFiles(path);
  return state;
}

std::optional<int64_t> CheckpointManager::LatestStep() const {
  for (int64_t step : StepDirsNewestFirst(dir_)) {
    const std::string why = Verify(step);
    if (why.empty()) return step;
    log::Warn("checkpoint {} is skipped: {}; trying an older one", StepDir(step), why);
  }
  return std::nullopt;
}

// An old checkpoint is first renamed out of the step names, so a process
// killed while removing it leaves a leftover, never a checkpoint with
// files missing. Only directories Flotilla made are removed.
void CheckpointManager::Prune(const SafeDir& root) const {
  auto steps = Steps();
  for (size_t i = 0; i + keep_ < steps.size(); ++i) {
    const std::string name = StrCat(kStepPrefix, steps[i]);
    if (!IsFlotillas(root, name, /*leftover=*/false)) continue;
    const std::string old = internal::TempName(name, "old");
    root.Rename(name, old);
    internal::RemoveMarkedDir(root, old);
  }
}

// One process saves at a time (see the header), so every leftover of an
// earlier, killed save or prune is garbage, when it is Flotilla's.
void CheckpointManager::RemoveLeftovers(const SafeDir& root) const {
  for (const auto& name : root.List()) {
    if (IsLeftoverName(name) && IsFlotillas(root, name, /*leftover=*/true)) {
      internal::RemoveMarkedDir(root, name);
    }
  }
}

TrainingState CheckpointManager::Load(const Program& program, Scope& scope,
                                      std::optional<int64_t> step) const {
  if (step) return LoadStep(program, scope, *step);
  // The newest checkpoint that verifies and loads; each one skipped is named.
  for (int64_t candidate : StepDirsNewestFirst(dir_)) {
    try {
      return LoadStep(program, scope, candidate);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kCorruption && e.code() != ErrorCode::kNotFound) throw;
      log::Warn("checkpoint {} is skipped: {}; trying an older one", StepDir(candidate), e.what());
    }
  }
  FLOTILLA_THROW(NotFound, "no checkpoint in '", dir_, "'");
}

TrainingState CheckpointManager::LoadStep(const Program& program, Scope& scope,
                                          int64_t step) const {
  trace::Span span(trace::Category::kCheckpoint, FLOTILLA_TRACE_NAME("load checkpoint"));
  span.Arg("step", step);
  trace::Instant(trace::Category::kElastic, FLOTILLA_TRACE_NAME("restore"), "step", step);
  TrainingState state = ReadState(step);
  LoadPersistables(StepDir(step), program, scope);
  return state;
}

}  // namespace flotilla::io
