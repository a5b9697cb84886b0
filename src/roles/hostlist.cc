#include "flotilla/roles/hostlist.h"

#include <cctype>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::roles {

namespace {

// One bracket's numbers, formatted with their range's width.
using Choices = std::vector<std::string>;

[[noreturn]] void Malformed(std::string_view list, const std::string& why) {
  FLOTILLA_THROW(InvalidArgument, "malformed Slurm hostlist '", list, "': ", why);
}

uint64_t Bound(std::string_view list, std::string_view text) {
  if (text.empty() || text.size() > 18) Malformed(list, StrCat("bad range bound '", text, "'"));
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      Malformed(list, StrCat("range bound '", text, "' is not a number"));
    }
  }
  return std::stoull(std::string(text));
}

std::string Padded(uint64_t n, size_t width) {
  std::string s = std::to_string(n);
  return s.size() < width ? std::string(width - s.size(), '0') + s : s;
}

// "01-04,07" → 01 02 03 04 07. `budget` caps the count.
Choices ExpandBracket(std::string_view list, std::string_view body, size_t budget) {
  Choices out;
  for (const std::string& item : Split(body, ',', /*skip_empty=*/false)) {
    if (item.empty()) Malformed(list, "an empty item in brackets");
    const size_t dash = item.find('-');
    const std::string_view lo_text = std::string_view(item).substr(0, dash);
    const std::string_view hi_text =
        dash == std::string::npos ? lo_text : std::string_view(item).substr(dash + 1);
    const uint64_t lo = Bound(list, lo_text), hi = Bound(list, hi_text);
    if (lo > hi) Malformed(list, StrCat("range ", item, " runs backwards"));
    if (hi - lo >= budget - out.size()) {
      Malformed(list, StrCat("expands to more than ", kMaxHostlistHosts, " hosts"));
    }
    const size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
    for (uint64_t n = lo; n <= hi; ++n) out.push_back(Padded(n, width));
  }
  return out;
}

// One host pattern ("rack[1-2]-n[01-02]") → its hosts, appended to `out`.
void ExpandHost(std::string_view list, std::string_view pattern, std::vector<std::string>& out) {
  std::vector<std::string> hosts = {""};
  size_t i = 0;
  while (i < pattern.size()) {
    const size_t open = pattern.find('[', i);
    const std::string_view text = pattern.substr(i, open - i);
    if (text.find(']') != std::string_view::npos) Malformed(list, "']' without '['");
    for (auto& h : hosts) h += text;
    if (open == std::string_view::npos) break;
    const size_t close = pattern.find(']', open);
    if (close == std::string_view::npos) Malformed(list, "'[' without ']'");
    const std::string_view body = pattern.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string_view::npos) Malformed(list, "nested brackets");
    const size_t budget = (kMaxHostlistHosts - out.size()) / hosts.size();
    if (budget == 0) Malformed(list, StrCat("expands to more than ", kMaxHostlistHosts, " hosts"));
    const Choices choices = ExpandBracket(list, body, budget);
    std::vector<std::string> next;
    next.reserve(hosts.size() * choices.size());
    for (const auto& h : hosts) {
      for (const auto& c : choices) next.push_back(h + c);
    }
    hosts = std::move(next);
    i = close + 1;
  }
  out.insert(out.end(), hosts.begin(), hosts.end());
}

}  // namespace

std::vector<std::string> ExpandHostlist(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[' && ++depth > 1) Malformed(list, "nested brackets");
    if (c == ']' && --depth < 0) Malformed(list, "']' without '['");
    if (c != ',' || depth > 0) continue;
    const std::string_view host = list.substr(start, i - start);
    if (host.empty()) Malformed(list, "an empty host name");
    ExpandHost(list, host, out);
    start = i + 1;
  }
  if (depth != 0) Malformed(list, "'[' without ']'");
  return out;
}

}  // namespace flotilla::roles
