// gRPC credentials of the parameter servers and their clients from a job's
// TLS files (flotilla/common/tls_files.h), and the clients' channels.
// Private to ps.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>
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

// A client's channel to `endpoint` (ChannelCredentials(tls)), carrying
// messages of up to `max_message_bytes` each way, and reconnecting quickly:
// a server that restarts is found again within about a second.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint, const TlsFiles& tls, int max_message_bytes);

}  // namespace flotilla::ps
