#include "flotilla/trace/trace.h"

#include <cstring>

#include "trace/thread_buffer.h"

namespace flotilla::trace {

const char* CategoryName(Category c) {
  static constexpr const char* kNames[kCategoryCount] = {
      "op",      "collective", "comm_wait", "queue",   "rpc",      "rpc_call", "serve",
      "reader",  "checkpoint", "elastic",   "launcher", "step",    "counter"};
  const auto i = static_cast<size_t>(c);
  return i < kCategoryCount ? kNames[i] : "other";
}

namespace detail {
void Append(const Event& e) { BufferRegistry::Get().Local().Push(e); }
}  // namespace detail

void Span::Begin(Category cat, NameId name) {
  event_.cat = cat;
  event_.name = name;
  event_.phase = 'X';
  event_.track = 0;
  event_.nargs = event_.name_args = event_.double_args = 0;
  event_.start_ns = MonoNs();
}

void Span::Add(const char* key, int64_t value, int kind) {
  if (event_.nargs >= Event::kMaxArgs) return;
  const uint8_t bit = static_cast<uint8_t>(1u << event_.nargs);
  if (kind == 1) event_.name_args |= bit;
  if (kind == 2) event_.double_args |= bit;
  event_.args[event_.nargs++] = {key, value};
}

Span& Span::ArgDouble(const char* key, double value) {
  if (!active_) return *this;
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  Add(key, bits, 2);
  return *this;
}

void Span::End() {
  if (!active_) return;
  active_ = false;
  event_.end_ns = MonoNs();
  detail::Append(event_);
}

void Instant(Category cat, NameId name, const char* key, int64_t value, const char* key2,
             int64_t value2) {
  if (!Enabled()) return;
  Event e;
  e.cat = cat;
  e.name = name;
  e.phase = 'i';
  e.track = 0;
  e.nargs = e.name_args = e.double_args = 0;
  if (key) e.args[e.nargs++] = {key, value};
  if (key2) e.args[e.nargs++] = {key2, value2};
  e.start_ns = e.end_ns = MonoNs();
  detail::Append(e);
}

void Count(NameId name, double value) {
  if (!Enabled()) return;
  Event e;
  e.cat = Category::kCounter;
  e.name = name;
  e.phase = 'C';
  e.track = 0;
  e.nargs = 1;
  e.name_args = 0;
  e.double_args = 1;
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  e.args[0] = {"value", bits};
  e.start_ns = e.end_ns = MonoNs();
  detail::Append(e);
}

uint32_t CurrentThreadRow() { return BufferRegistry::Get().Local().thread_index(); }

void SetThreadName(std::string_view name) {
  BufferRegistry::Get().SetLocalName(std::string(name));
}

}  // namespace flotilla::trace
