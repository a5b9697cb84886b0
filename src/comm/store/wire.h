// The TCPStore wire format: length-prefixed binary messages. Private to the
// store. Integers are little-endian (every host Flotilla targets is).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "flotilla/comm/store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"

namespace flotilla::comm::wire {

// A connection authenticates both ways by challenge-response before
// anything else: the client asks for a challenge with a fresh random nonce
// of its own, the server answers a fresh random nonce, the client's hello
// carries HelloProof(secret, server nonce, client nonce), and the server's
// Ok carries ServerProof over the same nonces, which the client checks: a
// store that does not know the secret is refused by the client too. The
// secret never crosses the network, and a proof seen once is worth nothing
// on another connection (its nonces differ).
enum Command : uint8_t {
  kChallenge = 8,  // client nonce -> Ok server nonce
  kHello = 1,   // proof -> Ok server proof | Refused
  kSet = 2,     // key, value -> Ok
  kGet = 3,     // key, timeout_ms -> Ok value | Timeout missing
  kAdd = 4,     // key, delta -> Ok i64
  kCheck = 5,   // keys -> Ok u8
  kWait = 6,    // keys, timeout_ms -> Ok | Timeout missing
  kDelete = 7,  // key -> Ok u8
};

enum Status : uint8_t { kOk = 0, kTimeout = 1, kRefused = 2, kBadRequest = 3 };

// Largest message either side accepts; guards against garbage lengths.
constexpr uint32_t kMaxMessage = 1u << 30;
// Largest message the server reads from a client not yet authenticated
// (a challenge or a hello is under 64 bytes): an unauthenticated client
// cannot make the server hold more than this for it.
constexpr uint32_t kMaxPreAuthMessage = 256;
// Largest reply backlog the server keeps for a client not yet
// authenticated (it is sent at most a challenge and an answer); a client
// that does not read its replies is closed past it.
constexpr size_t kMaxPreAuthBacklog = 256;
// Longest wait a get or wait request may ask for (a year, in ms): the
// server's deadline arithmetic stays far from overflowing.
constexpr int64_t kMaxTimeoutMs = 365LL * 24 * 3600 * 1000;

// Bytes of a challenge's nonces (the client's and the server's).
constexpr size_t kNonceBytes = 32;

// What a client holding `secret` answers to the challenge: HMAC-SHA256(secret,
// "flotilla-store-hello" + server_nonce + client_nonce); "" without a secret.
inline std::string HelloProof(std::string_view secret, std::string_view server_nonce,
                              std::string_view client_nonce) {
  if (secret.empty()) return "";
  return HmacSha256(
      secret, std::string("flotilla-store-hello").append(server_nonce).append(client_nonce));
}

// What the server holding `secret` answers to an accepted hello, under
// another label so that neither proof can be replayed as the other.
inline std::string ServerProof(std::string_view secret, std::string_view server_nonce,
                               std::string_view client_nonce) {
  if (secret.empty()) return "";
  return HmacSha256(
      secret, std::string("flotilla-store-server").append(server_nonce).append(client_nonce));
}

class Writer {
 public:
  Writer& u8(uint8_t v) { return raw(&v, 1); }
  Writer& u32(uint32_t v) { return raw(&v, 4); }
  Writer& i64(int64_t v) { return raw(&v, 8); }
  Writer& bytes(const void* p, size_t n) { return u32(static_cast<uint32_t>(n)).raw(p, n); }
  Writer& str(const std::string& s) { return bytes(s.data(), s.size()); }
  Writer& strs(const std::vector<std::string>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const auto& s : v) str(s);
    return *this;
  }
  // The body prefixed with its length, ready to send.
  Bytes Framed() const {
    Bytes out(4 + body_.size());
    uint32_t n = static_cast<uint32_t>(body_.size());
    std::memcpy(out.data(), &n, 4);
    std::memcpy(out.data() + 4, body_.data(), body_.size());
    return out;
  }

 private:
  Writer& raw(const void* p, size_t n) {
    const size_t at = body_.size();
    body_.resize(at + n);
    if (n != 0) std::memcpy(body_.data() + at, p, n);
    return *this;
  }
  Bytes body_;
};

// Reads fields from one message body; throws Corruption past the end.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  uint8_t u8() { uint8_t v; raw(&v, 1); return v; }
  uint32_t u32() { uint32_t v; raw(&v, 4); return v; }
  int64_t i64() { int64_t v; raw(&v, 8); return v; }
  Bytes bytes() {
    uint32_t n = u32();
    Need(n);
    Bytes out(p_, p_ + n);
    p_ += n;
    return out;
  }
  std::string str() {
    Bytes b = bytes();
    return std::string(b.begin(), b.end());
  }
  // A list of at most `max` strings; the count is checked against `max` and
  // against the bytes left (4 per string at least) before anything grows.
  std::vector<std::string> strs(uint32_t max = UINT32_MAX) {
    uint32_t n = u32();
    FLOTILLA_CHECK(n <= max, InvalidArgument, "TCPStore request names ", n,
                   " keys, more than the limit of ", max);
    Need(static_cast<size_t>(n) * 4);
    std::vector<std::string> out;
    out.reserve(n);
    for (uint32_t i = 0; i < n; ++i) out.push_back(str());
    return out;
  }

 private:
  void Need(size_t n) const {
    FLOTILLA_CHECK(static_cast<size_t>(end_ - p_) >= n, Corruption,
                   "TCPStore message truncated");
  }
  void raw(void* out, size_t n) {
    Need(n);
    std::memcpy(out, p_, n);
    p_ += n;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace flotilla::comm::wire
