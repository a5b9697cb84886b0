// Writing and reading checkpoint directories; shared by checkpoints and
// inference models.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "flotilla/common/safe_file.h"
#include "flotilla/framework/scope.h"
#include "flotilla/io/checkpoint.h"

namespace flotilla::io::internal {

// What the marker file of a committed directory holds (manifest.h: kMarkerName).
inline constexpr const char* kMarkerText =
    "A directory Flotilla saved. Flotilla's clean-up removes only directories carrying this file.\n";

// Removes the directory `name` under `parent`, its marker file last: a
// process killed part-way leaves a directory the clean-up still recognises.
// Never follows a link. False when something stayed (SafeDir::RemoveTree).
bool RemoveMarkedDir(const SafeDir& parent, const std::string& name);

// "<name>.<kind>.<pid>.<16 random hex digits>": the name of a temporary
// ("tmp") or doomed ("old") directory; the pid tells whose it is, the
// random part makes it unpredictable.
std::string TempName(const std::string& name, const char* kind);

// Runs `fill(tmp)` on the new directory "<dir>.tmp.<pid>.<random>" (holding only
// the marker file), then renames it over `dir`. The parent of `dir` is
// opened once and checked (safe_file.h: no symbolic link, not writable by
// others without the sticky bit); `dir` must not be a link. On any failure
// the temporary directory is removed (even while another writer still adds
// to it) and the error rethrown; `dir` is untouched.
void CommitDirAtomic(const std::string& dir, const std::function<void(const std::string&)>& fill);

// Checks, without reading them whole, that every file the MANIFEST of `dir`
// names is there with its size and, for format 2, the CRC its entry names
// (each file's CRC trailer). NotFound or Corruption naming the file.
void VerifyFiles(const std::string& dir);

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
