// HashStore: an in-memory Store shared by threads of one process. Used by
// tests that run ranks as threads, and as the table behind TCPStoreServer.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "flotilla/comm/store.h"

namespace flotilla::comm {

class HashStore : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool deleteKey(const std::string& key) override;

 private:
  std::vector<std::string> MissingLocked(const std::vector<std::string>& keys) const;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Bytes> data_;  // guarded by mu_
};

// Formats the DeadlineExceeded message shared by every store:
// "<who>: timed out after Nms waiting for keys [a, b]".
std::string MissingKeysMessage(const std::string& who, const std::vector<std::string>& missing,
                               std::chrono::milliseconds timeout);

// Counters are stored as decimal text so every store agrees on the format.
int64_t DecodeCounter(const Bytes& value, const std::string& key);
Bytes EncodeCounter(int64_t value);
// counter + delta; throws InvalidArgument naming `key` when it overflows int64.
int64_t AddToCounter(int64_t counter, int64_t delta, const std::string& key);

}  // namespace flotilla::comm
