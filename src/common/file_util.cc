#include "flotilla/common/file_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/strings.h"

namespace flotilla {
namespace fs = std::filesystem;

namespace {

void WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) FLOTILLA_THROW(Unavailable, "cannot write '", path, "': ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// The directory part of `path` and its last component.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  return {dir.empty() ? "/" : dir, p.filename().string()};
}

}  // namespace

void WriteFileAtomic(const std::string& path, std::string_view data) {
  const auto [dir, name] = SplitPath(path);
  FLOTILLA_CHECK(!name.empty() && name != "." && name != "..", InvalidArgument,
                 "cannot write '", path, "': not a file name");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FLOTILLA_CHECK(dir_fd >= 0, Unavailable, "cannot open directory '", dir, "' to write '", path,
                 "': ", std::strerror(errno));
  try {
    WriteFileAtomicAt(dir_fd, name, data, path);
  } catch (...) {
    ::close(dir_fd);
    throw;
  }
  ::close(dir_fd);
}

void WriteFileAtomicAt(int dir_fd, const std::string& name, std::string_view data,
                       const std::string& path) {
  const std::string suffix = ".tmp." + HexEncode(RandomBytes(8));
  const std::string tmp = name + suffix, tmp_path = path + suffix;
  int fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644);
  FLOTILLA_CHECK(fd >= 0, Unavailable, "cannot create '", tmp_path, "': ", std::strerror(errno));
  try {
    WriteAll(fd, data, tmp_path);
    if (::fsync(fd) != 0) FLOTILLA_THROW(Unavailable, "cannot fsync '", tmp_path, "': ", std::strerror(errno));
    ::close(std::exchange(fd, -1));
    // renameat replaces a link at `name` itself, never its target.
    if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
      FLOTILLA_THROW(Unavailable, "cannot rename '", tmp_path, "' to '", path, "': ", std::strerror(errno));
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    throw;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FLOTILLA_THROW(NotFound, "cannot open file '", path, "'");
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string ReadFileAtMost(const std::string& path, uint64_t max_bytes, const std::string& what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) FLOTILLA_THROW(NotFound, "cannot open file '", path, "'");
  if (fd < 0) FLOTILLA_THROW(Unavailable, "cannot open '", path, "': ", std::strerror(errno));
  return ReadFdAtMost(fd, path, max_bytes, what);
}

std::string ReadFdAtMost(int fd, const std::string& path, uint64_t max_bytes,
                         const std::string& what) {
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const uint64_t size = regular ? static_cast<uint64_t>(st.st_size) : 0;
  if (!regular || size > max_bytes) {
    ::close(fd);
    FLOTILLA_CHECK(regular, Corruption, what, " ('", path, "') is not a regular file");
    FLOTILLA_THROW(Corruption, what, " ('", path, "') holds ", size, " bytes, more than the ",
                   max_bytes, " expected");
  }
  std::string data(size, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, data.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  FLOTILLA_CHECK(done == size, Corruption, what, " ('", path, "') changed size while read");
  return data;
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) FLOTILLA_THROW(Unavailable, "cannot create directory '", path, "': ", ec.message());
}

void RenameDirAtomic(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (fs::exists(to, ec)) {
    // Swap the two directories in one step (no moment without `to`), then
    // drop the old one, which now sits at `from`.
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) != 0) {
      FLOTILLA_THROW(Unavailable, "cannot swap '", from, "' into '", to, "': ", std::strerror(errno));
    }
    fs::remove_all(from, ec);
    return;
  }
  fs::rename(from, to, ec);
  if (ec) FLOTILLA_THROW(Unavailable, "cannot rename '", from, "' to '", to, "': ", ec.message());
}

void RemoveAll(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

}  // namespace flotilla
