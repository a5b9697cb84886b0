// Inference models: a pruned for-test program plus its parameters.
#include "flotilla/io/inference_model.h"

#include <cstdio>
#include <sstream>

#include "checkpoint_dir.h"
#include "flotilla/common/checksum.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/strings.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/paddle_tensors.h"

namespace flotilla::io {

// A program description larger than this is refused before it is read.
constexpr uint64_t kMaxModelBytes = 256u << 20;

namespace {

// The program that computes `fetch` from `feed`: backward and optimizer ops
// dropped, then pruned. Feed variables the pruned ops do not read are kept
// so that feeding them stays legal.
Program PruneForInference(const Program& main, const std::vector<std::string>& feed,
                          const std::vector<std::string>& fetch) {
  for (const auto& n : feed) main.global_block().Var(n);
  Program pruned = main.Clone(/*for_test=*/true).Prune(fetch);
  for (const auto& n : feed) {
    if (!pruned.global_block().HasVar(n)) pruned.global_block().CreateVar(n) = main.global_block().Var(n);
  }
  return pruned;
}

std::string FormatFeedFetch(const std::vector<std::string>& feed,
                            const std::vector<std::string>& fetch, const std::string& model) {
  std::ostringstream out;
  for (const auto& n : feed) out << "feed " << n << "\n";
  for (const auto& n : fetch) out << "fetch " << n << "\n";
  out << "model_crc32c " << Crc32c(model.data(), model.size()) << "\n";
  return out.str();
}

// Fills the names of `model` from the __feed_fetch__ text and checks the
// __model__ bytes against the checksum recorded there.
void ParseFeedFetch(const std::string& text, const std::string& path, const std::string& model,
                    const std::string& model_path, InferenceModel* out) {
  bool crc_seen = false;
  for (const auto& line : Split(text, '\n')) {
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
    FLOTILLA_CHECK(!value.empty(), Corruption, "'", path, "' has a malformed line: '", line, "'");
    if (key == "feed") {
      out->feed_names.push_back(value);
    } else if (key == "fetch") {
      out->fetch_names.push_back(value);
    } else if (key == "model_crc32c") {
      crc_seen = true;
      FLOTILLA_CHECK(value == std::to_string(Crc32c(model.data(), model.size())), Corruption,
                     "model file '", model_path, "' fails its CRC32C checksum (recorded in '",
                     path, "')");
    } else {
      FLOTILLA_THROW(Corruption, "'", path, "' has an unknown line: '", line, "'");
    }
  }
  FLOTILLA_CHECK(crc_seen && !out->fetch_names.empty(), Corruption, "'", path,
                 "' is truncated: no fetch targets or model checksum");
}

constexpr uint32_t kFeedField = 101;
constexpr uint32_t kFetchField = 102;

void PutVarint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
}

uint64_t GetVarint(const std::string& s, size_t& i, const std::string& what) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && i < s.size(); shift += 7) {
    auto byte = static_cast<uint8_t>(s[i++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return v;
  }
  FLOTILLA_THROW(Corruption, what, " is not a valid serialised program (a number is cut short)");
}

std::string WithTargets(std::string model, const std::vector<std::string>& feeds,
                        const std::vector<std::string>& fetches) {
  for (auto [field, names] : {std::pair{kFeedField, &feeds}, std::pair{kFetchField, &fetches}}) {
    for (const std::string& n : *names) {
      PutVarint(model, (uint64_t{field} << 3) | 2);
      PutVarint(model, n.size());
      model += n;
    }
  }
  return model;
}

// The feed and fetch names of model bytes (top-level fields 101 and 102).
void ReadTargets(const std::string& model, const std::string& what, InferenceModel* out) {
  for (size_t i = 0; i < model.size();) {
    uint64_t key = GetVarint(model, i, what);
    uint64_t n = 0;
    switch (key & 7) {
      case 0: GetVarint(model, i, what); continue;
      case 1: n = 8; break;
      case 5: n = 4; break;
      case 2: n = GetVarint(model, i, what); break;
      default: FLOTILLA_THROW(Corruption, what, " is not a valid serialised program (wire type ", key & 7, ")");
    }
    FLOTILLA_CHECK(n <= model.size() - i, Corruption, what, " is truncated");
    if ((key & 7) == 2 && (key >> 3) == kFeedField) out->feed_names.push_back(model.substr(i, n));
    if ((key & 7) == 2 && (key >> 3) == kFetchField) out->fetch_names.push_back(model.substr(i, n));
    i += n;
  }
  FLOTILLA_CHECK(!out->fetch_names.empty(), Corruption, what,
                 " names no fetch targets (not a model saved by save_inference_model)");
}

std::string ModelFile(const InferenceModelFiles& files) {
  return files.model_filename.empty() ? kModelFileName : files.model_filename;
}

std::string InDir(const std::string& dir, const std::string& file, const char* what) {
  FLOTILLA_ENFORCE(!file.empty() && file.find('/') == std::string::npos, "inference model '", dir, "': ", what,
                   " '", file, "' must be a file name without a directory part");
  return dir + "/" + file;
}

void SaveParams(const std::string& dir, const InferenceModelFiles& files, const std::vector<std::string>& names,
                const Scope& scope) {
  if (files.program_only) return;
  if (files.params_filename.empty()) return SaveVarFiles(dir, names, scope);
  SaveCombined(InDir(dir, files.params_filename, "params_filename"), names, scope);
}

}  // namespace

