// Whether an address stays on this host: servers bind loopback unless asked
// otherwise, and what they refuse off it (plaintext next to TLS) is decided here.
#pragma once

#include <string>

namespace flotilla {

// True for 127.0.0.0/8, ::1 (bracketed or not) and "localhost".
bool IsLoopbackHost(const std::string& host);

}  // namespace flotilla
