#include "launch/log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "flotilla/common/enforce.h"
#include "flotilla/common/safe_file.h"

namespace flotilla::launch {

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

LogFile LogFile::Open(const std::string& dir, const std::string& name) {
  LogFile f;
  f.path_ = dir + "/" + name;
  // Never through a link planted at the log's name or at the directory.
  f.fd_ = SafeDir::Create(dir, "--log_dir").OpenFile(name, O_WRONLY | O_CREAT | O_APPEND, 0644);
  return f;
}

LogFile::LogFile(LogFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), start_(other.start_) {}

LogFile& LogFile::operator=(LogFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    start_ = other.start_;
  }
  return *this;
}

LogFile::~LogFile() {
  if (fd_ >= 0) close(fd_);
}

void LogFile::Append(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk must not stop the job; the child's own writes fail too
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void LogFile::WriteHeader(const std::string& what) {
  std::string line = StrCat("===== ", UtcNow(), " ", what, " =====\n");
  Append(line.data(), line.size());
  start_ = lseek(fd_, 0, SEEK_END);
}

std::vector<std::string> LastLines(const std::string& text, size_t n) {
  std::vector<std::string> lines;
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  while (lines.size() < n && end > 0) {
    size_t begin = text.rfind('\n', end - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    lines.insert(lines.begin(), text.substr(begin, end - begin));
    end = begin == 0 ? 0 : begin - 1;
  }
  return lines;
}

std::vector<std::string> LogFile::Tail(size_t n) const {
  // Read at most the last 64 KiB of this run's output: enough for 20 lines.
  constexpr off_t kWindow = 64 * 1024;
  int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  off_t end = lseek(fd, 0, SEEK_END);
  off_t from = std::max(start_, end - kWindow);
  std::string text(static_cast<size_t>(std::max<off_t>(end - from, 0)), '\0');
  ssize_t got = pread(fd, text.data(), text.size(), from);
  close(fd);
  text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return LastLines(text, n);
}

}  // namespace flotilla::launch
