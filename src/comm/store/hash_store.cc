#include "flotilla/comm/hash_store.h"

#include <charconv>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::comm {

std::string MissingKeysMessage(const std::string& who, const std::vector<std::string>& missing,
                               std::chrono::milliseconds timeout) {
  return StrCat(who, ": timed out after ", timeout.count(), "ms waiting for keys [",
                Join(missing, ", "), "]");
}

int64_t DecodeCounter(const Bytes& value, const std::string& key) {
  int64_t v = 0;
  auto* begin = reinterpret_cast<const char*>(value.data());
  auto [ptr, ec] = std::from_chars(begin, begin + value.size(), v);
  FLOTILLA_CHECK(ec == std::errc() && ptr == begin + value.size(), InvalidArgument,
                 "store key '", key, "' does not hold an integer counter");
  return v;
}

int64_t AddToCounter(int64_t counter, int64_t delta, const std::string& key) {
  int64_t sum = 0;
  FLOTILLA_CHECK(!__builtin_add_overflow(counter, delta, &sum), InvalidArgument, "store counter '",
                 key, "' holds ", counter, "; adding ", delta, " would overflow int64");
  return sum;
}

Bytes EncodeCounter(int64_t value) {
  std::string s = std::to_string(value);
  return Bytes(s.begin(), s.end());
}

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    data_[key] = value;
  }
  cv_.notify_all();
}

Bytes HashStore::get(const std::string& key) {
  wait({key}, timeout());
  std::lock_guard<std::mutex> lock(mu_);
  return data_.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    v = AddToCounter(it == data_.end() ? 0 : DecodeCounter(it->second, key), delta, key);
    data_[key] = EncodeCounter(v);
  }
  cv_.notify_all();
  return v;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  return MissingLocked(keys).empty();
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto done = [&] { return MissingLocked(keys).empty(); };
  if (!cv_.wait_for(lock, timeout, done)) {
    FLOTILLA_THROW(DeadlineExceeded, MissingKeysMessage("HashStore", MissingLocked(keys), timeout));
  }
}

bool HashStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return data_.erase(key) > 0;
}

std::vector<std::string> HashStore::MissingLocked(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.count(k)) missing.push_back(k);
  }
  return missing;
}

}  // namespace flotilla::comm
