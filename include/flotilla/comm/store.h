// Rendezvous key-value stores. Ranks use a Store to find each other: each
// publishes its address under a key and waits for the keys of the others.
//
// All implementations are thread-safe. Blocking calls take a timeout and throw
// DeadlineExceeded naming the keys still missing when it expires; a store that
// cannot be reached throws Unavailable naming its address.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flotilla::comm {

using Bytes = std::vector<uint8_t>;

class Store {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

  virtual ~Store() = default;

  // Sets `key` to `value`, replacing any old value, and wakes its waiters.
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Blocks until `key` exists (or the store's timeout passes), then returns it.
  virtual Bytes get(const std::string& key) = 0;
  // Atomically adds `delta` to the integer counter at `key` (created at 0)
  // and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // True when every key exists; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Blocks until every key exists. Throws DeadlineExceeded naming the
  // missing keys after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  // Removes `key`; returns whether it existed.
  virtual bool deleteKey(const std::string& key) = 0;

  // The timeout of get() and wait(keys). Safe to change while other threads
  // use the store: a call already waiting keeps the timeout it started with.
  void setTimeout(std::chrono::milliseconds timeout) { timeout_.store(timeout); }
  std::chrono::milliseconds timeout() const { return timeout_.load(); }

  // Convenience: strings as values.
  void setString(const std::string& key, const std::string& value) {
    set(key, Bytes(value.begin(), value.end()));
  }
  std::string getString(const std::string& key) {
    Bytes b = get(key);
    return std::string(b.begin(), b.end());
  }

 private:
  std::atomic<std::chrono::milliseconds> timeout_{kDefaultTimeout};
};

}  // namespace flotilla::comm
