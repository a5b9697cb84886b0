#include "launch/elastic/elastic_rendezvous.h"

#include <algorithm>
#include <thread>

#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "launch/launcher_secret.h"
#include "launch/elastic/elastic_channel.h"
#include "launch/elastic/etcd_client.h"
#include "launch/elastic/membership.h"
#include "launch/elastic/node_registration.h"
#include "launch/net_util.h"

namespace flotilla::launch {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPoll{50};

std::string DefaultHost() {
  for (const auto& a : LocalAddresses()) {
    if (!StartsWith(a, "127.")) return a;
  }
  return "127.0.0.1";
}

struct Agreement {
  WorldRecord world;
  std::vector<Member> members;
};

class ElasticRendezvous : public Rendezvous {
 public:
  explicit ElasticRendezvous(ElasticOptions options)
      : options_(std::move(options)),
        etcd_(std::make_shared<EtcdClient>(EtcdOptions{ParseEtcdEndpoints(options_.endpoints)})),
        keys_(options_.job_id) {}

  World Join(const NodePlanner& plan_node) override;

 private:
  void Register(const NodePlanner& plan_node);
  MemberId Self() const { return {options_.host, registration_->lease()}; }
  std::vector<Member> ReadMembers();
  WorldRecord ReadWorld();
  int Cap();
  bool Ready(size_t alive, int cap, bool first, Clock::time_point stable_since) const;
  Agreement AgreeOnWorld(Clock::time_point deadline);
  std::optional<std::string> Master(const WorldRecord& world, Clock::time_point deadline);
  ClusterSpec SpecOf(const Agreement& a, const std::string& master) const;
  World Open(const Agreement& a, const std::string& master);

  ElasticOptions options_;
  std::shared_ptr<EtcdClient> etcd_;
  ElasticKeys keys_;
  std::vector<ProcessSpec> local_;  // this node's processes; their ports stay reserved
  std::unique_ptr<comm::TCPStoreServer> store_;  // the world's store when this is node 0
  std::unique_ptr<NodeRegistration> registration_;
  int64_t last_gen_ = -1;
};

void ElasticRendezvous::Register(const NodePlanner& plan_node) {
  if (options_.force) {
    const int64_t n = etcd_->DeletePrefix(keys_.prefix);
    log::Warn("--force: removed {} keys of job '{}' from etcd", n, options_.job_id);
  }
  local_ = plan_node(NodeLayout{{options_.host}, 0}).local;
  Member me;
  me.id.host = options_.host;
  me.procs = local_;
  registration_ = std::make_unique<NodeRegistration>(
      etcd_, keys_.node(options_.host), EncodeMember(me), options_.ttl,
      2 * std::chrono::duration_cast<milliseconds>(options_.ttl) + milliseconds(2000));
  log::Info("elastic job '{}': registered {} in etcd at {} (np {}:{}, lease TTL {} s)",
            options_.job_id, options_.host, etcd_->endpoints(), options_.min_nodes,
            options_.max_nodes, options_.ttl.count());
}

std::vector<Member> ElasticRendezvous::ReadMembers() {
  std::vector<Member> members;
  for (const auto& kv : etcd_->GetPrefix(keys_.nodes()).kvs) {
    members.push_back(DecodeMember(kv.key, kv.value, kv.lease, kv.create_revision));
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.create_revision < b.create_revision;
  });
  return members;
}

WorldRecord ElasticRendezvous::ReadWorld() {
  auto kv = etcd_->Get(keys_.world());
  return kv ? DecodeWorld(kv->value, kv->mod_revision) : WorldRecord{};
}

// MAX, or the job's --scale target within MIN..MAX.
int ElasticRendezvous::Cap() {
  auto target = etcd_->Get(keys_.target());
  return WorldCap({options_.min_nodes, options_.max_nodes},
                  target ? std::optional<std::string>(target->value) : std::nullopt);
}

bool ElasticRendezvous::Ready(size_t alive, int cap, bool first,
                              Clock::time_point stable_since) const {
  if (alive < static_cast<size_t>(options_.min_nodes)) return false;
  // Later worlds form at once: the job is waiting. The first waits a while
  // for MAX (or --scale's target) nodes so it does not restart as each one
  // arrives.
  return alive >= static_cast<size_t>(cap) || !first ||
         Clock::now() - stable_since >= options_.elastic_timeout;
}

bool AllAlive(const std::vector<MemberId>& world, const std::vector<Member>& members) {
  return std::all_of(world.begin(), world.end(), [&](const MemberId& id) {
    return std::any_of(members.begin(), members.end(), [&](const Member& m) { return m.id == id; });
  });
}

