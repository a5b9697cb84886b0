#include "trace/http_request.h"

#include <cctype>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::trace {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 &&
               HexDigit(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string Serialize(const HttpReply& r, bool head) {
  std::string out = StrCat("HTTP/1.1 ", r.status, " ", Reason(r.status), "\r\nContent-Type: ",
                           r.content_type, "\r\nContent-Length: ", r.body.size(),
                           "\r\nConnection: close\r\nCache-Control: no-store\r\n");
  for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
  out += "\r\n";
  if (!head) out += r.body;
  return out;
}

HttpReply Text(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body), {}};
}

Parsed ParseRequest(const std::string& in, size_t max_bytes) {
  Parsed p;
  const size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (in.size() > max_bytes) p = {Parsed::kError, 431, false, {}};
    return p;
  }
  if (end + 4 > max_bytes) return {Parsed::kError, 431, false, {}};
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < end;) {
    const size_t eol = in.find("\r\n", at);
    lines.emplace_back(in.data() + at, std::min(eol, end) - at);
    at = std::min(eol, end) + 2;
  }
  const std::string line(lines.empty() ? std::string_view() : lines[0]);
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 <= sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0) {
    return {Parsed::kError, 400, false, {}};
  }
  const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos) return {Parsed::kError, 400, false, {}};
    p.request.headers[Lower(std::string(lines[i].substr(0, colon)))] =
        Trim(lines[i].substr(colon + 1));
  }
  if (p.request.headers.count("transfer-encoding")) return {Parsed::kError, 501, false, {}};
  size_t body = 0;
  if (auto it = p.request.headers.find("content-length"); it != p.request.headers.end()) {
    char* stop = nullptr;
    const unsigned long long n = std::strtoull(it->second.c_str(), &stop, 10);
    if (it->second.empty() || *stop != '\0') return {Parsed::kError, 400, false, {}};
    if (n > max_bytes) return {Parsed::kError, 413, false, {}};
    body = static_cast<size_t>(n);
  }
  if (end + 4 + body > max_bytes) return {Parsed::kError, 413, false, {}};
  if (in.size() < end + 4 + body) return p;  // the body is still coming
  if (method != "GET" && method != "HEAD") return {Parsed::kError, 405, false, {}};
  p.head = method == "HEAD";
  const size_t q = target.find('?');
  p.request.path = UrlDecode(target.substr(0, q));
  if (q != std::string::npos) {
    for (const std::string& kv : Split(target.substr(q + 1), '&')) {
      if (kv.empty()) continue;
      const size_t eq = kv.find('=');
      p.request.query[UrlDecode(kv.substr(0, eq))] =
          eq == std::string::npos ? "" : UrlDecode(kv.substr(eq + 1));
    }
  }
  p.kind = Parsed::kDone;
  return p;
}

}  // namespace flotilla::trace
