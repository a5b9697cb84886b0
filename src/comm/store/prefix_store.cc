#include "flotilla/comm/prefix_store.h"

#include "flotilla/common/enforce.h"

namespace flotilla::comm {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : prefix_(std::move(prefix)), store_(std::move(store)) {
  FLOTILLA_ENFORCE(store_ != nullptr, "PrefixStore '", prefix_, "' needs an underlying store");
  setTimeout(store_->timeout());
}

void PrefixStore::set(const std::string& key, const Bytes& value) { store_->set(Key(key), value); }

Bytes PrefixStore::get(const std::string& key) {
  store_->wait({Key(key)}, timeout());
  return store_->get(Key(key));
}

int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return store_->add(Key(key), delta);
}

bool PrefixStore::check(const std::vector<std::string>& keys) { return store_->check(Keys(keys)); }

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  store_->wait(Keys(keys), timeout);
}

bool PrefixStore::deleteKey(const std::string& key) { return store_->deleteKey(Key(key)); }

std::vector<std::string> PrefixStore::Keys(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(Key(k));
  return out;
}

}  // namespace flotilla::comm
