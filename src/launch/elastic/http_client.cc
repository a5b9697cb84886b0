#include "launch/elastic/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstring>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::launch {

namespace {

int MillisLeft(HttpClock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - HttpClock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

sockaddr_in Resolve(const std::string& host, int port, const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  FLOTILLA_CHECK(rc == 0 && found != nullptr, Unavailable, "cannot resolve ", address, ": ",
                 gai_strerror(rc));
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Waits for `events` on fd; false on timeout.
bool WaitFd(int fd, short events, HttpClock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, MillisLeft(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

HttpConnection::HttpConnection(const std::string& host, int port, HttpClock::time_point deadline)
    : address_(StrCat(host, ":", port)) {
  sockaddr_in addr = Resolve(host, port, address_);
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  FLOTILLA_CHECK(fd_ >= 0, Unavailable, "socket for ", address_, ": ", std::strerror(errno));
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int rc = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (rc != 0 && errno != EINPROGRESS) {
    int err = errno;
    close(fd_);
    FLOTILLA_THROW(Unavailable, "cannot connect to ", address_, ": ", std::strerror(err));
  }
  if (rc != 0) {
    int err = WaitFd(fd_, POLLOUT, deadline) ? 0 : ETIMEDOUT;
    socklen_t len = sizeof(err);
    if (err == 0) getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close(fd_);
      FLOTILLA_THROW(Unavailable, "cannot connect to ", address_, ": ", std::strerror(err));
    }
  }
}

HttpConnection::~HttpConnection() {
  if (fd_ >= 0) close(fd_);
}

void HttpConnection::SendAll(const std::string& data, HttpClock::time_point deadline) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    FLOTILLA_CHECK(n < 0 && errno == EAGAIN, Unavailable, "sending to ", address_, ": ",
                   std::strerror(errno));
    FLOTILLA_CHECK(WaitFd(fd_, POLLOUT, deadline), DeadlineExceeded, "sending a request to ",
                   address_, " timed out");
  }
}

HttpConnection::Fill HttpConnection::FillBuffer(HttpClock::time_point deadline) {
  char buf[16384];
  while (true) {
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      buffer_.append(buf, static_cast<size_t>(n));
      return Fill::kData;
    }
    if (n == 0) return Fill::kEof;
    if (errno == EINTR) continue;
    FLOTILLA_CHECK(errno == EAGAIN, Unavailable, "reading from ", address_, ": ",
                   std::strerror(errno));
    if (!WaitFd(fd_, POLLIN, deadline)) return Fill::kTimeout;
  }
}

void HttpConnection::ReadHeaders(HttpClock::time_point deadline) {
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    FLOTILLA_CHECK(buffer_.size() <= kMaxHttpHeaders, Unavailable, address_,
                   " sent more than ", kMaxHttpHeaders, " bytes of headers");
    Fill f = FillBuffer(deadline);
    FLOTILLA_CHECK(f != Fill::kTimeout, DeadlineExceeded, "no response from ", address_, " in time");
    FLOTILLA_CHECK(f != Fill::kEof, Unavailable, address_, " closed the connection before answering");
  }
  std::vector<std::string> lines = Split(buffer_.substr(0, end), '\n');
  buffer_.erase(0, end + 4);
  FLOTILLA_CHECK(!lines.empty(), Unavailable, address_, " sent no status line");
  std::vector<std::string> status = Split(lines[0], ' ');
  FLOTILLA_CHECK(status.size() >= 2 && StartsWith(status[0], "HTTP/1."), Unavailable, address_,
                 " did not answer HTTP: '", Trim(lines[0]), "'");
  status_ = static_cast<int>(ParseInt(status[1], "HTTP status"));
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    const std::string name = Lower(Trim(lines[i].substr(0, colon)));
    const std::string value = Lower(Trim(lines[i].substr(colon + 1)));
    if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) chunked_ = true;
    if (name == "content-length") {
      const int64_t length = ParseInt(value, "Content-Length");
      FLOTILLA_CHECK(length >= 0, Unavailable, address_, " sent Content-Length ", length);
      content_left_ = static_cast<size_t>(length);
    }
  }
}

