// The HTTP/1.1 messages HttpServer reads and writes: a request parsed from
// the bytes received so far (GET and HEAD, one per connection), a reply
// serialized. Private to trace; fuzzed by tests/fuzz/http_request.cc.
#pragma once

#include <cstddef>
#include <string>

#include "flotilla/trace/http_server.h"

namespace flotilla::trace {

// What the event loop makes of the bytes received so far.
struct Parsed {
  enum Kind { kIncomplete, kDone, kError } kind = kIncomplete;
  int status = 0;  // kError: the reply's status
  bool head = false;
  HttpRequest request;
};

// What `in` holds so far: kIncomplete until the head (and the body its
// Content-Length announces) is there; kError with the status to answer for
// a malformed, oversized (431 head, 413 body; `max_bytes` in all),
// chunked (501) or non-GET/HEAD (405) request. Never throws.
Parsed ParseRequest(const std::string& in, size_t max_bytes);

// "Not Found" for 404; "Status" for a code it does not know.
const char* Reason(int status);
// The reply as bytes: status line, headers (Connection: close), the body
// unless `head`.
std::string Serialize(const HttpReply& reply, bool head);
// A text/plain reply.
HttpReply Text(int status, std::string body);

}  // namespace flotilla::trace
