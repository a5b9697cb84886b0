#include "launch/elastic/etcd_client.h"

#include <charconv>

#include "flotilla/common/enforce.h"

namespace flotilla::launch {

namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The gateway writes int64 fields as strings and leaves out zero values.
// Replies come from the network: a field of the wrong type throws
// Unavailable (like a lost reply), never a parser's own exception.
int64_t Int(const json& j, const char* name) {
  if (!j.is_object()) return 0;
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  int64_t v = 0;
  const std::string* text = it->get_ptr<const std::string*>();
  const auto [end, ec] = text ? std::from_chars(text->data(), text->data() + text->size(), v)
                              : std::from_chars_result{nullptr, std::errc::invalid_argument};
  FLOTILLA_CHECK(ec == std::errc() && end == text->data() + text->size(), Unavailable,
                 "etcd sent a malformed integer field '", name, "': ", it->dump().substr(0, 80));
  return v;
}

std::string Text(const json& j, const char* name) {
  if (!j.is_object()) return "";
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return "";
  FLOTILLA_CHECK(it->is_string(), Unavailable, "etcd sent a non-string field '", name, "'");
  return it->get<std::string>();
}

// j[name] when it is an object (else an empty one), or an array (else empty).
json Object(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name) || !j[name].is_object()) return json::object();
  return j[name];
}
json Array(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name) || !j[name].is_array()) return json::array();
  return j[name];
}

KeyValue ParseKv(const json& j) {
  KeyValue kv;
  kv.key = EtcdBase64Decode(Text(j, "key"));
  kv.value = EtcdBase64Decode(Text(j, "value"));
  kv.create_revision = Int(j, "create_revision");
  kv.mod_revision = Int(j, "mod_revision");
  kv.lease = Int(j, "lease");
  return kv;
}

json PutRequest(const std::string& key, const std::string& value, int64_t lease) {
  json r = {{"key", EtcdBase64Encode(key)}, {"value", EtcdBase64Encode(value)}};
  if (lease != 0) r["lease"] = std::to_string(lease);
  return r;
}

json RangeRequest(const std::string& prefix) {
  return {{"key", EtcdBase64Encode(prefix)}, {"range_end", EtcdBase64Encode(PrefixRangeEnd(prefix))}};
}

// An error reply of the gateway: {"error": "...", "message": "...", "code": N}.
std::string ErrorText(const json& reply) {
  if (reply.is_object() && reply.contains("message") && reply["message"].is_string()) {
    return reply["message"];
  }
  if (reply.is_object() && reply.contains("error")) {
    const json& e = reply["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return e["message"].get<std::string>();
    }
  }
  return reply.dump().substr(0, 200);
}

}  // namespace

std::string EtcdBase64Encode(const std::string& bytes) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) out += kAlphabet[(acc >> (bits -= 6)) & 63];
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  while (out.size() % 4 != 0) out += '=';
  return out;
}

std::string EtcdBase64Decode(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const char* at = std::char_traits<char>::find(kAlphabet, 64, c);
    if (at == nullptr) continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(at - kAlphabet);
    bits += 6;
    if (bits >= 8) out += static_cast<char>((acc >> (bits -= 8)) & 0xff);
  }
  return out;
}

std::string PrefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // every key
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

std::vector<HostPort> ParseEtcdEndpoints(const std::string& text) {
  std::vector<HostPort> out;
  for (std::string item : Split(text, ',')) {
    item = Trim(item);
    for (const char* scheme : {"etcd://", "http://"}) {
      if (StartsWith(item, scheme)) item = item.substr(std::string(scheme).size());
    }
    while (!item.empty() && item.back() == '/') item.pop_back();
    out.push_back(ParseHostPort(item, "--elastic_server"));
  }
  FLOTILLA_ENFORCE(!out.empty(), "--elastic_server '", text,
                   "' names no etcd endpoint; expected etcd://HOST:PORT[,HOST:PORT...]");
  return out;
}

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  FLOTILLA_ENFORCE(!options_.endpoints.empty(), "an etcd client needs at least one endpoint");
}

std::string EtcdClient::endpoints() const {
  std::vector<std::string> all;
  for (const auto& e : options_.endpoints) all.push_back(e.ToString());
  return Join(all, ",");
}

json EtcdClient::Call(const std::string& path, const json& request) {
  const size_t n = options_.endpoints.size();
  const size_t first = current_.load();
  std::vector<std::string> errors;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (first + i) % n;
    const HostPort& ep = options_.endpoints[index];
    HttpResponse r;
    try {
      r = HttpPost(ep.host, ep.port, path, request.dump(), options_.timeout);
    } catch (const Error& e) {
      errors.push_back(e.what());
      continue;
    }
    current_ = index;
    json reply = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    FLOTILLA_CHECK(!reply.is_discarded(), Unavailable, "etcd at ", ep.ToString(), " answered ",
                   path, " with HTTP ", r.status, " and no JSON: ", r.body.substr(0, 200));
    FLOTILLA_CHECK(reply.is_object(), Unavailable, "etcd at ", ep.ToString(), " answered ", path,
                   " with JSON that is not an object: ", r.body.substr(0, 200));
    FLOTILLA_CHECK(r.status == 200 && !reply.contains("error"), Internal, "etcd at ",
                   ep.ToString(), " refused ", path, " (HTTP ", r.status, "): ", ErrorText(reply));
    return reply.contains("result") ? Object(reply, "result") : reply;
  }
  FLOTILLA_THROW(Unavailable, "etcd is unreachable at ", endpoints(), " (tried every endpoint: ",
                 Join(errors, "; "), ")");
}

void EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  Call("/v3/kv/put", PutRequest(key, value, lease));
}