Program NormalizeProgram(const Program& main, const std::vector<std::string>& feed_names,
                         const std::vector<std::string>& fetch_names) {
  FLOTILLA_ENFORCE(!fetch_names.empty(), "NormalizeProgram: no fetch targets given");
  return PruneForInference(main, feed_names, fetch_names);
}

std::string SerializeInferenceProgram(const Program& main, const std::vector<std::string>& feed_names,
                                      const std::vector<std::string>& fetch_names) {
  return WithTargets(NormalizeProgram(main, feed_names, fetch_names).Serialize(), feed_names, fetch_names);
}

InferenceModel LoadInferenceModelFromMemory(const std::string& model, const std::string& params, Scope& scope) {
  InferenceModel out;
  ReadTargets(model, "the model bytes", &out);
  out.program = Program::Parse(model, "the model bytes");
  DeserializePaddleVars(params, PersistableNames(out.program), scope, "the parameter bytes", &out.program);
  return out;
}

void SaveInferenceModel(const std::string& dir, const std::vector<std::string>& feed_names,
                        const std::vector<std::string>& fetch_names, const Executor& exe,
                        const Program& main, const Scope& scope, const InferenceModelFiles& files) {
  if (!files.paddle_layout()) return SaveInferenceModel(dir, feed_names, fetch_names, exe, main, scope);
  const std::string model_path = InDir(dir, ModelFile(files), "model_filename");
  MakeDirs(dir);
  if (!files.export_for_deployment) {
    SaveParams(dir, files, PersistableNames(main), scope);
    WriteFileAtomic(model_path + ".main_program", main.Serialize());
    return;
  }
  FLOTILLA_ENFORCE(!fetch_names.empty(), "SaveInferenceModel: no fetch targets given for '", dir, "'");
  Program pruned = PruneForInference(main, feed_names, fetch_names);
  SaveParams(dir, files, PersistableNames(pruned), scope);
  WriteFileAtomic(model_path, WithTargets(pruned.Serialize(), feed_names, fetch_names));
}

void SaveInferenceModel(const std::string& dir, const std::vector<std::string>& feed_names,
                        const std::vector<std::string>& fetch_names, const Executor& exe,
                        const Program& main, const Scope& scope) {
  FLOTILLA_ENFORCE(!fetch_names.empty(), "SaveInferenceModel: no fetch targets given for '", dir,
                   "'");
  Program pruned = PruneForInference(main, feed_names, fetch_names);
  const std::string model = WithTargets(pruned.Serialize(), feed_names, fetch_names);
  internal::CommitDirAtomic(dir, [&](const std::string& tmp) {
    internal::WriteTensors(tmp, PersistableNames(pruned), scope);
    WriteFileAtomic(tmp + "/" + kModelFileName, model);
    WriteFileAtomic(tmp + "/" + kFeedFetchFileName, FormatFeedFetch(feed_names, fetch_names, model));
  });
}

InferenceModel LoadInferenceModel(const std::string& dir, Scope& scope) {
  return LoadInferenceModel(dir, scope, InferenceModelFiles{});
}

InferenceModel LoadInferenceModel(const std::string& dir, Scope& scope, const InferenceModelFiles& files) {
  const std::string model_path = InDir(dir, ModelFile(files), "model_filename");
  const std::string names_path = dir + "/" + kFeedFetchFileName;
  FLOTILLA_CHECK(FileExists(model_path), NotFound, "inference model '", dir, "' has no ", ModelFile(files), " (",
                 model_path, " is missing)");
  std::string model = ReadFileAtMost(model_path, kMaxModelBytes, "model file");
  InferenceModel out;
  const bool default_model = files.model_filename.empty() || files.model_filename == kModelFileName;
  if (default_model && FileExists(names_path)) {
    // Flotilla's layout: the names file checks the model's checksum too.
    ParseFeedFetch(ReadFileAtMost(names_path, kMaxModelBytes, "feed/fetch file"), names_path, model,
                   model_path, &out);
  } else {
    ReadTargets(model, "model file '" + model_path + "'", &out);
  }
  out.program = Program::Parse(model, "model file '" + model_path + "'");
  if (files.params_filename.empty()) {
    LoadVarsFromDir(dir, PersistableNames(out.program), scope, &out.program);
  } else {
    LoadCombined(InDir(dir, files.params_filename, "params_filename"), PersistableNames(out.program), scope,
                 &out.program);
  }
  return out;
}

}  // namespace flotilla::io
