// Fuzzes the HTTP server's request parser (trace/http_request.h): the bytes
// any local client can send to /metrics, the probes and the dashboard.
//
// Input: the bytes received so far; the first byte picks the size limit, as
// the server's is an option. Checks what the server relies on: a parsed
// request fits the limit, an error carries a status the server can name,
// and each prefix of a complete request is incomplete or an error, never a
// different request.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "trace/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using flotilla::trace::Parsed;
  if (size == 0) return 0;
  const size_t limit = 64 + static_cast<size_t>(data[0]) * 64;
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  const Parsed p = flotilla::trace::ParseRequest(in, limit);
  if (p.kind == Parsed::kError && std::string(flotilla::trace::Reason(p.status)) == "Status") {
    std::abort();  // a status without a reason phrase
  }
  if (p.kind != Parsed::kDone) return 0;
  const size_t head = in.find("\r\n\r\n");
  if (head == std::string::npos || head + 4 > limit) std::abort();
  for (size_t n = 0; n < head + 4; n += 7) {
    if (flotilla::trace::ParseRequest(in.substr(0, n), limit).kind == Parsed::kDone) std::abort();
  }
  (void)flotilla::trace::Serialize(flotilla::trace::Text(200, p.request.path), p.head);
  return 0;
}
