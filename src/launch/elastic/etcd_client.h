// EtcdClient: the parts of the etcd v3 API an elastic job needs — keys,
// leases, transactions and watches — spoken through etcd's gRPC JSON gateway
// (HTTP/1.1 POST /v3/..., keys and values base64) so no generated gRPC code
// or etcdctl is needed.
//
// Several endpoints may be given (an etcd cluster's members): a call goes to
// the endpoint that last answered and fails over to the others in turn; when
// none answers it throws Unavailable naming every address it tried. etcd's
// own errors (bad request, lease not found) throw Internal with etcd's message.
// Each call uses its own connection, so an EtcdClient is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/common/strings.h"
#include "launch/elastic/http_client.h"

namespace flotilla::launch {

// "etcd://h1:p1,h2:p2", "http://h:p" or "h1:p1,h2:p2". Throws InvalidArgument
// naming the text when an endpoint is malformed or none is given.
std::vector<HostPort> ParseEtcdEndpoints(const std::string& text);

struct EtcdOptions {
  std::vector<HostPort> endpoints;
  std::chrono::milliseconds timeout{3000};  // per request and endpoint
};

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // the store's revision when read
};

struct WatchEvent {
  bool deleted = false;  // DELETE (or lease expiry) rather than PUT
  KeyValue kv;
};

class EtcdWatch;

class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);

  // Puts key=value, attached to `lease` when non-zero.
  void Put(const std::string& key, const std::string& value, int64_t lease = 0);
  std::optional<KeyValue> Get(const std::string& key);
  // Every key starting with `prefix`, sorted by key.
  RangeResult GetPrefix(const std::string& prefix);
  // Returns the number of keys deleted.
  int64_t Delete(const std::string& key);
  int64_t DeletePrefix(const std::string& prefix);

  // A lease of `ttl` seconds; returns its id.
  int64_t GrantLease(int64_t ttl_seconds);
  // Renews the lease; returns its TTL, or 0 when it has already expired.
  int64_t KeepAlive(int64_t lease);
  // Revokes the lease (its keys are deleted). A lease already gone is fine.
  void RevokeLease(int64_t lease);

  // Transactions: the put happens only when the key's mod_revision equals
  // `mod_revision` (0: only when the key does not exist). True when it did.
  bool PutIfModRevision(const std::string& key, const std::string& value, int64_t mod_revision,
                        int64_t lease = 0);
  bool PutIfAbsent(const std::string& key, const std::string& value, int64_t lease = 0) {
    return PutIfModRevision(key, value, 0, lease);
  }

  // A stream of the changes to keys under `prefix` from `start_revision` on
  // (0: from now). Blocks until etcd confirmed the watch.
  std::unique_ptr<EtcdWatch> WatchPrefix(const std::string& prefix, int64_t start_revision = 0);

  // The raw gateway call: POST `path` with `request`; returns the reply.
  nlohmann::json Call(const std::string& path, const nlohmann::json& request);

  std::string endpoints() const;

 private:
  EtcdOptions options_;
  std::atomic<size_t> current_{0};  // endpoint that answered last
};

// One watch stream (see EtcdClient::WatchPrefix). Not thread-safe.
class EtcdWatch {
 public:
  EtcdWatch(std::unique_ptr<HttpConnection> connection, std::string what);
  // The events that arrive within `timeout` (empty if none). Throws
  // Unavailable when the stream breaks (etcd gone) or etcd cancels the watch.
  std::vector<WatchEvent> Next(std::chrono::milliseconds timeout);

 private:
  std::vector<WatchEvent> Parse(const std::string& line);

  std::unique_ptr<HttpConnection> connection_;
  std::string what_;
  std::string pending_;  // bytes of a message not yet complete
};

// Base64 (standard alphabet, padded), as the gateway encodes bytes.
std::string EtcdBase64Encode(const std::string& bytes);
std::string EtcdBase64Decode(const std::string& text);

// The smallest key greater than every key that starts with `prefix`.
std::string PrefixRangeEnd(const std::string& prefix);

}  // namespace flotilla::launch
