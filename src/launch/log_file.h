// A process's log file in --log_dir: opened for appending (earlier runs stay
// above), each start marked by a header line, and read back from that header
// on for the ABORT report. Move-only; closes the file on destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace flotilla::launch {

class LogFile {
 public:
  // Opens (creating) dir/name for appending. Throws Unavailable naming the
  // path when it cannot.
  static LogFile Open(const std::string& dir, const std::string& name);

  LogFile() = default;
  LogFile(LogFile&& other) noexcept;
  LogFile& operator=(LogFile&& other) noexcept;
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  ~LogFile();

  // Appends "===== <UTC time> <what> =====\n" and remembers where this run's
  // output starts.
  void WriteHeader(const std::string& what);
  // Appends raw bytes (used for the output the launcher relays itself).
  void Append(const char* data, size_t size);
  // The last `n` lines written since the header.
  std::vector<std::string> Tail(size_t n) const;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  off_t start_ = 0;
};

// The last `n` lines of `text` (a trailing newline does not make an empty line).
std::vector<std::string> LastLines(const std::string& text, size_t n);

// "2026-11-22 01:40:03 UTC".
std::string UtcNow();

}  // namespace flotilla::launch
