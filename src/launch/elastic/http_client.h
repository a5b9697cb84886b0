// A small HTTP/1.1 client over POSIX sockets, enough for etcd's JSON gateway:
// one POST per connection ("Connection: close"), bodies with Content-Length,
// chunked or read-to-EOF, and streamed responses (watch) read piece by piece.
//
// Every call takes a deadline and never blocks past it. Failures throw
// Unavailable naming host:port (connect, send, a reset stream) or
// DeadlineExceeded naming host:port and what was pending. Not thread-safe:
// one connection belongs to one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace flotilla::launch {

using HttpClock = std::chrono::steady_clock;

// Bounds on what a server may send: larger replies fail as Unavailable.
inline constexpr size_t kMaxHttpHeaders = 64 << 10;
inline constexpr size_t kMaxHttpLine = 1 << 10;
inline constexpr size_t kMaxHttpChunk = 64 << 20;
inline constexpr size_t kMaxHttpBody = 256 << 20;

struct HttpResponse {
  int status = 0;
  std::string body;
};

class HttpConnection {
 public:
  // Connects to host:port (an IPv4 address or a name) before `deadline`.
  HttpConnection(const std::string& host, int port, HttpClock::time_point deadline);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Sends `POST path` with a JSON body and reads the status line and headers.
  // Returns the HTTP status.
  int Post(const std::string& path, const std::string& body, HttpClock::time_point deadline);

  // The next piece of the response body: a chunk's payload (chunked) or the
  // bytes that arrived. nullopt at the end of the body; "" when `deadline`
  // passed with nothing new (the stream stays usable).
  std::optional<std::string> NextPiece(HttpClock::time_point deadline);

  // The whole remaining body (throws DeadlineExceeded if it does not end in time).
  std::string ReadBody(HttpClock::time_point deadline);

  const std::string& address() const { return address_; }

 private:
  enum class Fill { kData, kEof, kTimeout };
  Fill FillBuffer(HttpClock::time_point deadline);
  void SendAll(const std::string& data, HttpClock::time_point deadline);
  void ReadHeaders(HttpClock::time_point deadline);
  std::optional<std::string> NextChunk(HttpClock::time_point deadline);
  size_t ChunkSize(const std::string& line) const;

  std::string address_;
  int fd_ = -1;
  std::string buffer_;
  int status_ = 0;
  bool chunked_ = false;
  std::optional<size_t> content_left_;  // Content-Length still to read
  bool done_ = false;
};

// One POST on a fresh connection; the whole body.
HttpResponse HttpPost(const std::string& host, int port, const std::string& path,
                      const std::string& body, std::chrono::milliseconds timeout);

}  // namespace flotilla::launch
