// PrefixStore: a view of another Store in which every key is "<prefix>/key".
// Lets several groups (or several jobs) share one store without clashes.
// Thread-safe when the underlying store is.
#pragma once

#include <memory>

#include "flotilla/comm/store.h"

namespace flotilla::comm {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool deleteKey(const std::string& key) override;

  const std::shared_ptr<Store>& underlying() const { return store_; }

 private:
  std::string Key(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> Keys(const std::vector<std::string>& keys) const;

  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace flotilla::comm
