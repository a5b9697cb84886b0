// The master rendezvous (see rendezvous.h): `--master HOST:PORT --nnodes N`
// without --ips. The node that has HOST hosts the store and is node 0; the
// others take the next free node index (or --rank) and publish their address.
#include <algorithm>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "launch/elastic/elastic_rendezvous.h"
#include "launch/net_util.h"
#include "launch/store_rendezvous.h"

namespace flotilla::launch {

namespace {

constexpr char kTicketKey[] = "node_ticket";

std::string HostKey(int node) { return "host/" + std::to_string(node); }
std::string CountKey(int node) { return "ps_count/" + std::to_string(node); }
std::string ClaimKey(int node) { return "claim/" + std::to_string(node); }

class MasterRendezvous : public StoreRendezvous {
 public:
  explicit MasterRendezvous(const LaunchOptions& options);
  World Join(const NodePlanner& plan_node) override;

 private:
  int TakeIndex(comm::Store& store, bool hosting);
  std::vector<std::string> ExchangeHosts(comm::Store& store, int index, const std::string& host,
                                         Clock::time_point deadline);
  std::vector<PsCount> ExchangeCounts(comm::Store& store, int index, Clock::time_point deadline);

  HostPort master_;
  RunMode mode_;
  PsCount ps_count_;  // this node's --server_num/--worker_num (ps mode)
  int nnodes_;
  int rank_;
  std::string host_;  // --host, resolved; "" = detect
};

MasterRendezvous::MasterRendezvous(const LaunchOptions& o)
    : StoreRendezvous(o),
      mode_(SelectRunMode(o)),
      ps_count_{o.server_num, o.worker_num},
      nnodes_(o.nnodes),
      rank_(o.node_rank) {
  FLOTILLA_ENFORCE(o.servers.empty() && o.workers.empty(), "--master and --servers/--workers "
                   "both name the nodes; pass one (with --master, each node runs its "
                   "--server_num servers and --worker_num workers)");
  FLOTILLA_ENFORCE(o.heter_workers.empty() && o.heter_worker_num == 0, "heter workers across "
                   "nodes are listed with --servers/--workers/--heter_workers, not with --master");
  FLOTILLA_ENFORCE(o.nnodes >= 1, "--master needs the number of nodes: --nnodes (or "
                   "PADDLE_NNODES)");
  FLOTILLA_ENFORCE(o.ips == "127.0.0.1", "--master and --ips both name the nodes; pass one");
  FLOTILLA_ENFORCE(o.node_rank < o.nnodes, "--rank ", o.node_rank, " must be below --nnodes ",
                   o.nnodes);
  master_ = ParseHostPort(o.master, "--master");
  master_.host = ResolveIpv4(master_.host, "--master");
  FLOTILLA_ENFORCE(master_.port > 0, "--master needs a port: HOST:PORT");
  if (!o.host.empty()) host_ = ResolveIpv4(o.host, "--host");
}

// Node 0 is the node that hosts the store; the others draw tickets 1, 2, ...
// unless they were given --rank.
int MasterRendezvous::TakeIndex(comm::Store& store, bool hosting) {
  int index = hosting ? 0 : rank_;
  if (index < 0) index = static_cast<int>(store.add(kTicketKey, 1));
  FLOTILLA_CHECK(index < nnodes_, InvalidArgument, "more nodes joined the job at ",
                 master_.ToString(), " than --nnodes=", nnodes_);
  FLOTILLA_CHECK(store.add(ClaimKey(index), 1) == 1, InvalidArgument, "node rank ", index,
                 " of the job at ", master_.ToString(), " is taken by another node; give "
                 "every node a different --rank, or none");
  return index;
}

std::vector<std::string> MasterRendezvous::ExchangeHosts(comm::Store& store, int index,
                                                         const std::string& host,
                                                         Clock::time_point deadline) {
  store.setString(HostKey(index), host);
  std::vector<std::string> names;
  for (int i = 0; i < nnodes_; ++i) names.push_back(StrCat("rank ", i));
  WaitForNodes(store, names, "join the job", HostKey, deadline);
  std::vector<std::string> hosts;
  for (int i = 0; i < nnodes_; ++i) hosts.push_back(store.getString(HostKey(i)));
  return hosts;
}

// Parameter-server jobs: every node's --server_num/--worker_num.
std::vector<PsCount> MasterRendezvous::ExchangeCounts(comm::Store& store, int index,
                                                      Clock::time_point deadline) {
  store.setString(CountKey(index), StrCat(ps_count_.servers, ",", ps_count_.workers));
  std::vector<std::string> names;
  for (int i = 0; i < nnodes_; ++i) names.push_back(StrCat("rank ", i));
  WaitForNodes(store, names, "publish its servers and workers", CountKey, deadline);
  std::vector<PsCount> counts;
  for (int i = 0; i < nnodes_; ++i) {
    const auto parts = Split(store.getString(CountKey(i)), ',');
    FLOTILLA_CHECK(parts.size() == 2, Corruption, "node ", i, " published a malformed count");
    counts.push_back({static_cast<int>(ParseInt(parts[0], "a node's server count")),
                      static_cast<int>(ParseInt(parts[1], "a node's worker count"))});
  }
  return counts;
}

World MasterRendezvous::Join(const NodePlanner& plan_node) {
  const auto deadline = Clock::now() + timeout_;
  const auto mine = LocalAddresses();
  const bool hosting = (rank_ <= 0) &&
                       std::find(mine.begin(), mine.end(), master_.host) != mine.end();
  const std::string host =
      !host_.empty() ? host_ : hosting ? master_.host : RouteAddressTo(master_.host, master_.port);
  const std::string address =
      hosting ? HostStore(master_.host, master_.port) : master_.ToString();
  if (nnodes_ == 1) {
    FLOTILLA_ENFORCE(hosting, "--nnodes 1 with --master ", master_.ToString(),
                     ": this machine does not have the address ", master_.host);
    NodeLayout layout{{host}, 0, {}};
    if (mode_ == RunMode::kPs) layout.ps_counts = {ps_count_};
    return SingleNode(plan_node(layout), address);
  }
  auto store = Connect(StrCat("this node (", host, ")"), address, timeout_);
  const int index = TakeIndex(*store, hosting);
  NodeLayout layout{ExchangeHosts(*store, index, host, deadline), index, {}};
  if (mode_ == RunMode::kPs) layout.ps_counts = ExchangeCounts(*store, index, deadline);
  const NodePlan plan = plan_node(layout);
  return Exchange(plan, address, std::move(store), deadline);
}

}  // namespace

std::unique_ptr<Rendezvous> MakeMasterRendezvous(const LaunchOptions& options) {
  return std::make_unique<MasterRendezvous>(options);
}

std::unique_ptr<Rendezvous> MakeRendezvous(const LaunchOptions& options) {
  if (!options.elastic_server.empty()) return MakeElasticRendezvous(options);
  return options.master.empty() ? MakeStaticRendezvous(options) : MakeMasterRendezvous(options);
}

}  // namespace flotilla::launch
