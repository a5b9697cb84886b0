// Files in directories a user names (--log_dir, --checkpoint_dir, a model
// root): a planted symlink must never redirect what Flotilla writes or
// deletes.
//
// A SafeDir is a directory opened once (O_DIRECTORY|O_NOFOLLOW) and checked:
// not a symlink, not writable by others unless sticky (/tmp is fine, a
// 0777 directory is not). Everything under it goes through its descriptor
// (openat, mkdirat, renameat, unlinkat) with O_NOFOLLOW, so replacing the
// directory or an entry in it by a link after the check changes nothing.
// Temporary files are created with O_EXCL under an unpredictable name.
//
// Failures throw: InvalidArgument naming the directory, `what` it is (e.g.
// "--log_dir") and why it is refused; Unavailable naming the path for I/O
// errors. A SafeDir is movable, not copyable; its methods are thread-safe
// (each is a few system calls on the descriptor).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flotilla {

// Throws InvalidArgument when `path` (itself, not a parent) is a symlink, is
// not a directory, or is writable by group or others without the sticky bit.
// NotFound when it does not exist.
void CheckUserDir(const std::string& path, const std::string& what);

// open(2) of `path` with O_NOFOLLOW|O_CLOEXEC added: a symlink at its last
// component is refused (ELOOP). Returns the descriptor; throws Unavailable
// naming the path, with "is a symbolic link" for ELOOP.
int OpenNoFollow(const std::string& path, int flags, mode_t mode = 0644);

class SafeDir {
 public:
  // Opens the existing directory `path` and checks it (CheckUserDir's rules,
  // on the descriptor). `what` names it in errors.
  static SafeDir Open(const std::string& path, const std::string& what);
  // Creates `path` first (mkdir -p, mode 0755 less the umask) when missing.
  static SafeDir Create(const std::string& path, const std::string& what);

  SafeDir(SafeDir&& other) noexcept;
  SafeDir& operator=(SafeDir&& other) noexcept;
  SafeDir(const SafeDir&) = delete;
  SafeDir& operator=(const SafeDir&) = delete;
  ~SafeDir();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // "/proc/self/fd/<fd>": a path reaching this directory through its
  // descriptor, for code that takes paths. Names under it resolve from the
  // directory opened (wherever it was moved since), and nothing can be
  // created in it once it has been removed. Valid while this SafeDir lives.
  std::string ProcPath() const { return "/proc/self/fd/" + std::to_string(fd_); }
  // "<path>/<name>", for messages.
  std::string PathOf(std::string_view name) const;

  // The subdirectory `name` (one plain name, no '/'), created (mode 0755
  // less the umask) when `create` and missing. A symlink is refused; the
  // subdirectory is not checked for permissions (this one's owner made it).
  // With `create`, one removed by another process while this call runs
  // (launchers sharing a log directory) is made again.
  SafeDir Subdir(const std::string& name, bool create) const;
  // openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode): the caller owns
  // the descriptor. Throws Unavailable naming the path.
  int OpenFile(const std::string& name, int flags, mode_t mode = 0644) const;
  // Writes `data` to `name` atomically: a temporary "<name>.tmp.<random>"
  // (O_EXCL), fsync'ed, then renamed over `name` (a symlink there is
  // replaced, never followed). The temporary is removed on failure.
  void WriteAtomic(const std::string& name, std::string_view data) const;
  // Reads the regular file `name` of at most `max_bytes` (a symlink is
  // refused). NotFound when missing; Corruption when larger or not regular.
  std::string ReadAtMost(const std::string& name, uint64_t max_bytes) const;
  // True when `name` exists (a symlink counts as itself, never followed).
  bool Exists(const std::string& name) const;
  bool IsDir(const std::string& name) const;  // a real directory, not a link
  bool IsLink(const std::string& name) const;
  // The names in this directory, without "." and "..".
  std::vector<std::string> List() const;
  // renameat within this directory.
  void Rename(const std::string& from, const std::string& to) const;
  // Swaps `from` and `to` (both exist) in one step (RENAME_EXCHANGE).
  void Exchange(const std::string& from, const std::string& to) const;
  // Removes `name` and, when it is a directory, everything under it,
  // through descriptors: a symlink anywhere is removed as a link, its target
  // is never touched. Missing is fine. Returns false when something could
  // not be removed (e.g. a file appeared while the tree was removed).
  bool RemoveTree(const std::string& name) const;

 private:
  SafeDir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace flotilla
