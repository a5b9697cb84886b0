#include "flotilla/trace/names.h"

#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace flotilla::trace {

namespace {

struct Table {
  std::shared_mutex mu;
  std::deque<std::string> strings{""};  // index = id; deque: stable references
  std::unordered_map<std::string_view, NameId> ids{{std::string_view(), kNoName}};
};

Table& Names() {
  static auto* table = new Table();  // never destroyed: ids outlive static destructors
  return *table;
}

}  // namespace

NameId Intern(std::string_view s) {
  Table& t = Names();
  {
    std::shared_lock<std::shared_mutex> lock(t.mu);
    auto it = t.ids.find(s);
    if (it != t.ids.end()) return it->second;
  }
  std::unique_lock<std::shared_mutex> lock(t.mu);
  auto it = t.ids.find(s);
  if (it != t.ids.end()) return it->second;
  const auto id = static_cast<NameId>(t.strings.size());
  t.strings.emplace_back(s);
  t.ids.emplace(t.strings.back(), id);
  return id;
}

const std::string& NameOf(NameId id) {
  Table& t = Names();
  std::shared_lock<std::shared_mutex> lock(t.mu);
  return id < t.strings.size() ? t.strings[id] : t.strings[0];
}

}  // namespace flotilla::trace