std::vector<MemberId> Ids(const std::vector<Member>& members) {
  std::vector<MemberId> ids;
  for (const auto& m : members) ids.push_back(m.id);
  return ids;
}

Agreement ElasticRendezvous::AgreeOnWorld(Clock::time_point deadline) {
  const bool first = last_gen_ < 0;
  auto stable_since = Clock::now();
  std::vector<MemberId> seen;
  while (true) {
    FLOTILLA_CHECK(!etcd_->Get(keys_.done()), InvalidArgument, "elastic job '", options_.job_id,
                   "' has already finished; use another --job_id (or --force to start it anew)");
    Agreement a{ReadWorld(), ReadMembers()};
    const MemberId self = Self();
    // Missing with its lease alive: deleted by another node (a lapsed lease
    // is replaced by the registration thread instead).
    const bool listed = std::any_of(a.members.begin(), a.members.end(),
                                    [&](const Member& m) { return m.id == self; });
    FLOTILLA_CHECK(listed || etcd_->KeepAlive(self.lease) == 0, Unavailable, "elastic job '", options_.job_id, "': the key of ", self.host,
                   " vanished from etcd — the job finished (or --force cleared it) while this "
                   "node waited");
    if (a.world.gen > last_gen_ && Contains(a.world.members, self) &&
        AllAlive(a.world.members, a.members)) {
      return a;
    }
    if (Ids(a.members) != seen) seen = Ids(a.members), stable_since = Clock::now();
    const int cap = Cap();
    if (Ready(a.members.size(), cap, first, stable_since)) {
      auto proposal = AssignWorld(a.world.members, a.members, cap);
      if (Contains(proposal, self) && (proposal != a.world.members || a.world.gen <= last_gen_)) {
        WorldRecord next{std::max(a.world.gen, last_gen_) + 1, proposal};
        etcd_->PutIfModRevision(keys_.world(), EncodeWorld(next), a.world.mod_revision);
        continue;  // won or lost, the next read shows the world
      }
    }
    if (Clock::now() >= deadline) {
      FLOTILLA_CHECK(a.members.size() < static_cast<size_t>(options_.min_nodes), DeadlineExceeded,
                     "elastic job '", options_.job_id, "': ", options_.host,
                     " waited ", options_.rendezvous_timeout.count() / 1000,
                     " s as a standby — the world is full with ", cap,
                     " nodes [", flotilla::Join(Hosts(a.world.members), ","),
                     "] and no node left (raise MAX in --np, or --scale, to use it)");
      FLOTILLA_THROW(DeadlineExceeded, "elastic job '", options_.job_id, "': only ",
                     a.members.size(), " node(s) [", flotilla::Join(Hosts(Ids(a.members)), ","),
                     "] joined within ", options_.rendezvous_timeout.count() / 1000,
                     " s but --np needs at least ", options_.min_nodes,
                     "; start more launchers with the same --elastic_server and --job_id");
    }
    std::this_thread::sleep_for(2 * kPoll);
  }
}

// Node 0 hosts the world's store; the others wait for its address. nullopt
// when the world fell apart meanwhile (the caller agrees on a new one).
std::optional<std::string> ElasticRendezvous::Master(const WorldRecord& world,
                                                     Clock::time_point deadline) {
  if (world.members.front() == Self()) {
    comm::TCPStoreServerOptions store_options;
    store_options.token = options_.token;
    store_options.service = "elastic";
    store_options.tls = options_.tls;
    // A world of this node alone needs no other host to reach its store.
    const std::string host = world.members.size() == 1 ? "127.0.0.1" : options_.host;
    store_ = comm::TCPStoreServer::Start(host, 0, std::move(store_options));
    const std::string address = StrCat(host, ":", store_->port());
    etcd_->Put(keys_.master(world.gen), address);
    return address;
  }
  while (Clock::now() < deadline) {
    if (auto kv = etcd_->Get(keys_.master(world.gen))) return kv->value;
    if (ReadWorld().gen != world.gen || !AllAlive(world.members, ReadMembers())) return std::nullopt;
    std::this_thread::sleep_for(kPoll);
  }
  FLOTILLA_THROW(DeadlineExceeded, "elastic job '", options_.job_id, "': node 0 of world ",
                 world.gen, " (", world.members.front().host,
                 ") did not publish its store address in time");
}

