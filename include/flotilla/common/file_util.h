// Files written so that a crash never leaves a half-written file under the
// final name: data goes to "<path>.tmp.<pid>", is fsync'ed, then renamed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flotilla {

// Writes `data` to `path` atomically. Throws Unavailable naming the path on
// any I/O failure; the temporary file is removed.
void WriteFileAtomic(const std::string& path, std::string_view data);
// Reads a whole file; throws NotFound naming the path when it is missing.
std::string ReadFile(const std::string& path);
// Reads a whole regular file of at most `max_bytes`, checking its size
// before reading anything: throws NotFound naming the path when it is
// missing, Corruption naming `what` when it is not a regular file (a FIFO,
// a device) or is larger than `max_bytes`.
std::string ReadFileAtMost(const std::string& path, uint64_t max_bytes, const std::string& what);
bool FileExists(const std::string& path);
// mkdir -p; throws Unavailable naming the path on failure.
void MakeDirs(const std::string& path);
// Atomically renames a directory over a missing or older one: readers see
// the old directory or the new one, never neither (renameat2 RENAME_EXCHANGE).
void RenameDirAtomic(const std::string& from, const std::string& to);
// rm -rf; missing is fine.
void RemoveAll(const std::string& path);

}  // namespace flotilla