int HttpConnection::Post(const std::string& path, const std::string& body,
                         HttpClock::time_point deadline) {
  SendAll(StrCat("POST ", path, " HTTP/1.1\r\nHost: ", address_,
                 "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                 "\r\nConnection: close\r\n\r\n", body),
          deadline);
  ReadHeaders(deadline);
  return status_;
}

// A chunk-size line: hex digits, optionally followed by ";extension".
// Throws Unavailable naming the server for anything else or for a size
// above kMaxHttpChunk, so a bad reply fails over like a lost one.
size_t HttpConnection::ChunkSize(const std::string& line) const {
  const std::string digits = Trim(line.substr(0, line.find(';')));
  size_t size = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
  FLOTILLA_CHECK(!digits.empty() && ec == std::errc() && end == digits.data() + digits.size(),
                 Unavailable, address_, " sent a malformed chunk size '", line.substr(0, 40), "'");
  FLOTILLA_CHECK(size <= kMaxHttpChunk, Unavailable, address_, " sent a chunk of ", size,
                 " bytes, more than the ", kMaxHttpChunk, " accepted");
  return size;
}

std::optional<std::string> HttpConnection::NextChunk(HttpClock::time_point deadline) {
  size_t eol;
  while ((eol = buffer_.find("\r\n")) == std::string::npos) {
    FLOTILLA_CHECK(buffer_.size() <= kMaxHttpLine, Unavailable, address_,
                   " sent a chunk-size line longer than ", kMaxHttpLine, " bytes");
    Fill f = FillBuffer(deadline);
    if (f == Fill::kTimeout) return std::string();
    FLOTILLA_CHECK(f != Fill::kEof, Unavailable, address_, " ended a chunked response early");
  }
  const size_t size = ChunkSize(buffer_.substr(0, eol));
  while (buffer_.size() < eol + 2 + size + 2) {
    Fill f = FillBuffer(deadline);
    if (f == Fill::kTimeout) return std::string();
    FLOTILLA_CHECK(f != Fill::kEof, Unavailable, address_, " ended a chunked response early");
  }
  std::string payload = buffer_.substr(eol + 2, size);
  buffer_.erase(0, eol + 2 + size + 2);
  if (size == 0) {
    done_ = true;
    return std::nullopt;
  }
  return payload;
}

std::optional<std::string> HttpConnection::NextPiece(HttpClock::time_point deadline) {
  if (done_) return std::nullopt;
  if (chunked_) return NextChunk(deadline);
  if (content_left_ && *content_left_ == 0) {
    done_ = true;
    return std::nullopt;
  }
  if (buffer_.empty()) {
    Fill f = FillBuffer(deadline);
    if (f == Fill::kTimeout) return std::string();
    if (f == Fill::kEof) {
      FLOTILLA_CHECK(!content_left_, Unavailable, address_, " ended a response early");
      done_ = true;
      return std::nullopt;
    }
  }
  std::string piece;
  piece.swap(buffer_);
  if (content_left_) {
    if (piece.size() > *content_left_) piece.resize(*content_left_);
    *content_left_ -= piece.size();
  }
  return piece;
}

std::string HttpConnection::ReadBody(HttpClock::time_point deadline) {
  std::string body;
  while (auto piece = NextPiece(deadline)) {
    FLOTILLA_CHECK(!piece->empty() || HttpClock::now() < deadline, DeadlineExceeded,
                   "the response from ", address_, " did not end in time");
    body += *piece;
    FLOTILLA_CHECK(body.size() <= kMaxHttpBody, Unavailable, "the response from ", address_,
                   " is larger than ", kMaxHttpBody, " bytes");
  }
  return body;
}

HttpResponse HttpPost(const std::string& host, int port, const std::string& path,
                      const std::string& body, std::chrono::milliseconds timeout) {
  const auto deadline = HttpClock::now() + timeout;
  HttpConnection conn(host, port, deadline);
  HttpResponse r;
  r.status = conn.Post(path, body, deadline);
  r.body = conn.ReadBody(deadline);
  return r;
}

}  // namespace flotilla::launch
