// NewProcessGroup: rendezvous, backend choice and construction.
#include <cstdlib>
#include <set>

#include "comm/gloo/gloo_backend.h"
#include "comm/hierarchical/hierarchical_backend.h"
#include "comm/rendezvous.h"
#include "comm/shm/shm_backend.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/process_group.h"
#include "flotilla/common/enforce.h"

namespace flotilla::comm {
namespace {

std::string ChooseBackend(const std::string& requested, const std::vector<PeerInfo>& peers) {
  std::set<std::string> hosts;
  for (const auto& p : peers) hosts.insert(p.host_id);
  if (requested != "auto") return requested;
  if (hosts.size() == 1) return "shm";
  if (hosts.size() == peers.size()) return "gloo";
  return "hierarchical";
}

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// Everything a backend builder needs about the group.
struct GroupContext {
  std::shared_ptr<Store> store;
  int rank;
  int size;
  const ProcessGroupOptions& options;
  std::vector<PeerInfo> peers;
  std::shared_ptr<gloo::transport::Device> device;  // created on first need

  std::shared_ptr<gloo::transport::Device> Device() {
    if (device) return device;
    std::string iface = options.gloo_interface.empty() ? EnvOr("FLOTILLA_GLOO_IFNAME", "")
                                                       : options.gloo_interface;
    std::string host = options.gloo_hostname.empty() ? EnvOr("FLOTILLA_GLOO_HOSTNAME", "")
                                                     : options.gloo_hostname;
    // The launcher exports this process's host address as POD_IP.
    if (iface.empty() && host.empty()) host = EnvOr("POD_IP", "");
    if (iface.empty() && host.empty()) {
      bool one_host = true;
      for (const auto& p : peers) one_host &= p.host_id == peers[rank].host_id;
      host = one_host ? "127.0.0.1" : LocalHostname();
    }
    device = gloo_backend::CreateDevice(iface, host);
    return device;
  }
};

std::unique_ptr<Backend> MakeShm(Store& store, int rank, int size, const ProcessGroupOptions& o) {
  return std::make_unique<shm::ShmBackend>(store, rank, size,
                                           shm::ShmOptions{o.timeout, o.stall_warning_after});
}

// A gloo backend over the ranks `members` (global ranks, ascending).
std::unique_ptr<Backend> MakeGloo(GroupContext& g, std::shared_ptr<Store> store,
                                  const std::vector<int>& members) {
  gloo_backend::GlooOptions o{g.options.timeout, {}, g.peers[g.rank].host_id};
  int sub_rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    o.peers.push_back(g.peers[members[i]]);
    if (members[i] == g.rank) sub_rank = int(i);
  }
  return std::make_unique<gloo_backend::GlooBackend>(std::move(store), sub_rank,
                                                     int(members.size()), g.Device(), o);
}

std::unique_ptr<Backend> MakeHierarchical(GroupContext& g, std::shared_ptr<Store> store) {
  const std::string& host = g.peers[g.rank].host_id;
  std::vector<int> local, leaders, all;
  std::set<std::string> seen;
  for (int r = 0; r < g.size; ++r) {
    all.push_back(r);
    if (g.peers[r].host_id == host) local.push_back(r);
    if (seen.insert(g.peers[r].host_id).second) leaders.push_back(r);
  }
  const int local_rank = int(std::find(local.begin(), local.end(), g.rank) - local.begin());
  // Host ids may hold any characters; the leader's rank names the host.
  PrefixStore local_store("local" + std::to_string(local[0]), store);
  auto shm = MakeShm(local_store, local_rank, int(local.size()), g.options);
  auto global = MakeGloo(g, std::make_shared<PrefixStore>("global", store), all);
  std::unique_ptr<Backend> across;
  if (local_rank == 0) across = MakeGloo(g, std::make_shared<PrefixStore>("leaders", store), leaders);
  return std::make_unique<HierarchicalBackend>(g.size, std::move(shm), std::move(across),
                                               std::move(global));
}

std::unique_ptr<Backend> MakeBackend(GroupContext& g, const std::string& kind, int comm) {
  auto store = std::make_shared<PrefixStore>("c" + std::to_string(comm), g.store);
  if (kind == "shm") return MakeShm(*store, g.rank, g.size, g.options);
  if (kind == "hierarchical") return MakeHierarchical(g, store);
  std::vector<int> all;
  for (int r = 0; r < g.size; ++r) all.push_back(r);
  return MakeGloo(g, store, all);
}

}  // namespace

std::unique_ptr<ProcessGroup> NewProcessGroup(std::shared_ptr<Store> store, int rank, int size,
                                              ProcessGroupOptions options) {
  FLOTILLA_ENFORCE(store != nullptr, "NewProcessGroup needs a store");
  FLOTILLA_ENFORCE(size >= 1 && rank >= 0 && rank < size, "rank ", rank,
                   " is outside a group of size ", size);
  FLOTILLA_ENFORCE(options.comm_num >= 1, "comm_num must be at least 1, got ", options.comm_num);
  static const std::set<std::string> kBackends{"auto", "shm", "gloo", "hierarchical"};
  FLOTILLA_ENFORCE(kBackends.count(options.backend), "unknown process group backend '",
                   options.backend, "' (expected auto, shm, gloo or hierarchical)");
  if (options.host_id.empty()) options.host_id = LocalHostname();
  // The k-th group a rank makes under one name lives under "<name>/k", so a
  // group re-created on the same store never reads its predecessor's keys.
  const int64_t generation = store->add(options.name + "/generation/" + std::to_string(rank), 1);
  auto pstore = std::make_shared<PrefixStore>(options.name + "/" + std::to_string(generation), store);
  GroupContext g{pstore, rank, size, options, {}, nullptr};
  g.peers = Rendezvous(*pstore, rank, size, options.host_id, options.timeout,
                       options.stall_warning_after);
  const std::string kind = ChooseBackend(options.backend, g.peers);
  if (kind == "shm") {
    for (const auto& p : g.peers) {
      FLOTILLA_ENFORCE(p.host_id == options.host_id, "backend 'shm' needs every rank on one host, ",
                       "but host ids '", options.host_id, "' and '", p.host_id, "' differ");
    }
  }
  std::vector<std::unique_ptr<Backend>> backends;
  for (int c = 0; c < options.comm_num; ++c) backends.push_back(MakeBackend(g, kind, c));
  return std::make_unique<ProcessGroup>(rank, size, std::move(options), std::move(backends),
                                        pstore);
}

}  // namespace flotilla::comm
