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

}  // namespace

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
  const std::string model_path = dir + "/" + kModelFileName;
  const std::string names_path = dir + "/" + kFeedFetchFileName;
  FLOTILLA_CHECK(FileExists(model_path), NotFound, "inference model '", dir, "' has no ",
                 kModelFileName, " (", model_path, " is missing)");
  std::string model = ReadFileAtMost(model_path, kMaxModelBytes, "model file");
  InferenceModel out;
  ParseFeedFetch(ReadFileAtMost(names_path, kMaxModelBytes, "feed/fetch file"), names_path, model,
                 model_path, &out);
  out.program = Program::Parse(model, "model file '" + model_path + "'");
  LoadPersistables(dir, out.program, scope);
  return out;
}

}  // namespace flotilla::io
