#include "flotilla/io/checkpoint_manager.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <charconv>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "checkpoint_dir.h"
#include "flotilla/common/enforce.h"
#include "flotilla/trace/trace.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/strings.h"
#include "flotilla/io/checkpoint.h"

namespace flotilla::io {

namespace {

constexpr char kStepPrefix[] = "step-";
constexpr char kStateFile[] = "STATE.json";
constexpr uint64_t kMaxStateBytes = 16u << 20;

std::string EncodeState(const TrainingState& s) {
  nlohmann::json j = {{"step", s.step},
                      {"rng_seed", s.rng_seed},
                      {"reader", {{"pass", s.reader.pass}, {"batches", s.reader.batches}}},
                      {"extra", s.extra}};
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

TrainingState DecodeState(const std::string& text, const std::string& path) {
  TrainingState s;
  try {
    auto j = nlohmann::json::parse(text);
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

// What a killed save or prune leaves: "step-12.tmp.<pid>" (a save killed
// before its rename), "step-12.old.<pid>" (a prune killed while removing)
// and "step-12" without STATE.json (removed part-way by an older release).
bool IsLeftover(const std::string& name, bool complete) {
  if (StepOf(name)) return !complete;
  for (const char* infix : {".tmp.", ".old."}) {
    const size_t at = name.find(infix);
    if (at != std::string::npos && StepOf(name.substr(0, at)) &&
        StepOf(std::string(kStepPrefix) + name.substr(at + 5))) {
      return true;
    }
  }
  return false;
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
  MakeDirs(dir_);
  RemoveLeftovers();
  const std::string target = StepDir(state.step);
  internal::CommitDirAtomic(target, [&](const std::string& tmp) {
    internal::WriteTensors(tmp, PersistableNames(program), scope);
    if (also) also(tmp);
    WriteFileAtomic(tmp + "/" + kStateFile, EncodeState(state));
  });
  Prune();
  return target;
}

std::vector<int64_t> CheckpointManager::Steps() const {
  std::vector<int64_t> steps;
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return steps;
  while (dirent* e = readdir(d)) {
    auto step = StepOf(e->d_name);
    if (step && FileExists(StepDir(*step) + "/" + kStateFile)) steps.push_back(*step);
  }
  closedir(d);
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::optional<int64_t> CheckpointManager::LatestStep() const {
  auto steps = Steps();
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

// An old checkpoint is first renamed out of the step names, so a process
// killed while removing it leaves a leftover, never a checkpoint with
// files missing.
void CheckpointManager::Prune() const {
  auto steps = Steps();
  for (size_t i = 0; i + keep_ < steps.size(); ++i) {
    const std::string old = StrCat(StepDir(steps[i]), ".old.", ::getpid());
    RemoveAll(old);
    if (std::rename(StepDir(steps[i]).c_str(), old.c_str()) == 0) {
      RemoveAll(old);
    } else {
      RemoveAll(StepDir(steps[i]));
    }
  }
}

// One process saves at a time (see the header), so every leftover of an
// earlier, killed save or prune is garbage.
void CheckpointManager::RemoveLeftovers() const {
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return;
  std::vector<std::string> leftovers;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const std::string path = StrCat(dir_, "/", name);
    if (IsLeftover(name, FileExists(path + "/" + kStateFile))) leftovers.push_back(path);
  }
  closedir(d);
  for (const auto& path : leftovers) RemoveAll(path);
}

TrainingState CheckpointManager::Load(const Program& program, Scope& scope,
                                      std::optional<int64_t> step) const {
  if (!step) step = LatestStep();
  FLOTILLA_CHECK(step.has_value(), NotFound, "no checkpoint in '", dir_, "'");
  trace::Span span(trace::Category::kCheckpoint, FLOTILLA_TRACE_NAME("load checkpoint"));
  span.Arg("step", *step);
  trace::Instant(trace::Category::kElastic, FLOTILLA_TRACE_NAME("restore"), "step", *step);
  const std::string path = StepDir(*step);
  FLOTILLA_CHECK(FileExists(path + "/" + kStateFile), NotFound, "checkpoint '", path,
                 "' does not exist (saved steps: ", Steps().size(), ")");
  const std::string state_path = path + "/" + kStateFile;
  TrainingState state =
      DecodeState(ReadFileAtMost(state_path, kMaxStateBytes, "training state"), state_path);
  LoadPersistables(path, program, scope);
  return state;
}

}  // namespace flotilla::io
