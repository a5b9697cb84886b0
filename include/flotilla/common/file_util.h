// Files written so that a crash never leaves a half-written file under the
// final name: data goes to "<path>.tmp.<random>" (created with O_EXCL and
// O_NOFOLLOW: never through a planted link), is fsync'ed, then renamed.
// Directories a user names for Flotilla's files: safe_file.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flotilla {

// Writes `data` to `path` atomically. Throws Unavailable naming the path on
// any I/O failure; the temporary file is removed.
void WriteFileAtomic(const std::string& path, std::string_view data);
// WriteFileAtomic of `name` (one plain name) in the directory open as
// `dir_fd`; `path` names the file in errors.
void WriteFileAtomicAt(int dir_fd, const std::string& name, std::string_view data,
                       const std::string& path);
// Reads a whole file; throws NotFound naming the path when it is missing.
std::string ReadFile(const std::string& path);
// Reads a whole regular file of at most `max_bytes`, checking its size
// before reading anything: throws NotFound naming the path when it is
// missing, Corruption naming `what` when it is not a regular file (a FIFO,
// a device) or is larger than `max_bytes`.
std::string ReadFileAtMost(const std::string& path, uint64_t max_bytes, const std::string& what);
// ReadFileAtMost of the file open as `fd` (closed before returning or
// throwing), named `path` in errors.
std::string ReadFdAtMost(int fd, const std::string& path, uint64_t max_bytes,
                         const std::string& what);
bool FileExists(const std::string& path);
// mkdir -p; throws Unavailable naming the path on failure.
void MakeDirs(const std::string& path);
// Atomically renames a directory over a missing or older one: readers see
// the old directory or the new one, never neither (renameat2 RENAME_EXCHANGE).
void RenameDirAtomic(const std::string& from, const std::string& to);
// rm -rf; missing is fine.
void RemoveAll(const std::string& path);

}  // namespace flotilla
