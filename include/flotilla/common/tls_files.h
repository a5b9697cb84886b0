// The TLS material of a job: PEM files of this process's certificate, its
// private key and the certificate authority that vouches for its peers.
//
// `flotilla launch --tls_cert C --tls_key K --tls_ca A` hands the three paths
// to its children as FLOTILLA_TLS_CERT / FLOTILLA_TLS_KEY / FLOTILLA_TLS_CA;
// processes started by hand read the same variables. The parameter servers
// then serve gRPC over TLS only (mutual TLS when a CA is given: a client
// must present a certificate the CA signed) and trainers connect with TLS,
// checking the server's certificate against the CA. docs/security.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flotilla {

inline constexpr char kTlsCertEnv[] = "FLOTILLA_TLS_CERT";
inline constexpr char kTlsKeyEnv[] = "FLOTILLA_TLS_KEY";
inline constexpr char kTlsCaEnv[] = "FLOTILLA_TLS_CA";
// Largest PEM file read (a certificate chain is a few KiB).
inline constexpr uint64_t kMaxPemBytes = 1u << 20;

// Paths; empty = not given. TLS is on when any is given.
struct TlsFiles {
  std::string cert;  // this process's certificate chain (PEM)
  std::string key;   // its private key (PEM)
  std::string ca;    // the CA certificates peers are checked against (PEM)

  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
  // What the paths are called in error messages: the variables by default,
  // the launcher's flags when it checks them.
  struct Names {
    std::string_view cert = kTlsCertEnv, key = kTlsKeyEnv, ca = kTlsCaEnv;
  };
};

// FLOTILLA_TLS_CERT / _KEY / _CA, checked (CheckTlsFiles).
TlsFiles TlsFilesFromEnv();

// Throws InvalidArgument naming the flag or variable (and the path) when
// only one of cert and key is given, or a given file cannot be read or holds
// no PEM block.
void CheckTlsFiles(const TlsFiles& files, const TlsFiles::Names& names = {});

// The contents of the PEM file at `path`, which `name` (a flag or variable)
// gave. Throws InvalidArgument naming both when it cannot be read, is larger
// than kMaxPemBytes or holds no "-----BEGIN" line.
std::string ReadPemFile(const std::string& path, std::string_view name);

}  // namespace flotilla
