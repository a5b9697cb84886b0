#include "flotilla/io/multislot.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>

#include "flotilla/common/enforce.h"

namespace flotilla::io {

const char* SlotTypeName(SlotType type) { return type == SlotType::kInt64 ? "int64" : "float32"; }

SlotType SlotTypeFromString(const std::string& name) {
  if (name == "int64" || name == "uint64") return SlotType::kInt64;
  if (name == "float" || name == "float32") return SlotType::kFloat32;
  FLOTILLA_THROW(InvalidArgument, "slot type '", name, "': expected uint64, int64, float or float32");
}

SlotColumns::SlotColumns(std::vector<SlotSpec> slot_specs) : specs(std::move(slot_specs)), slots(specs.size()) {}

int64_t SlotColumns::values() const {
  int64_t n = 0;
  for (const SlotValues& s : slots) n += s.offsets.back();
  return n;
}

namespace {

template <typename T>
void AppendValues(std::vector<T>* to, const std::vector<T>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

void AppendSlot(SlotValues* to, const SlotValues& from) {
  const int64_t base = to->offsets.back();
  AppendValues(&to->int64s, from.int64s);
  AppendValues(&to->floats, from.floats);
  for (size_t i = 1; i < from.offsets.size(); ++i) to->offsets.push_back(base + from.offsets[i]);
}

template <typename T>
void GatherValues(const std::vector<T>& from, const SlotValues& src, const std::vector<int64_t>& order,
                  std::vector<T>* to) {
  if (from.empty()) return;
  for (int64_t r : order) to->insert(to->end(), from.begin() + src.offsets[r], from.begin() + src.offsets[r + 1]);
}

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

void SlotColumns::Append(const SlotColumns& other) {
  FLOTILLA_ENFORCE(other.slots.size() == slots.size(), "appending records of ", other.slots.size(),
                   " slots to records of ", slots.size());
  for (size_t s = 0; s < slots.size(); ++s) AppendSlot(&slots[s], other.slots[s]);
}

SlotColumns SlotColumns::Gather(const std::vector<int64_t>& order) const {
  SlotColumns out(specs);
  const int64_t n = records();
  for (int64_t r : order) FLOTILLA_ENFORCE(r >= 0 && r < n, "record ", r, " of ", n);
  for (size_t s = 0; s < slots.size(); ++s) {
    const SlotValues& src = slots[s];
    SlotValues& dst = out.slots[s];
    dst.offsets.reserve(order.size() + 1);
    for (int64_t r : order) dst.offsets.push_back(dst.offsets.back() + src.offsets[r + 1] - src.offsets[r]);
    GatherValues(src.int64s, src, order, &dst.int64s);
    GatherValues(src.floats, src, order, &dst.floats);
  }
  return out;
}

MultiSlotParser::MultiSlotParser(std::vector<SlotSpec> slots, MultiSlotParserOptions options)
    : slots_(std::move(slots)), options_(options) {
  FLOTILLA_ENFORCE(!slots_.empty(), "a MultiSlot parser needs at least one slot (set_use_var)");
  std::set<std::string> names;
  for (const SlotSpec& s : slots_)
    FLOTILLA_ENFORCE(names.insert(s.name).second, "slot '", s.name, "' is given twice");
}

namespace {

// One line being parsed: a cursor over its tokens and the context errors name.
class LineCursor {
 public:
  LineCursor(std::string_view line, std::string_view source, int64_t line_number)
      : line_(line), source_(source), line_number_(line_number) {}

  // The next token, empty at the end of the line.
  std::string_view Next() {
    while (pos_ < line_.size() && Blank(line_[pos_])) ++pos_;
    const size_t start = pos_;
    while (pos_ < line_.size() && !Blank(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }
  size_t remaining() const { return line_.size() - pos_; }

  [[noreturn]] void Fail(const std::string& what) const {
    throw Corruption(StrCat(source_, ":", line_number_, ": ", what));
  }

 private:
  std::string_view line_;
  std::string_view source_;
  int64_t line_number_;
  size_t pos_ = 0;
};

std::string Quoted(std::string_view token) {
  constexpr size_t kShown = 40;
  if (token.size() > kShown) return StrCat("'", token.substr(0, kShown), "...'");
  return StrCat("'", token, "'");
}

std::string SlotLabel(size_t index, const SlotSpec& spec) {
  return StrCat("slot ", index, " '", spec.name, "' (", SlotTypeName(spec.type), ")");
}

template <typename T>
bool ParseWhole(std::string_view token, T* value) {
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

bool ParseInt64(std::string_view token, int64_t* value) {
  if (!token.empty() && token[0] == '-') return ParseWhole(token, value);
  uint64_t u = 0;  // Paddle's feasigns are uint64: keep the bits of those above INT64_MAX
  if (!ParseWhole(token, &u)) return false;
  *value = static_cast<int64_t>(u);
  return true;
}

int64_t ParseCount(LineCursor* cursor, size_t index, const SlotSpec& spec, const MultiSlotParserOptions& options) {
  std::string_view token = cursor->Next();
  if (token.empty()) cursor->Fail(StrCat("expected the value count of ", SlotLabel(index, spec), ", the line ends"));
  int64_t count = 0;
  if (!ParseWhole(token, &count) || count < 0)
    cursor->Fail(StrCat("expected the value count of ", SlotLabel(index, spec), ", found ", Quoted(token)));
  if (count == 0 && !options.allow_empty_slots)
    cursor->Fail(StrCat(SlotLabel(index, spec), " has 0 values; pad it in the data generator"));
  if (count > options.max_values_per_slot)
    cursor->Fail(StrCat(SlotLabel(index, spec), ": count ", count, " exceeds the limit of ",
                        options.max_values_per_slot, " values per slot"));
  // Every value needs at least a separator and a character.
  if (static_cast<uint64_t>(count) > cursor->remaining() / 2)
    cursor->Fail(StrCat(SlotLabel(index, spec), ": count ", count, " is more than the rest of the line holds (",
                        cursor->remaining(), " characters)"));
  return count;
}

template <typename T, typename ParseFn>
void ParseValues(LineCursor* cursor, size_t index, const SlotSpec& spec, int64_t count, ParseFn parse,
                 std::vector<T>* out) {
  for (int64_t i = 0; i < count; ++i) {
    std::string_view token = cursor->Next();
    if (token.empty())
      cursor->Fail(StrCat(SlotLabel(index, spec), ": expected ", count, " value(s), the line ends after ", i));
    T value{};
    if (!parse(token, &value))
      cursor->Fail(StrCat(SlotLabel(index, spec), ": value ", i, " of ", count, ": expected ",
                          spec.type == SlotType::kInt64 ? "an integer" : "a number", ", found ", Quoted(token)));
    out->push_back(value);
  }
}

void ParseSlot(LineCursor* cursor, size_t index, const SlotSpec& spec, const MultiSlotParserOptions& options,
               SlotValues* slot) {
  const int64_t count = ParseCount(cursor, index, spec, options);
  if (spec.type == SlotType::kInt64)
    ParseValues(cursor, index, spec, count, ParseInt64, &slot->int64s);
  else
    ParseValues(cursor, index, spec, count, ParseWhole<float>, &slot->floats);
  slot->offsets.push_back(slot->offsets.back() + count);
}

// Restores `out` to the record count it had when this was made unless
// Commit() is called (a failed line leaves no partial record).
class RecordRollback {
 public:
  explicit RecordRollback(SlotColumns* out) : out_(out), records_(out->records()) {}
  ~RecordRollback() {
    if (out_ == nullptr) return;
    for (SlotValues& s : out_->slots) {
      s.offsets.resize(records_ + 1);
      s.int64s.resize(std::min<size_t>(s.int64s.size(), s.offsets.back()));
      s.floats.resize(std::min<size_t>(s.floats.size(), s.offsets.back()));
    }
  }
  void Commit() { out_ = nullptr; }

 private:
  SlotColumns* out_;
  int64_t records_;
};

}  // namespace

void MultiSlotParser::ParseLine(std::string_view line, std::string_view source, int64_t line_number,
                                SlotColumns* out) const {
  FLOTILLA_ENFORCE(out->slots.size() == slots_.size(), "parsing ", slots_.size(), " slots into records of ",
                   out->slots.size());
  LineCursor cursor(line, source, line_number);
  RecordRollback rollback(out);
  for (size_t s = 0; s < slots_.size(); ++s) ParseSlot(&cursor, s, slots_[s], options_, &out->slots[s]);
  std::string_view extra = cursor.Next();
  if (!extra.empty())
    cursor.Fail(StrCat("expected the end of the line after ", slots_.size(), " slot(s), found ", Quoted(extra)));
  rollback.Commit();
}

int64_t MultiSlotParser::ParseText(std::string_view text, std::string_view source, int64_t first_line,
                                   SlotColumns* out) const {
  int64_t lines = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    bool blank = true;
    for (char c : line) blank = blank && Blank(c);
    if (!blank) ParseLine(line, source, first_line + lines, out);
    ++lines;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

int64_t MultiSlotParser::ParseFd(int fd, std::string_view source, SlotColumns* out,
                                 const ChunkSink& on_chunk) const {
  constexpr size_t kChunk = 1 << 20;
  int64_t parsed = 0;
  std::string buffer;
  int64_t next_line = 1;
  std::vector<char> chunk(kChunk);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) FLOTILLA_THROW(Unavailable, "reading ", source, ": ", std::strerror(errno));
    if (n == 0) break;
    buffer.append(chunk.data(), static_cast<size_t>(n));
    const size_t last_newline = buffer.rfind('\n');
    if (last_newline == std::string::npos) continue;
    const int64_t before = out->records();
    next_line += ParseText(std::string_view(buffer).substr(0, last_newline + 1), source, next_line, out);
    parsed += out->records() - before;
    buffer.erase(0, last_newline + 1);
    if (on_chunk) on_chunk(out);
  }
  const int64_t before = out->records();
  ParseText(buffer, source, next_line, out);
  parsed += out->records() - before;
  if (on_chunk) on_chunk(out);
  return parsed;
}

}  // namespace flotilla::io