std::optional<KeyValue> EtcdClient::Get(const std::string& key) {
  json kvs = Array(Call("/v3/kv/range", {{"key", EtcdBase64Encode(key)}}), "kvs");
  if (kvs.empty()) return std::nullopt;
  return ParseKv(kvs[0]);
}

RangeResult EtcdClient::GetPrefix(const std::string& prefix) {
  json reply = Call("/v3/kv/range", RangeRequest(prefix));
  RangeResult r;
  r.revision = Int(Object(reply, "header"), "revision");
  for (const auto& kv : Array(reply, "kvs")) r.kvs.push_back(ParseKv(kv));
  return r;
}

int64_t EtcdClient::Delete(const std::string& key) {
  return Int(Call("/v3/kv/deleterange", {{"key", EtcdBase64Encode(key)}}), "deleted");
}

int64_t EtcdClient::DeletePrefix(const std::string& prefix) {
  return Int(Call("/v3/kv/deleterange", RangeRequest(prefix)), "deleted");
}

int64_t EtcdClient::GrantLease(int64_t ttl_seconds) {
  json reply = Call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds)}});
  const int64_t id = Int(reply, "ID");
  FLOTILLA_CHECK(id != 0, Internal, "etcd at ", endpoints(), " granted no lease: ", reply.dump());
  return id;
}

int64_t EtcdClient::KeepAlive(int64_t lease) {
  // A one-message stream: the gateway answers the request and ends.
  return Int(Call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}}), "TTL");
}

void EtcdClient::RevokeLease(int64_t lease) {
  try {
    Call("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
  } catch (const Internal& e) {
    if (std::string(e.what()).find("not found") == std::string::npos) throw;
  }
}

bool EtcdClient::PutIfModRevision(const std::string& key, const std::string& value,
                                  int64_t mod_revision, int64_t lease) {
  json compare = {{"key", EtcdBase64Encode(key)}, {"target", "MOD"}, {"result", "EQUAL"},
                  {"mod_revision", std::to_string(mod_revision)}};
  json request = {{"compare", json::array({compare})},
                  {"success", json::array({{{"request_put", PutRequest(key, value, lease)}}})}};
  const json reply = Call("/v3/kv/txn", request);
  return reply.contains("succeeded") && reply["succeeded"].is_boolean() &&
         reply["succeeded"].get<bool>();
}

std::unique_ptr<EtcdWatch> EtcdClient::WatchPrefix(const std::string& prefix,
                                                   int64_t start_revision) {
  json create = RangeRequest(prefix);
  if (start_revision > 0) create["start_revision"] = std::to_string(start_revision);
  const std::string body = json{{"create_request", create}}.dump();
  std::vector<std::string> errors;
  for (size_t i = 0; i < options_.endpoints.size(); ++i) {
    const HostPort& ep = options_.endpoints[(current_.load() + i) % options_.endpoints.size()];
    try {
      const auto deadline = HttpClock::now() + options_.timeout;
      auto conn = std::make_unique<HttpConnection>(ep.host, ep.port, deadline);
      const int status = conn->Post("/v3/watch", body, deadline);
      FLOTILLA_CHECK(status == 200, Unavailable, "etcd at ", ep.ToString(),
                     " refused a watch with HTTP ", status);
      auto watch = std::make_unique<EtcdWatch>(std::move(conn), "watch on " + prefix);
      watch->Next(options_.timeout);  // the "created" message
      return watch;
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  }
  FLOTILLA_THROW(Unavailable, "etcd is unreachable at ", endpoints(), " (watch: ",
                 Join(errors, "; "), ")");
}

EtcdWatch::EtcdWatch(std::unique_ptr<HttpConnection> connection, std::string what)
    : connection_(std::move(connection)), what_(std::move(what)) {}

std::vector<WatchEvent> EtcdWatch::Parse(const std::string& line) {
  json message = json::parse(line, nullptr, false);
  FLOTILLA_CHECK(!message.is_discarded(), Unavailable, what_, " at ", connection_->address(),
                 " sent a malformed message: ", line.substr(0, 200));
  FLOTILLA_CHECK(message.is_object() && !message.contains("error"), Unavailable, what_, " at ",
                 connection_->address(), " failed: ", ErrorText(message));
  const json result = Object(message, "result");
  const bool canceled = result.contains("canceled") && result["canceled"] == true;
  FLOTILLA_CHECK(!canceled, Unavailable, what_, " at ", connection_->address(),
                 " was cancelled by etcd: ", Text(result, "cancel_reason"));
  std::vector<WatchEvent> events;
  for (const auto& e : Array(result, "events")) {
    events.push_back({Text(e, "type") == "DELETE", ParseKv(Object(e, "kv"))});
  }
  return events;
}

std::vector<WatchEvent> EtcdWatch::Next(std::chrono::milliseconds timeout) {
  const auto deadline = HttpClock::now() + timeout;
  std::vector<WatchEvent> events;
  while (true) {
    size_t eol;
    while ((eol = pending_.find('\n')) != std::string::npos) {
      const std::string line = pending_.substr(0, eol);
      pending_.erase(0, eol + 1);
      if (Trim(line).empty()) continue;
      auto more = Parse(line);
      events.insert(events.end(), more.begin(), more.end());
      if (events.empty()) return events;  // an empty message (created, progress)
    }
    if (!events.empty()) return events;
    auto piece = connection_->NextPiece(deadline);
    FLOTILLA_CHECK(piece.has_value(), Unavailable, what_, " at ", connection_->address(),
                   " ended (etcd stopped?)");
    if (piece->empty()) return events;  // timeout
    pending_ += *piece;
  }
}

}  // namespace flotilla::launch
