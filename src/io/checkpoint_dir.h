// Writing and reading checkpoint directories; shared by checkpoints and
// inference models.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "flotilla/framework/scope.h"
#include "flotilla/io/checkpoint.h"

namespace flotilla::io::internal {

// Runs `fill(tmp)` on the empty directory "<dir>.tmp.<pid>", then renames it
// over `dir`. On any failure the temporary directory is removed and the
// error rethrown; `dir` is untouched.
void CommitDirAtomic(const std::string& dir, const std::function<void(const std::string&)>& fill);

// Writes the tensors of `names` (looked up in `scope`) and their MANIFEST
// into `tmp`. NotFound naming a variable that is absent or has no data.
void WriteTensors(const std::string& tmp, const std::vector<std::string>& names,
                  const Scope& scope);

// Reads and verifies the tensors of `names` from `dir` against its MANIFEST.
// `check` (may be empty) sees each manifest entry before its file is read.
using EntryCheck = std::function<void(const ManifestEntry&)>;
std::map<std::string, Tensor> ReadTensors(const std::string& dir,
                                          const std::vector<std::string>& names,
                                          const EntryCheck& check = {});

}  // namespace flotilla::io::internal
