// FileStore: a Store kept in a directory, one file per key, shared by the
// processes of one host (or of a shared file system). Values are written
// atomically (temp file + rename) and counters under an flock'ed lock file,
// so concurrent processes never see a torn value. Blocking calls poll the
// directory with a short back-off (file stores are for small rendezvous, not
// for hot paths).
#pragma once

#include "flotilla/comm/store.h"

namespace flotilla::comm {

class FileStore : public Store {
 public:
  // Creates `dir` when missing. Throws Unavailable when it cannot.
  explicit FileStore(std::string dir);

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool deleteKey(const std::string& key) override;

  const std::string& dir() const { return dir_; }

 private:
  std::string PathOf(const std::string& key) const;

  std::string dir_;
};

}  // namespace flotilla::comm
