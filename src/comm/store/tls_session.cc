#include "comm/store/tls_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "flotilla/common/enforce.h"

namespace flotilla::comm::tls {

namespace {

// The oldest error OpenSSL queued on this thread (and clears the queue).
std::string OpenSslError() {
  const unsigned long first = ERR_get_error();
  ERR_clear_error();
  if (first == 0) return "";
  char text[256];
  ERR_error_string_n(first, text, sizeof(text));
  return text;
}

// Loads files.cert and files.key into ctx; throws InvalidArgument naming
// the variable when OpenSSL cannot use them (or they do not match).
void UseCertificate(SSL_CTX* ctx, const TlsFiles& files) {
  FLOTILLA_ENFORCE(SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) == 1, kTlsCertEnv,
                   "='", files.cert, "': not a usable certificate: ", OpenSslError());
  FLOTILLA_ENFORCE(SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) == 1,
                   kTlsKeyEnv, "='", files.key, "': not a usable private key: ", OpenSslError());
  FLOTILLA_ENFORCE(SSL_CTX_check_private_key(ctx) == 1, kTlsKeyEnv, "='", files.key,
                   "' is not the key of ", kTlsCertEnv, "='", files.cert, "'");
}

SSL_CTX* NewContext(const SSL_METHOD* method) {
  SSL_CTX* ctx = SSL_CTX_new(method);
  FLOTILLA_CHECK(ctx != nullptr, Internal, "SSL_CTX_new: ", OpenSslError());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // The server's output buffer grows (and moves) between partial writes.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

}  // namespace

std::shared_ptr<Context> Context::ForServer(const TlsFiles& files) {
  FLOTILLA_ENFORCE(!files.cert.empty() && !files.key.empty(), "a store with TLS needs its "
                   "certificate and key: set ", kTlsCertEnv, " and ", kTlsKeyEnv,
                   " (flotilla launch --tls_cert, --tls_key)");
  CheckTlsFiles(files);
  std::shared_ptr<Context> context(new Context(NewContext(TLS_server_method())));
  SSL_CTX* ctx = context->get();
  UseCertificate(ctx, files);
  if (!files.ca.empty()) {
    FLOTILLA_ENFORCE(SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) == 1,
                     kTlsCaEnv, "='", files.ca, "': not usable CA certificates: ", OpenSslError());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return context;
}

std::shared_ptr<Context> Context::ForClient(const TlsFiles& files) {
  CheckTlsFiles(files);
  std::shared_ptr<Context> context(new Context(NewContext(TLS_client_method())));
  SSL_CTX* ctx = context->get();
  if (!files.cert.empty()) UseCertificate(ctx, files);
  if (!files.ca.empty()) {
    FLOTILLA_ENFORCE(SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) == 1,
                     kTlsCaEnv, "='", files.ca, "': not usable CA certificates: ", OpenSslError());
  } else {
    SSL_CTX_set_default_verify_paths(ctx);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return context;
}

Context::~Context() { SSL_CTX_free(ctx_); }

Session::Session(std::shared_ptr<Context> ctx, int fd, bool server, const std::string& host)
    : ctx_(std::move(ctx)), ssl_(SSL_new(ctx_->get())), fd_(fd) {
  FLOTILLA_CHECK(ssl_ != nullptr && SSL_set_fd(ssl_, fd) == 1, Internal, "SSL_new: ",
                 OpenSslError());
  if (server) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  // The certificate must name what was dialled: an IP address or a host name.
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
  unsigned char ip[16];
  const bool is_ip = inet_pton(AF_INET, host.c_str(), ip) == 1 ||
                     inet_pton(AF_INET6, host.c_str(), ip) == 1;
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    SSL_set_tlsext_host_name(ssl_, host.c_str());
  }
}

Session::~Session() { SSL_free(ssl_); }

Want Session::Classify(int rc) {
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ: return Want::kRead;
    case SSL_ERROR_WANT_WRITE: return Want::kWrite;
    case SSL_ERROR_ZERO_RETURN:
      error_ = "the peer closed the connection";
      return Want::kFailed;
    case SSL_ERROR_SYSCALL: {
      const std::string queued = OpenSslError();
      error_ = !queued.empty() ? queued
               : errno != 0    ? std::string(std::strerror(errno))
                               : "the peer closed the connection";
      return Want::kFailed;
    }
    default: {
      const long verify = SSL_get_verify_result(ssl_);
      error_ = OpenSslError();
      if (verify != X509_V_OK) {
        error_ += std::string(" (certificate: ") + X509_verify_cert_error_string(verify) + ")";
      }
      return Want::kFailed;
    }
  }
}

Want Session::Handshake() {
  if (established_) return Want::kNothing;
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    established_ = true;
    return Want::kNothing;
  }
  return Classify(rc);
}

long Session::Read(void* data, size_t n, Want* want) {
  ERR_clear_error();
  errno = 0;
  size_t got = 0;
  if (SSL_read_ex(ssl_, data, n, &got) == 1) return static_cast<long>(got);
  *want = Classify(0);
  return *want == Want::kFailed ? 0 : -1;
}

long Session::Write(const void* data, size_t n, Want* want) {
  ERR_clear_error();
  errno = 0;
  size_t put = 0;
  if (SSL_write_ex(ssl_, data, n, &put) == 1) return static_cast<long>(put);
  *want = Classify(0);
  return *want == Want::kFailed ? 0 : -1;
}

bool Session::SendAll(const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    Want want = Want::kNothing;
    const long k = Write(p, n, &want);
    if (k == 0) return false;
    if (k < 0) continue;  // a blocking socket: only a renegotiation step
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

int Session::RecvAll(void* data, size_t n, std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    if (SSL_pending(ssl_) == 0) {  // nothing decrypted yet: wait for the socket
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return -1;
      pollfd pfd{fd_, POLLIN, 0};
      const int rc = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
      if (rc <= 0) continue;
    }
    Want want = Want::kNothing;
    const long k = Read(p, n, &want);
    if (k == 0) return 0;
    if (k < 0) continue;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return 1;
}

}  // namespace flotilla::comm::tls
