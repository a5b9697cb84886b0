// Fuzzes the TCP store server's frames: a client on loopback sends the
// input's messages to a real TCPStoreServer and reads every reply until the
// server closes the connection.
//
// Input: a flags byte, then messages, each a u16 length and that many body
// bytes. The target frames them (u32 length + body) after the store's
// challenge-response with the right secret (flags bit 1 clear) or a wrong
// one (set), and ends with a
// request of an unknown command, which the server answers with BadRequest
// and a close — so every input ends deterministically. With flags bit 0 the
// bytes after the flags go out unframed (lengths included as sent), then
// the client half-closes.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "comm/store/wire.h"
#include "flotilla/comm/tcp_store.h"
#include "fuzz/fuzz_input.h"

namespace {

using flotilla::comm::TCPStoreServer;
using flotilla::fuzz::FuzzInput;
namespace wire = flotilla::comm::wire;

constexpr char kSecret[] = "fuzz-store-secret";
// A fresh server every so many inputs keeps the store's contents bounded.
constexpr int kInputsPerServer = 512;

TCPStoreServer& Server() {
  static std::unique_ptr<TCPStoreServer> server;
  static int inputs = 0;
  if (!server || ++inputs % kInputsPerServer == 0) {
    server.reset();
    flotilla::comm::TCPStoreServerOptions options;
    options.token = kSecret;
    options.max_message_bytes = 1 << 20;
    options.max_keys = 64;
    server = TCPStoreServer::Start("127.0.0.1", 0, options);
  }
  return *server;
}

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  return fd;
}

void SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t k = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (k <= 0) return;  // the server closed early (a refused hello, a bad frame)
    sent += static_cast<size_t>(k);
  }
}

// Reads until the server closes. A server that neither answers nor closes
// within 10 s is a hang: abort, so the fuzzer keeps the input.
void DrainUntilClosed(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
    if (k <= 0) return;
  }
  std::abort();
}

std::string Frame(const wire::Writer& w) {
  const auto framed = w.Framed();
  return std::string(framed.begin(), framed.end());
}

// Asks for the server's challenge and returns the hello that answers it
// with the right secret or a wrong one ("" when the server sent no nonce).
std::string Hello(int fd, bool right_secret) {
  const std::string client_nonce(wire::kNonceBytes, 'c');
  SendAll(fd, Frame(wire::Writer().u8(wire::kChallenge).str(client_nonce)));
  std::string reply;
  char buf[256];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (reply.size() < 4 + 1 + 4 + wire::kNonceBytes) {
    if (std::chrono::steady_clock::now() > deadline) std::abort();  // a hang
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t k = ::recv(fd, buf, sizeof(buf), 0);
    if (k <= 0) return "";
    reply.append(buf, static_cast<size_t>(k));
  }
  const std::string nonce = reply.substr(4 + 1 + 4, wire::kNonceBytes);
  return Frame(wire::Writer().u8(wire::kHello).str(
      wire::HelloProof(right_secret ? kSecret : "wrong-secret", nonce, client_nonce)));
}

// A body as one frame: its u32 length, then the bytes.
std::string FrameBody(const std::string& body) {
  const uint32_t n = static_cast<uint32_t>(body.size());
  return std::string(reinterpret_cast<const char*>(&n), 4) + body;
}

std::string Messages(FuzzInput& in, std::string out) {
  while (in.left() > 0) out += FrameBody(in.Str());
  return out + Frame(wire::Writer().u8(0xff));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  const uint8_t flags = in.U8();
  const bool raw = flags & 1;
  const bool right_secret = !(flags & 2);
  const int fd = Connect(Server().port());
  const std::string hello = Hello(fd, right_secret);
  if (raw) {
    SendAll(fd, hello + in.Rest());
    ::shutdown(fd, SHUT_WR);
  } else {
    SendAll(fd, Messages(in, hello));
  }
  DrainUntilClosed(fd);
  ::close(fd);
  return 0;
}
