#include "flotilla/common/job_secret.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <mutex>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"

namespace flotilla {

namespace {

std::string Octal(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%03o", mode);
  return buf;
}

std::string Checked(std::string secret, const std::string& source) {
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' || secret.back() == ' ')) {
    secret.pop_back();
  }
  FLOTILLA_ENFORCE(secret.size() >= kMinJobSecretChars, source, " holds a job secret of ",
                   secret.size(), " characters; at least ", kMinJobSecretChars,
                   " are needed (flotilla launch makes 64 random hex digits)");
  return secret;
}

std::string ReadSecretFile(const std::string& path) {
  const std::string source = StrCat(kJobSecretFileEnv, "='", path, "'");
  std::ifstream in(path);
  FLOTILLA_ENFORCE(in.good(), "cannot read the job secret: ", source, ": ", std::strerror(errno));
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    // Another user who reads the secret can join the job as any rank.
    FLOTILLA_ENFORCE(InsecureRequested(), "the job secret file ", path,
                     " is readable by other users (mode ", Octal(st.st_mode & 0777),
                     "): chmod 600 it, or set ", kInsecureEnv, "=1 (flotilla launch --insecure)",
                     " to accept it");
    log::Warn("the job secret file {} is readable by other users (chmod 600 it)", path);
  }
  std::string line;
  std::getline(in, line);
  return Checked(line, source);
}

}  // namespace

std::string RandomBytes(size_t n) {
  std::string bytes(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t k = getrandom(bytes.data() + got, n - got, 0);
    if (k < 0 && errno == EINTR) continue;
    FLOTILLA_CHECK(k > 0, Unavailable, "getrandom: ", std::strerror(errno));
    got += static_cast<size_t>(k);
  }
  return bytes;
}

std::string GenerateJobSecret() { return HexEncode(RandomBytes(32)); }

std::string HmacSha256(std::string_view secret, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const unsigned char* done =
      HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  FLOTILLA_CHECK(done != nullptr, Internal, "HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::string DeriveToken(std::string_view secret, std::string_view purpose) {
  return secret.empty() ? "" : HexEncode(HmacSha256(secret, purpose));
}

std::optional<std::string> JobSecretFromEnv() {
  if (auto path = env::Get(kJobSecretFileEnv); path && !path->empty()) return ReadSecretFile(*path);
  if (auto value = env::Get(kJobSecretEnv); value && !value->empty()) {
    return Checked(*value, kJobSecretEnv);
  }
  return std::nullopt;
}

bool InsecureRequested() { return env::GetBool(kInsecureEnv, false); }

std::string RequireJobSecret(std::string_view who) {
  if (auto secret = JobSecretFromEnv()) return *secret;
  FLOTILLA_ENFORCE(InsecureRequested(), who, " needs the job secret: set ", kJobSecretFileEnv,
                   " (a file readable only by you, the same for every process of the job) or ",
                   kJobSecretEnv, " (flotilla launch sets them for its children), or ",
                   kInsecureEnv, "=1 to run unauthenticated");
  static std::once_flag warned;
  std::call_once(warned, [] {
    log::Warn("{}=1: this job's store and parameter servers accept anyone who reaches their ports",
              kInsecureEnv);
  });
  return "";
}

bool SecretEquals(std::string_view presented, std::string_view secret) {
  // Compare every byte of the longer one, so neither the position of the
  // first difference nor a length mismatch ends the loop early.
  const size_t n = std::max(presented.size(), secret.size());
  unsigned diff = presented.size() == secret.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    const unsigned char b = i < secret.size() ? static_cast<unsigned char>(secret[i]) : 0;
    diff |= static_cast<unsigned>(a ^ b);
  }
  return diff == 0 && !secret.empty();
}

void WriteSecretFile(const std::string& path, const std::string& secret) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  FLOTILLA_CHECK(fd >= 0, Unavailable, "cannot create the job secret file ", path, ": ",
                 std::strerror(errno));
  const std::string line = secret + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  FLOTILLA_CHECK(ok, Unavailable, "cannot write the job secret file ", path);
}

}  // namespace flotilla
