// Persistable variables to and from checkpoint directories.
#include "flotilla/io/checkpoint.h"

#include <algorithm>

#include "checkpoint_dir.h"
#include "flotilla/common/enforce.h"
#include "flotilla/trace/trace.h"
#include "flotilla/common/file_util.h"
#include "manifest.h"

namespace flotilla::io {
namespace {

bool IsSaved(const VarDesc& v) {
  return v.persistable && v.type == VarType::kDenseTensor && v.name != "feed" &&
         v.name != "fetch";
}

// Rejects a saved tensor that cannot be the program's variable.
internal::EntryCheck MatchProgram(const Program& program, const std::string& dir) {
  return [&program, dir](const ManifestEntry& e) {
    const VarDesc& v = program.global_block().Var(e.name);
    FLOTILLA_ENFORCE(v.dtype == e.dtype && DimsCompatible(v.shape, e.dims), "variable '",
                     e.name, "' in checkpoint '", dir, "' is ", DTypeName(e.dtype), " ",
                     DimsToString(e.dims), " but the program expects ", DTypeName(v.dtype), " ",
                     DimsToString(v.shape));
  };
}

void Store(std::map<std::string, Tensor> tensors, Scope& scope) {
  for (auto& [name, t] : tensors) *scope.Var(name)->GetMutableTensor() = std::move(t);
}

}  // namespace

std::vector<std::string> PersistableNames(const Program& program) {
  std::vector<std::string> names;
  for (const VarDesc* v : program.global_block().AllVars()) {
    if (IsSaved(*v)) names.push_back(v->name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void SaveVars(const std::string& dir, const std::vector<std::string>& names, const Scope& scope) {
  trace::Span span(trace::Category::kCheckpoint, FLOTILLA_TRACE_NAME("save"));
  span.Arg("vars", static_cast<int64_t>(names.size()));
  internal::CommitDirAtomic(dir, [&](const std::string& tmp) {
    internal::WriteTensors(tmp, names, scope);
  });
}

void LoadVars(const std::string& dir, const std::vector<std::string>& names, Scope& scope) {
  trace::Span span(trace::Category::kCheckpoint, FLOTILLA_TRACE_NAME("load"));
  span.Arg("vars", static_cast<int64_t>(names.size()));
  Store(internal::ReadTensors(dir, names), scope);
}

void SavePersistables(const std::string& dir, const Program& program, const Scope& scope) {
  SaveVars(dir, PersistableNames(program), scope);
}

void LoadPersistables(const std::string& dir, const Program& program, Scope& scope) {
  trace::Span span(trace::Category::kCheckpoint, FLOTILLA_TRACE_NAME("load"));
  Store(internal::ReadTensors(dir, PersistableNames(program), MatchProgram(program, dir)), scope);
}

std::vector<ManifestEntry> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/" + internal::kManifestName;
  FLOTILLA_CHECK(FileExists(path), NotFound, "checkpoint '", dir, "' has no ", 
                 internal::kManifestName, " (", path, " is missing)");
  return internal::ParseManifest(
      ReadFileAtMost(path, internal::kMaxManifestBytes, "checkpoint manifest"), path);
}

}  // namespace flotilla::io
