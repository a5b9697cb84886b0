#include "launch/store_rendezvous.h"

#include <algorithm>
#include <thread>

#include "flotilla/comm/prefix_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "launch/job_channel.h"
#include "launch/launcher_secret.h"

namespace flotilla::launch {

namespace {
constexpr char kPrefix[] = "flotilla/launch";
constexpr char kFailedKey[] = "failed";

std::string Seconds(std::chrono::milliseconds ms) { return StrCat(ms.count() / 1000.0, " s"); }
}  // namespace

std::string NodeKey(int node) { return "node/" + std::to_string(node); }
std::string ReadyKey(int node) { return "ready/" + std::to_string(node); }

std::vector<std::string> NodeNames(const std::vector<std::string>& hosts) {
  std::vector<std::string> names;
  for (size_t i = 0; i < hosts.size(); ++i) names.push_back(StrCat(i, " (", hosts[i], ")"));
  return names;
}

StoreRendezvous::StoreRendezvous(const LaunchOptions& options)
    : timeout_(options.rendezvous_timeout),
      node_timeout_(options.node_timeout),
      token_(options.job_secret),
      tls_(JobTlsFiles(options)) {}

std::string StoreRendezvous::HostStore(const std::string& host, int port) {
  try {
    comm::TCPStoreServerOptions server_options;
    server_options.token = token_;
    server_options.tls = tls_;
    server_ = comm::TCPStoreServer::Start(host, port, std::move(server_options));
  } catch (const Error& e) {
    FLOTILLA_THROW(Unavailable, "node 0 cannot host the rendezvous store at ", host, ":", port,
                   " (set another --master_port): ", e.what());
  }
  return StrCat(host, ":", server_->port());
}

std::shared_ptr<comm::Store> StoreRendezvous::Connect(const std::string& who,
                                                      const std::string& address,
                                                      milliseconds connect_timeout) {
  comm::TCPStoreOptions options;
  options.timeout = timeout_;
  options.connect_timeout = connect_timeout;
  options.token = token_;
  options.tls = tls_;
  try {
    return std::make_shared<comm::PrefixStore>(kPrefix, comm::ConnectStore(address, options));
  } catch (const Error& e) {
    FLOTILLA_THROW(Unavailable, who, " could not reach node 0's rendezvous store at ", address,
                   " within ", Seconds(connect_timeout), ": ", e.what(),
                   " — is the launcher running on node 0 with the same options, and is the "
                   "port open?");
  }
}

void StoreRendezvous::PublishFailure(comm::Store& store, const std::string& who,
                                     const std::string& what) {
  try {
    store.setString(kFailedKey, StrCat(who, ": ", what));
  } catch (const std::exception&) {
  }
}

void StoreRendezvous::WaitForNodes(comm::Store& store, const std::vector<std::string>& names,
                                   const char* stage, std::string (*key)(int),
                                   Clock::time_point deadline) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < names.size(); ++i) keys.push_back(key(static_cast<int>(i)));
  while (true) {
    if (store.check({kFailedKey})) {
      FLOTILLA_THROW(InvalidArgument, "the job cannot start: ", store.getString(kFailedKey));
    }
    if (store.check(keys)) return;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!store.check({keys[i]})) missing.push_back(names[i]);
  }
  FLOTILLA_THROW(DeadlineExceeded, "nodes [", flotilla::Join(missing, ", "), "] did not ", stage,
                 " within ", Seconds(timeout_),
                 "; start the same `flotilla launch` command on every node");
}

World StoreRendezvous::SingleNode(const NodePlan& plan, const std::string& address) {
  World world;
  world.spec = MergeNodePlans(plan, {plan.local});
  world.spec.master = address;
  world.channel = std::make_unique<LocalChannel>();
  return world;
}

World StoreRendezvous::Exchange(const NodePlan& plan, const std::string& address,
                                std::shared_ptr<comm::Store> store, Clock::time_point deadline) {
  const std::string me = NodeNames(plan.nodes)[plan.node_index];
  store->setString(NodeKey(plan.node_index), EncodeProcesses(plan.local));
  WaitForNodes(*store, NodeNames(plan.nodes), "join the rendezvous", NodeKey, deadline);
  std::vector<std::vector<ProcessSpec>> nodes;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    nodes.push_back(DecodeProcesses(store->getString(NodeKey(static_cast<int>(i)))));
  }
  World world;
  try {
    world.spec = MergeNodePlans(plan, nodes);
  } catch (const Error& e) {
    PublishFailure(*store, "node " + me, e.what());
    throw;
  }
  world.spec.master = address;
  // Start together: nobody starts processes until every node has agreed.
  store->setString(ReadyKey(plan.node_index), "1");
  WaitForNodes(*store, NodeNames(plan.nodes), "agree on the world", ReadyKey, deadline);
  StoreChannel::Options channel;
  channel.node = plan.node_index;
  channel.nnodes = static_cast<int>(plan.nodes.size());
  channel.store_address = address;
  channel.nodes = plan.nodes;
  channel.node_timeout = node_timeout_;
  channel.heartbeat = std::min(milliseconds(1000), node_timeout_ / 4);
  world.channel = std::make_unique<StoreChannel>(
      channel, Connect("node " + me, address, milliseconds(2000)), store);
  return world;
}

}  // namespace flotilla::launch
