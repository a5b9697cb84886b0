#include "flotilla/common/safe_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"

namespace flotilla {

namespace {

// Why a directory with status `st` is refused for files Flotilla writes;
// "" when it is fine.
std::string WhyRefused(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link (name the real directory)";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return "it is writable by every user without the sticky bit, so another user could plant "
           "links in it (chmod o-w or chmod +t it)";
  }
  return "";
}

void RefuseIf(const std::string& why, const std::string& path, const std::string& what) {
  FLOTILLA_CHECK(why.empty(), InvalidArgument, what, " '", path, "' is refused: ", why);
}

void CheckPlainName(const std::string& name, const std::string& dir) {
  FLOTILLA_CHECK(!name.empty() && name != "." && name != ".." &&
                     name.find('/') == std::string::npos,
                 InvalidArgument, "'", name, "' is not a plain file name under '", dir, "'");
}

// Removes the contents of the directory open as `fd`; false when something stayed.
bool RemoveContents(int fd) {
  const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return false;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return false;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  bool all = true;
  for (const auto& name : names) {
    if (::unlinkat(fd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR) {
      all = false;
      continue;
    }
    const int sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      all = false;
      continue;
    }
    all = RemoveContents(sub) && all;
    ::close(sub);
    all = (::unlinkat(fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) && all;
  }
  return all;
}

}  // namespace

void CheckUserDir(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    FLOTILLA_CHECK(errno != ENOENT, NotFound, what, " '", path, "' does not exist");
    FLOTILLA_THROW(Unavailable, "cannot stat ", what, " '", path, "': ", std::strerror(errno));
  }
  RefuseIf(WhyRefused(st), path, what);
}

int OpenNoFollow(const std::string& path, int flags, mode_t mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) return fd;
  FLOTILLA_CHECK(errno != ELOOP, Unavailable, "refusing to open '", path,
                 "': it is a symbolic link");
  FLOTILLA_THROW(Unavailable, "cannot open '", path, "': ", std::strerror(errno));
}

SafeDir SafeDir::Open(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    CheckUserDir(path, what);  // names a link, a file or a missing path
    FLOTILLA_THROW(Unavailable, "cannot open ", what, " '", path, "': ", std::strerror(err));
  }
  SafeDir dir(fd, path);
  struct stat st {};
  FLOTILLA_CHECK(::fstat(fd, &st) == 0, Unavailable, "cannot stat ", what, " '", path, "': ",
                 std::strerror(errno));
  RefuseIf(WhyRefused(st), path, what);
  return dir;
}

SafeDir SafeDir::Create(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) MakeDirs(path);
  return Open(path, what);
}

SafeDir::SafeDir(SafeDir&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

SafeDir& SafeDir::operator=(SafeDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

SafeDir::~SafeDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string SafeDir::PathOf(std::string_view name) const {
  const bool slash = !path_.empty() && path_.back() == '/';
  return path_ + (slash ? "" : "/") + std::string(name);
}

SafeDir SafeDir::Subdir(const std::string& name, bool create) const {
  CheckPlainName(name, path_);
  int fd = -1;
  // With `create`, a directory another process removes between the mkdir
  // and the open (launchers sharing a log directory) is made again.
  for (int attempt = 0; attempt < (create ? 5 : 1); ++attempt) {
    if (create && ::mkdirat(fd_, name.c_str(), 0755) != 0 && errno != EEXIST) {
      FLOTILLA_THROW(Unavailable, "cannot create directory '", PathOf(name), "': ",
                     std::strerror(errno));
    }
    fd = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT) break;
  }
  if (fd < 0) {
    const int err = errno;
    FLOTILLA_CHECK(err != ENOENT, NotFound, "directory '", PathOf(name), "' does not exist");
    FLOTILLA_CHECK(!(err == ELOOP || (err == ENOTDIR && IsLink(name))), InvalidArgument,
                   "directory '", PathOf(name), "' is refused: it is a symbolic link");
    FLOTILLA_THROW(Unavailable, "cannot open directory '", PathOf(name), "': ",
                   std::strerror(err));
  }
  return SafeDir(fd, PathOf(name));
}

int SafeDir::OpenFile(const std::string& name, int flags, mode_t mode) const {
  CheckPlainName(name, path_);
  const int fd = ::openat(fd_, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) return fd;
  const int err = errno;
  FLOTILLA_CHECK(err != ENOENT || (flags & O_CREAT) != 0, NotFound, "cannot open file '",
                 PathOf(name), "'");
  // ELOOP, or EACCES where the kernel protects links in sticky directories.
  FLOTILLA_CHECK(err != ELOOP && !IsLink(name), Unavailable, "refusing to open '", PathOf(name),
                 "': it is a symbolic link");
  FLOTILLA_THROW(Unavailable, "cannot open '", PathOf(name), "': ", std::strerror(err));
}

void SafeDir::WriteAtomic(const std::string& name, std::string_view data) const {
  CheckPlainName(name, path_);
  WriteFileAtomicAt(fd_, name, data, PathOf(name));
}

std::string SafeDir::ReadAtMost(const std::string& name, uint64_t max_bytes) const {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = OpenFile(name, O_RDONLY | O_NONBLOCK);
  return ReadFdAtMost(fd, PathOf(name), max_bytes, "file");
}

bool SafeDir::Exists(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

bool SafeDir::IsDir(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

bool SafeDir::IsLink(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

std::vector<std::string> SafeDir::List() const {
  std::vector<std::string> names;
  const int dup = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = dup < 0 ? nullptr : ::fdopendir(dup);
  if (d == nullptr) {
    if (dup >= 0) ::close(dup);
    FLOTILLA_THROW(Unavailable, "cannot list '", path_, "': ", std::strerror(errno));
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

void SafeDir::Rename(const std::string& from, const std::string& to) const {
  CheckPlainName(from, path_);
  CheckPlainName(to, path_);
  FLOTILLA_CHECK(::renameat(fd_, from.c_str(), fd_, to.c_str()) == 0, Unavailable,
                 "cannot rename '", PathOf(from), "' to '", PathOf(to), "': ",
                 std::strerror(errno));
}

void SafeDir::Exchange(const std::string& from, const std::string& to) const {
  CheckPlainName(from, path_);
  CheckPlainName(to, path_);
  FLOTILLA_CHECK(::renameat2(fd_, from.c_str(), fd_, to.c_str(), RENAME_EXCHANGE) == 0,
                 Unavailable, "cannot swap '", PathOf(from), "' into '", PathOf(to), "': ",
                 std::strerror(errno));
}

bool SafeDir::RemoveTree(const std::string& name) const {
  CheckPlainName(name, path_);
  if (::unlinkat(fd_, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR) return false;
  const int sub = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0) return errno == ENOENT;
  const bool emptied = RemoveContents(sub);
  ::close(sub);
  return (::unlinkat(fd_, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) && emptied;
}

}  // namespace flotilla
