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

#include "flotilla/common/enforce.h"

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

}  // namespace

void WriteFileAtomic(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) FLOTILLA_THROW(Unavailable, "cannot create '", tmp, "': ", std::strerror(errno));
  try {
    WriteAll(fd, data, tmp);
    if (::fsync(fd) != 0) FLOTILLA_THROW(Unavailable, "cannot fsync '", tmp, "': ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    FLOTILLA_THROW(Unavailable, "cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
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
