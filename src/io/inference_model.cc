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

std::string ModelFile(const InferenceModelFiles& files) {
  return files.model_filename.empty() ? kModelFileName : files.model_filename;
}

std::string FeedFetchFile(const InferenceModelFiles& files) {
  const bool default_model = files.model_filename.empty() || files.model_filename == kModelFileName;
  return default_model ? kFeedFetchFileName : files.model_filename + ".feed_fetch";
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
  const std::string model = pruned.Serialize();
  SaveParams(dir, files, PersistableNames(pruned), scope);
  WriteFileAtomic(model_path, model);
  WriteFileAtomic(InDir(dir, FeedFetchFile(files), "feed/fetch file"), FormatFeedFetch(feed_names, fetch_names, model));
}

void SaveInferenceModel(const std::string& dir, const std::vector<std::string>& feed_names,
                        const std::vector<std::string>& fetch_names, const Executor& exe,
                        const Program& main, const Scope& scope) {
  FLOTILLA_ENFORCE(!fetch_names.empty(), "SaveInferenceModel: no fetch targets given for '", dir,
                   "'");
  Program pruned = PruneForInference(main, feed_names, fetch_names);
  const std::string model = pruned.Serialize();
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
  const std::string names_path = InDir(dir, FeedFetchFile(files), "feed/fetch file");
  FLOTILLA_CHECK(FileExists(model_path), NotFound, "inference model '", dir, "' has no ", ModelFile(files), " (",
                 model_path, " is missing)");
  std::string model = ReadFileAtMost(model_path, kMaxModelBytes, "model file");
  InferenceModel out;
  ParseFeedFetch(ReadFileAtMost(names_path, kMaxModelBytes, "feed/fetch file"), names_path, model,
                 model_path, &out);
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
