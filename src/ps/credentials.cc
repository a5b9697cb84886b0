#include "ps/credentials.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  FLOTILLA_ENFORCE(!tls.cert.empty() && !tls.key.empty(), "a parameter server with TLS needs its "
                   "certificate and key: set ", kTlsCertEnv, " and ", kTlsKeyEnv,
                   " (flotilla launch --tls_cert, --tls_key)");
  grpc::SslServerCredentialsOptions options(
      tls.ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                     : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_key_cert_pairs.push_back(
      {ReadPemFile(tls.key, kTlsKeyEnv), ReadPemFile(tls.cert, kTlsCertEnv)});
  if (!tls.ca.empty()) options.pem_root_certs = ReadPemFile(tls.ca, kTlsCaEnv);
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  if (!tls.ca.empty()) options.pem_root_certs = ReadPemFile(tls.ca, kTlsCaEnv);
  if (!tls.cert.empty()) {
    options.pem_cert_chain = ReadPemFile(tls.cert, kTlsCertEnv);
    options.pem_private_key = ReadPemFile(tls.key, kTlsKeyEnv);
  }
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint, const TlsFiles& tls, int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(endpoint, ChannelCredentials(tls), args);
}

}  // namespace flotilla::ps
