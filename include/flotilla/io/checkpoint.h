// Checkpoints: persistable variables saved to and loaded from a directory.
//
// Layout of a checkpoint directory:
//   MANIFEST          text; one line per tensor: name, dtype, dims, file,
//                     byte size and CRC32C of that file's content; a last
//                     line holding the CRC32C of the lines above (docs/io.md)
//   <file> ...        one tensor file per variable (SaveTensor format)
//   .flotilla-checkpoint  marks the directory as Flotilla's own
// A save writes everything into "<dir>.tmp.<pid>.<random>" and renames it over
// `dir` at the end, so a crash or failure leaves either the old checkpoint
// or the new one, never a mixture; a failed save removes its temporary
// directory. The parent of `dir` must not be a symbolic link nor writable by
// others without the sticky bit (InvalidArgument saying why).
// A tensor file copied in from another checkpoint fails its MANIFEST entry
// (Corruption naming the file).
//
// Failures: a variable missing from the scope (or without data) on save →
// NotFound naming it; a tensor file or manifest that is truncated or fails
// its checksum → Corruption naming the file and variable; a variable absent
// from the checkpoint → NotFound naming it and the directory; a saved shape
// or dtype that does not fit the program's variable → InvalidArgument naming
// it; I/O errors → Unavailable naming the path. Loads write into the scope
// only after every requested tensor has been read and verified.
// Not safe against concurrent saves to the same directory from one process.
#pragma once

#include <string>
#include <vector>

#include "flotilla/core/tensor.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"
#include "flotilla/framework/scope.h"

namespace flotilla::io {

// The variables SavePersistables saves: persistable dense tensors of block 0,
// without feed/fetch and raw (runtime object) variables. Sorted by name.
std::vector<std::string> PersistableNames(const Program& program);

void SavePersistables(const std::string& dir, const Program& program, const Scope& scope);
// Reads every persistable variable of `program` into `scope` (creating the
// variables in `scope` itself), checking shapes and dtypes against the program.
void LoadPersistables(const std::string& dir, const Program& program, Scope& scope);

// Paddle-style spellings; the executor is not used (tensors live on the CPU).
inline void SavePersistables(const Executor&, const std::string& dir, const Program& program,
                             const Scope& scope) {
  SavePersistables(dir, program, scope);
}
inline void LoadPersistables(const Executor&, const std::string& dir, const Program& program,
                             Scope& scope) {
  LoadPersistables(dir, program, scope);
}

// Saves the named variables of `scope` (found there or in its ancestors).
void SaveVars(const std::string& dir, const std::vector<std::string>& names, const Scope& scope);
// Loads the named variables into `scope`, with the shapes and dtypes saved.
void LoadVars(const std::string& dir, const std::vector<std::string>& names, Scope& scope);

// One entry of a MANIFEST.
struct ManifestEntry {
  std::string name;
  DType dtype = DType::kFloat32;
  Dims dims;
  std::string file;  // relative to the checkpoint directory
  uint64_t bytes = 0;
  uint32_t crc32c = 0;  // of the file's content before its CRC trailer
  // A MANIFEST of format 1 (older releases): crc32c covers the whole file,
  // trailer included, and so binds nothing beyond the file's own check.
  bool whole_file_crc = false;
};
// Parses dir/MANIFEST. NotFound when absent; Corruption when damaged.
std::vector<ManifestEntry> ReadManifest(const std::string& dir);

// Single-tensor files: a small header (magic, dtype, dims), the raw data and
// a CRC32C trailer. SaveTensor writes atomically (WriteFileAtomic) and throws
// Unavailable naming the path on I/O failure. LoadTensor throws NotFound when
// the file is missing and Corruption naming it when truncated or corrupt.
void SaveTensor(const std::string& path, const Tensor& tensor);
Tensor LoadTensor(const std::string& path);

}  // namespace flotilla::io
