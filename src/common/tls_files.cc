#include "flotilla/common/tls_files.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/file_util.h"

namespace flotilla {

TlsFiles TlsFilesFromEnv() {
  TlsFiles files{env::GetOr(kTlsCertEnv, ""), env::GetOr(kTlsKeyEnv, ""), env::GetOr(kTlsCaEnv, "")};
  CheckTlsFiles(files);
  return files;
}

void CheckTlsFiles(const TlsFiles& files, const TlsFiles::Names& names) {
  FLOTILLA_ENFORCE(files.cert.empty() == files.key.empty(), names.cert, " and ", names.key,
                   " go together: a certificate is of no use without its private key (",
                   names.cert, "='", files.cert, "', ", names.key, "='", files.key, "')");
  if (!files.cert.empty()) ReadPemFile(files.cert, names.cert);
  if (!files.key.empty()) ReadPemFile(files.key, names.key);
  if (!files.ca.empty()) ReadPemFile(files.ca, names.ca);
}

std::string ReadPemFile(const std::string& path, std::string_view name) {
  std::string pem;
  try {
    pem = ReadFileAtMost(path, kMaxPemBytes, std::string(name));
  } catch (const Error& e) {
    FLOTILLA_THROW(InvalidArgument, name, "='", path, "': cannot read the TLS file: ", e.what());
  }
  FLOTILLA_ENFORCE(pem.find("-----BEGIN ") != std::string::npos, name, "='", path,
                   "' is not a PEM file (no -----BEGIN line); TLS files are PEM, as "
                   "`openssl req` and `openssl x509` write them");
  return pem;
}

}  // namespace flotilla
