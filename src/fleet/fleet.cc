#include "flotilla/fleet/fleet.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "fleet/ops/collective_ops.h"
#include "fleet/ring_registry.h"
#include "flotilla/comm/file_store.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/comm/trace_clock.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/loopback.h"
#include "flotilla/common/tls_files.h"
#include "flotilla/trace/trace.h"
#include "flotilla/common/strings.h"
#include "flotilla/core/math.h"

namespace flotilla::fleet {

namespace {

// The job secret, which the job's TCP store demands of every process.
std::string StoreSecret(const std::string& address) {
  return RequireJobSecret(StrCat("fleet::init (the job's store at ", address, ")"));
}

// "file:/dir" → FileStore, "host:port" → TCPStore client.
std::shared_ptr<comm::Store> OpenStore(const std::string& address,
                                       std::chrono::milliseconds timeout) {
  if (StartsWith(address, "file:")) return std::make_shared<comm::FileStore>(address.substr(5));
  comm::TCPStoreOptions opts;
  opts.timeout = timeout;
  opts.connect_timeout = timeout;
  opts.token = StoreSecret(address);
  opts.tls = TlsFilesFromEnv();
  return comm::ConnectStore(address, opts);
}

// A job of several processes on unknown hosts: unless the user chose
// (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, which flotilla launch sets from
// the node's cores), GEMMs run on one thread, as torchrun's default does,
// so processes sharing a machine do not each spin a thread per core.
void DefaultComputeThreads(const RoleInfo& info) {
  const int processes = info.worker_num + static_cast<int>(info.server_endpoints.size());
  if (processes <= 1 || std::getenv("OMP_NUM_THREADS") || std::getenv("OPENBLAS_NUM_THREADS")) return;
  math::SetBlasThreads(1);
  log::Info("fleet: one compute thread per process (set OMP_NUM_THREADS to choose)");
}

// With a timeline (FLOTILLA_TIMELINE), this process's clock is measured
// against the launcher's through the job's store, so the merged timeline
// lines up across hosts. Failing that, the timeline says so; training goes on.
void AlignTimelineClock(const RoleInfo& info, std::shared_ptr<comm::Store> store,
                        std::chrono::milliseconds timeout) {
  if (!env::Get("FLOTILLA_TIMELINE") || info.store_address.empty()) return;
  try {
    if (!store) store = OpenStore(info.store_address, timeout);
    const trace::ClockOffset c = comm::AlignTraceClock(*store);
    log::Info("timeline clock offset {} us (± {} us)", c.offset_ns / 1000, c.error_ns / 1000);
  } catch (const Error& e) {
    log::Warn("timeline clock not aligned: {}", e.what());
  }
}

}  // namespace

Fleet::Fleet() { RegisterCollectiveOps(); }

Fleet::~Fleet() {
  for (int ring : rings_) UnregisterRing(ring);
  if (store_server_ != nullptr) WaitForStoreClients(*store_server_);
}

namespace {

std::atomic<comm::TCPStoreServer*> g_hosted_store{nullptr};

}  // namespace

// Worker 0's store must outlive every other worker's last request (the
// reply to the final barrier's set is still on its way when worker 0 is
// released): wait until only this process's own connection is left, at most
// 10 s. Runs when the fleet is destroyed, and at exit for the process-wide
// fleet, which never is.
void Fleet::WaitForStoreClients(const comm::TCPStoreServer& server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server.clients() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  g_hosted_store = nullptr;
}

void Fleet::init(const RoleMaker& role, FleetOptions options) {
  const RoleInfo& info = role.info();
  std::shared_ptr<comm::Store> store;
  if (info.role == Role::kWorker && info.is_collective && info.worker_num > 1) {
    FLOTILLA_CHECK(!info.store_address.empty(), InvalidArgument, "fleet::init: ", role.name(),
                   " names no store for ", info.worker_num,
                   " workers (set PADDLE_MASTER=host:port, as flotilla launch does)");
    const bool hosts = info.host_store && info.worker_index == 0;
    const int port = hosts ? ParseHostPort(info.store_address, "the job's master").port : 0;
    if (hosts && (store_server_ == nullptr || store_server_->port() != port)) {
      // No launcher hosts the store (torchrun-style MASTER_ADDR, Slurm,
      // Kubernetes): worker 0 does, at the master's port (a re-init at the
      // same master keeps the store it hosts already): on loopback when the
      // master is, else on every interface (the master's name may be a
      // service address this host cannot bind).
      comm::TCPStoreServerOptions server_options;
      server_options.token = StoreSecret(info.store_address);
      server_options.tls = TlsFilesFromEnv();
      const std::string master = ParseHostPort(info.store_address, "the job's master").host;
      store_server_ = comm::TCPStoreServer::Start(IsLoopbackHost(master) ? master : "", port,
                                                  std::move(server_options));
      g_hosted_store = store_server_.get();
      static const bool registered = std::atexit([] {
        if (comm::TCPStoreServer* s = g_hosted_store.load()) WaitForStoreClients(*s);
      }) == 0;
      (void)registered;
      log::Info("fleet: worker 0 hosts the job's store on {}:{}",
                IsLoopbackHost(master) ? master : "0.0.0.0", port);
    }
    store = OpenStore(info.store_address, options.timeout);
  }
  trace::InitProcess();
  AlignTimelineClock(info, store, options.timeout);
  init(role, std::move(store), std::move(options));
}

void Fleet::Reset() {
  for (int ring : rings_) UnregisterRing(ring);
  rings_.clear();
  group_.reset();
  training_group_.reset();
  training_group_options_.reset();
  fault_tolerant_ = false;
  ft_store_.reset();
  store_.reset();
  ps_.reset();
  main_ = startup_ = nullptr;
  saves_ = store_barriers_ = groups_made_ = dataset_rounds_ = 0;
  role_.reset();
}

void Fleet::init(const RoleMaker& role, std::shared_ptr<comm::Store> store, FleetOptions options) {
  if (role_ != nullptr) {
    Reset();
    log::Info("fleet: re-initialised as {} (init #{})", role.name(), inits_ + 1);
  }
  const std::string generation = inits_++ == 0 ? "" : StrCat("/init", inits_);
  role_ = std::make_unique<RoleInfo>(role.info());
  options_ = std::move(options);
  DefaultComputeThreads(*role_);
  if (role_->role != Role::kWorker || !role_->is_collective || store == nullptr) return;
  // Fault tolerance's keys: `flotilla launch --fault_tolerance step` writes
  // "flotilla/ft/lost/<rank>" (the rank at the start) for each lost process.
  ft_store_ = std::make_shared<comm::PrefixStore>("flotilla/ft", store);
  ft_id_ = role_->worker_index;
  ft_members_.clear();
  for (int r = 0; r < role_->worker_num; ++r) ft_members_.push_back(r);
  store_ = std::make_shared<comm::PrefixStore>("fleet/" + role_->job_id + generation, std::move(store));
  comm::ProcessGroupOptions pg;
  pg.backend = options_.backend;
  pg.timeout = options_.timeout;
  pg.host_id = role_->host_id;
  pg.name = "fleet";
  default_group_options_ = pg;
  group_ = comm::NewProcessGroup(store_, role_->worker_index, role_->worker_num, pg);
  rings_.push_back(RegisterRing(group_));
  log::Info("fleet: worker {}/{} joined ({} backend)", role_->worker_index, role_->worker_num,
            group_->backend());
}

void Fleet::CheckInit(const char* what) const {
  FLOTILLA_CHECK(role_ != nullptr, InvalidArgument, "fleet::", what, " called before fleet::init");
}

const RoleInfo& Fleet::role() const {
  CheckInit("role");
  return *role_;
}

bool Fleet::is_worker() const { CheckInit("is_worker"); return role_->role == Role::kWorker; }
bool Fleet::is_server() const { CheckInit("is_server"); return role_->role == Role::kServer; }
bool Fleet::is_first_worker() const { return is_worker() && role_->worker_index == 0; }
int Fleet::worker_index() const { CheckInit("worker_index"); return role_->worker_index; }
int Fleet::worker_num() const { CheckInit("worker_num"); return role_->worker_num; }

std::vector<std::string> Fleet::worker_endpoints() const {
  CheckInit("worker_endpoints");
  return role_->worker_endpoints;
}

std::vector<std::string> Fleet::server_endpoints() const {
  CheckInit("server_endpoints");
  return role_->server_endpoints;
}

std::shared_ptr<comm::Store> Fleet::WorkersStore() {
  if (store_ || role_->worker_num <= 1) return store_;
  FLOTILLA_CHECK(!role_->store_address.empty(), InvalidArgument, "fleet: the ", role_->worker_num,
                 " workers meet in the job's store, and none is named (set PADDLE_MASTER=host:port, as "
                 "flotilla launch does)");
  store_ = OpenStore(role_->store_address, options_.timeout);
  return store_;
}

void Fleet::barrier_worker() {
  CheckInit("barrier_worker");
  if (!group_) return;
  group_->barrier();
  // The last worker to arrive opens the round's gate; the store outlives the
  // workers' connections to each other.
  std::string round = "barrier_worker/" + std::to_string(store_barriers_++);
  if (store_->add(round + "/arrived", 1) == role_->worker_num) store_->setString(round + "/open", "1");
  store_->wait({round + "/open"}, options_.timeout);
}

DistributedOptimizer Fleet::distributed_optimizer(optimizer::Optimizer& opt,
                                                  DistributedStrategy strategy) {
  CheckInit("distributed_optimizer");
  strategy.HonourPaddleFlags();
  strategy.Validate();
  for (const std::string& hint : strategy.NewHints()) log::Warn("{}", hint);
  return DistributedOptimizer(*this, opt, std::move(strategy));
}

Program& Fleet::main_program() const {
  FLOTILLA_CHECK(main_ != nullptr, InvalidArgument, "fleet::main_program before minimize()");
  return *main_;
}

Program& Fleet::startup_program() const {
  FLOTILLA_CHECK(startup_ != nullptr, InvalidArgument, "fleet::startup_program before minimize()");
  return *startup_;
}

int Fleet::TrainingRing(const DistributedStrategy& strategy) {
  bool hierarchical = strategy.use_hierarchical_allreduce();
  fault_tolerant_ = strategy.fault_tolerance() == "step";
  if (strategy.comm_num() == 1 && !hierarchical) {
    training_group_ = group_;
    return rings_.front();
  }
  comm::ProcessGroupOptions pg;
  pg.backend = hierarchical ? "hierarchical" : options_.backend;
  pg.timeout = options_.timeout;
  pg.comm_num = strategy.comm_num();
  pg.name = StrCat("fleet_dp", groups_made_++);
  const int per_host = static_cast<int>(strategy.GetInt("hierarchical_allreduce_inter_nranks"));
  pg.host_id = per_host > 0 ? StrCat("host", role_->worker_index / per_host) : role_->host_id;
  training_group_options_ = pg;
  training_group_ = comm::NewProcessGroup(store_, role_->worker_index, role_->worker_num, pg);
  rings_.push_back(RegisterRing(training_group_));
  return rings_.back();
}

}  // namespace flotilla::fleet
