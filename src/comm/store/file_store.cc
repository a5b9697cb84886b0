#include "flotilla/comm/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <thread>

#include "flotilla/comm/hash_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"

namespace flotilla::comm {
namespace {

// Keys may hold '/' and other characters a file name cannot; hex keeps the
// mapping one-to-one and the names readable enough with a short tag.
std::string EncodeKey(const std::string& key) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "k_";
  for (unsigned char c : key) {
    if (isalnum(c) || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Holds an exclusive flock on "<dir>/.lock" for the scope.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    std::string path = dir + "/.lock";
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0644);  // never through a link
    FLOTILLA_CHECK(fd_ >= 0, Unavailable, "FileStore cannot open lock file ", path);
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~DirLock() { ::close(fd_); }

 private:
  int fd_;
};

}  // namespace

FileStore::FileStore(std::string dir) : dir_(std::move(dir)) { MakeDirs(dir_); }

std::string FileStore::PathOf(const std::string& key) const { return dir_ + "/" + EncodeKey(key); }

void FileStore::set(const std::string& key, const Bytes& value) {
  WriteFileAtomic(PathOf(key), std::string_view(reinterpret_cast<const char*>(value.data()),
                                                value.size()));
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout());
  std::string s = ReadFile(PathOf(key));
  return Bytes(s.begin(), s.end());
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  DirLock lock(dir_);
  std::string path = PathOf(key);
  int64_t v = delta;
  if (FileExists(path)) {
    std::string s = ReadFile(path);
    v = AddToCounter(DecodeCounter(Bytes(s.begin(), s.end()), key), delta, key);
  }
  std::string text = std::to_string(v);
  WriteFileAtomic(path, text);
  return v;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    if (!FileExists(PathOf(k))) return false;
  }
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (!check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::vector<std::string> missing;
      for (const auto& k : keys) {
        if (!FileExists(PathOf(k))) missing.push_back(k);
      }
      FLOTILLA_THROW(DeadlineExceeded,
                     MissingKeysMessage("FileStore " + dir_, missing, timeout));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

bool FileStore::deleteKey(const std::string& key) { return ::unlink(PathOf(key).c_str()) == 0; }

}  // namespace flotilla::comm