ClusterSpec ElasticRendezvous::SpecOf(const Agreement& a, const std::string& master) const {
  ClusterSpec spec;
  spec.mode = RunMode::kCollective;
  spec.master = master;
  spec.job_id = options_.job_id;
  spec.generation = a.world.gen;
  const int nproc = static_cast<int>(local_.size());
  for (size_t i = 0; i < a.world.members.size(); ++i) {
    const MemberId& id = a.world.members[i];
    if (id == Self()) spec.node_index = static_cast<int>(i);
    spec.nodes.push_back(id.host);
    const Member& m = *std::find_if(a.members.begin(), a.members.end(),
                                    [&](const Member& x) { return x.id == id; });
    FLOTILLA_ENFORCE(static_cast<int>(m.procs.size()) == nproc, "node ", id.host, " runs ",
                     m.procs.size(), " processes but ", options_.host, " runs ", nproc,
                     "; every node of an elastic job must run the same number");
    for (ProcessSpec p : m.procs) {
      p.node = static_cast<int>(i);
      p.id = static_cast<int>(i) * nproc + p.local_rank;
      spec.trainers.push_back(p);
    }
  }
  return spec;
}

World ElasticRendezvous::Open(const Agreement& a, const std::string& master) {
  World w;
  w.spec = SpecOf(a, master);
  ElasticChannel::Options channel;
  channel.world = a.world;
  channel.self = Self();
  channel.node_index = w.spec.node_index;
  channel.min_nodes = options_.min_nodes;
  channel.max_nodes = options_.max_nodes;
  channel.ttl = options_.ttl;
  w.channel = std::make_unique<ElasticChannel>(channel, etcd_, keys_);
  last_gen_ = a.world.gen;
  log::Info("elastic job '{}': world {} with {} node(s) [{}]; this is node {}", options_.job_id,
            a.world.gen, a.world.members.size(), flotilla::Join(Hosts(a.world.members), ","),
            w.spec.node_index);
  return w;
}

World ElasticRendezvous::Join(const NodePlanner& plan_node) {
  store_.reset();  // the previous world's processes are gone
  if (!registration_) Register(plan_node);
  const auto deadline = Clock::now() + options_.rendezvous_timeout;
  while (true) {
    Agreement a = AgreeOnWorld(deadline);
    if (auto master = Master(a.world, deadline)) return Open(a, *master);
  }
}

}  // namespace

ElasticOptions ElasticOptionsFrom(const LaunchOptions& o) {
  FLOTILLA_ENFORCE(!o.job_id.empty(), "--elastic_server needs --job_id (the job's name in etcd)");
  FLOTILLA_ENFORCE(!o.np.empty(), "--elastic_server needs --np N or --np MIN:MAX (nodes)");
  FLOTILLA_ENFORCE(!HasPsOptions(o) && (o.run_mode.empty() || o.run_mode == "collective"),
                   "elastic jobs run in collective mode; drop the parameter-server options");
  ElasticOptions e;
  e.endpoints = o.elastic_server;
  e.job_id = o.job_id;
  NodeRange np = ParseNp(o.np);
  e.min_nodes = np.min;
  e.max_nodes = np.max;
  e.host = o.host.empty() ? DefaultHost() : ResolveIpv4(o.host, "--host");
  e.force = o.force;
  e.ttl = o.elastic_ttl;
  FLOTILLA_ENFORCE(e.ttl.count() >= 1, "--elastic_ttl must be at least 1 second, not ", e.ttl.count());
  e.elastic_timeout = o.elastic_timeout;
  e.rendezvous_timeout = o.rendezvous_timeout;
  e.token = o.job_secret;
  e.tls = JobTlsFiles(o);
  return e;
}

int ScaleElasticJob(const LaunchOptions& o) {
  FLOTILLA_ENFORCE(!o.job_id.empty(), "--scale needs --job_id (the job to scale)");
  FLOTILLA_ENFORCE(o.command.empty(), "--scale N sets a running job's size and starts no "
                   "program; drop '", o.command.front(), "'");
  EtcdClient etcd(EtcdOptions{ParseEtcdEndpoints(o.elastic_server)});
  const ElasticKeys keys(o.job_id);
  FLOTILLA_CHECK(!etcd.GetPrefix(keys.nodes()).kvs.empty(), NotFound, "elastic job '", o.job_id,
                 "' has no node in etcd at ", etcd.endpoints(), "; nothing to scale");
  etcd.Put(keys.target(), std::to_string(o.scale));
  log::Info("elastic job '{}': size set to {} node(s) (within its --np MIN:MAX)", o.job_id,
            o.scale);
  return 0;
}

std::unique_ptr<Rendezvous> MakeElasticRendezvous(const LaunchOptions& options) {
  return std::make_unique<ElasticRendezvous>(ElasticOptionsFrom(options));
}

}  // namespace flotilla::launch
