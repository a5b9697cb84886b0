// gRPC credentials of the parameter servers and their clients from a job's
// TLS files (flotilla/common/tls_files.h). Private to ps.
#pragma once

#include <memory>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "flotilla/common/tls_files.h"

namespace flotilla::ps {

// Plaintext when TLS is off. With TLS the server presents cert/key (both
// required: throws InvalidArgument naming FLOTILLA_TLS_CERT/KEY otherwise)
// and, when a CA is given, demands a client certificate the CA signed.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsFiles& tls);

// Plaintext when TLS is off. With TLS the client checks the server's
// certificate against the CA (the system's roots when none is given) and
// presents cert/key when given.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const TlsFiles& tls);

}  // namespace flotilla::ps
