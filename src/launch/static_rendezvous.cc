// The fixed-size rendezvous (see rendezvous.h).
#include <algorithm>
#include <chrono>
#include <thread>

#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "launch/job_channel.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kPrefix[] = "flotilla/launch";

std::string NodeKey(int node) { return "node/" + std::to_string(node); }
std::string ReadyKey(int node) { return "ready/" + std::to_string(node); }

std::string Seconds(milliseconds ms) { return StrCat(ms.count() / 1000.0, " s"); }

class StaticRendezvous : public Rendezvous {
 public:
  explicit StaticRendezvous(const LaunchOptions& options)
      : timeout_(options.rendezvous_timeout), node_timeout_(options.node_timeout) {}

  World Join(const NodePlan& plan) override;

 private:
  std::string HostStore(const NodePlan& plan);
  std::shared_ptr<comm::Store> Connect(const NodePlan& plan, const std::string& address,
                                       milliseconds connect_timeout);
  void WaitForNodes(comm::Store& store, const NodePlan& plan, const char* stage,
                    std::string (*key)(int), Clock::time_point deadline);
  void PublishFailure(comm::Store& store, const NodePlan& plan, const std::string& what);

  milliseconds timeout_;
  milliseconds node_timeout_;
  std::unique_ptr<comm::TCPStoreServer> server_;  // node 0 only; lives as long as the job
};

std::string StaticRendezvous::HostStore(const NodePlan& plan) {
  try {
    server_ = comm::TCPStoreServer::Start(plan.master_host, plan.master_port);
  } catch (const Error& e) {
    FLOTILLA_THROW(Unavailable, "node 0 cannot host the rendezvous store at ", plan.master_host,
                   ":", plan.master_port, " (set another --master_port): ", e.what());
  }
  return StrCat(plan.master_host, ":", server_->port());
}

std::shared_ptr<comm::Store> StaticRendezvous::Connect(const NodePlan& plan,
                                                       const std::string& address,
                                                       milliseconds connect_timeout) {
  comm::TCPStoreOptions options;
  options.timeout = timeout_;
  options.connect_timeout = connect_timeout;
  try {
    return std::make_shared<comm::PrefixStore>(kPrefix, comm::ConnectStore(address, options));
  } catch (const Error& e) {
    FLOTILLA_THROW(Unavailable, "node ", plan.node_index, " (", plan.nodes[plan.node_index],
                   ") could not reach node 0's rendezvous store at ", address, " within ",
                   Seconds(connect_timeout), ": ", e.what(),
                   " — is the launcher running on ", plan.nodes[0],
                   " with the same --ips, and is the port open?");
  }
}

void StaticRendezvous::PublishFailure(comm::Store& store, const NodePlan& plan,
                                      const std::string& what) {
  try {
    store.setString("failed", StrCat("node ", plan.node_index, " (", plan.nodes[plan.node_index],
                                     "): ", what));
  } catch (const std::exception&) {
  }
}

// Waits for every node's key, stopping early when a node reports that it
// failed to join. The timeout names the missing nodes.
void StaticRendezvous::WaitForNodes(comm::Store& store, const NodePlan& plan, const char* stage,
                                    std::string (*key)(int), Clock::time_point deadline) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < plan.nodes.size(); ++i) keys.push_back(key(static_cast<int>(i)));
  while (true) {
    if (store.check({"failed"})) {
      FLOTILLA_THROW(InvalidArgument, "the job cannot start: ", store.getString("failed"));
    }
    if (store.check(keys)) return;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    if (!store.check({keys[i]})) missing.push_back(StrCat(i, " (", plan.nodes[i], ")"));
  }
  FLOTILLA_THROW(DeadlineExceeded, "nodes [", flotilla::Join(missing, ", "), "] did not ", stage,
                 " within ", Seconds(timeout_),
                 "; start the same `flotilla launch` command on every node of --ips");
}

World StaticRendezvous::Join(const NodePlan& plan) {
  const auto deadline = Clock::now() + timeout_;
  std::string address =
      plan.node_index == 0 ? HostStore(plan) : StrCat(plan.master_host, ":", plan.master_port);
  World world;
  if (plan.nodes.size() == 1) {
    world.spec = MergeNodePlans(plan, {plan.local});
    world.spec.master = address;
    world.channel = std::make_unique<LocalChannel>();
    return world;
  }
  auto store = Connect(plan, address, timeout_);
  store->setString(NodeKey(plan.node_index), EncodeProcesses(plan.local));
  WaitForNodes(*store, plan, "join the rendezvous", NodeKey, deadline);
  std::vector<std::vector<ProcessSpec>> nodes;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    nodes.push_back(DecodeProcesses(store->getString(NodeKey(static_cast<int>(i)))));
  }
  try {
    world.spec = MergeNodePlans(plan, nodes);
  } catch (const Error& e) {
    PublishFailure(*store, plan, e.what());
    throw;
  }
  world.spec.master = address;
  // Start together: nobody starts processes until every node has agreed.
  store->setString(ReadyKey(plan.node_index), "1");
  WaitForNodes(*store, plan, "agree on the world", ReadyKey, deadline);
  StoreChannel::Options channel;
  channel.node = plan.node_index;
  channel.nnodes = static_cast<int>(plan.nodes.size());
  channel.store_address = address;
  channel.nodes = plan.nodes;
  channel.node_timeout = node_timeout_;
  channel.heartbeat = std::min(milliseconds(1000), node_timeout_ / 4);
  world.channel = std::make_unique<StoreChannel>(channel, Connect(plan, address, milliseconds(2000)),
                                                 store);
  return world;
}

}  // namespace

std::unique_ptr<Rendezvous> MakeStaticRendezvous(const LaunchOptions& options) {
  return std::make_unique<StaticRendezvous>(options);
}

}  // namespace flotilla::launch
