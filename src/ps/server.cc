#include "flotilla/ps/server.h"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/trace/http_server.h"
#include "flotilla/trace/trace.h"
#include "ps/credentials.h"
#include "ps/server_metrics.h"
#include "ps/service.h"
#include "ps/table_file.h"

namespace flotilla::ps {

const char* PsModeName(PsMode mode) {
  switch (mode) {
    case PsMode::kSync: return "sync";
    case PsMode::kAsync: return "async";
    case PsMode::kGeo: return "geo";
  }
  return "?";
}

PsMode ParsePsMode(const std::string& name) {
  if (name == "sync") return PsMode::kSync;
  if (name == "async") return PsMode::kAsync;
  if (name == "geo") return PsMode::kGeo;
  FLOTILLA_THROW(InvalidArgument, "parameter-server mode '", name, "' is not sync, async or geo");
}

// ---- State ----

PsServer::State::State(PsServerOptions opts)
    : options(std::move(opts)),
      barrier(options.num_trainers, [this](int live) { ApplyPending(live); }) {
  FLOTILLA_ENFORCE(options.server_index >= 0 && options.server_index < options.num_servers,
                   "server_index ", options.server_index, " is outside [0, ", options.num_servers, ")");
  if (options.model_root.empty()) options.model_root = env::GetOr("FLOTILLA_PS_MODEL_DIR", "");
  if (options.model_root.empty()) options.model_root = std::filesystem::current_path().string();
  options.model_root = std::filesystem::absolute(options.model_root).lexically_normal().string();
  wire_token = WireToken(options.token);
}

std::string PsServer::State::ConfinedPath(const std::string& requested) const {
  namespace fs = std::filesystem;
  const fs::path path(requested);
  bool climbs = false;
  for (const auto& part : path) climbs = climbs || part == "..";
  FLOTILLA_ENFORCE(!requested.empty() && !climbs, "parameter server ", options.server_index,
                   " refuses the directory '", requested, "': a path with '..' (or none)");
  const fs::path root(options.model_root);
  const fs::path resolved = (path.is_absolute() ? path : root / path).lexically_normal();
  const auto rel = resolved.lexically_relative(root);
  FLOTILLA_ENFORCE(!rel.empty() && *rel.begin() != "..", "parameter server ",
                   options.server_index, " refuses the directory '", requested,
                   "': outside its model directory '", options.model_root,
                   "' (set FLOTILLA_PS_MODEL_DIR on the server)");
  return resolved.string();
}

SafeDir PsServer::State::ConfinedDir(const std::string& requested, bool create,
                                     bool create_parents) const {
  namespace fs = std::filesystem;
  const fs::path rel = fs::path(ConfinedPath(requested)).lexically_relative(options.model_root);
  std::vector<std::string> parts;
  for (const auto& part : rel) {
    if (part != "." && !part.empty()) parts.push_back(part.string());
  }
  SafeDir dir = SafeDir::Open(options.model_root, StrCat("parameter server ", options.server_index,
                                                         "'s model directory"));
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    dir = dir.Subdir(parts[i], create && (last || create_parents));
  }
  return dir;
}

PsServer::State::~State() { UnwatchTables(this); }

// A sync round: a barrier at which gradients are pending somewhere. Other
// barriers (start-up, saving) are not training steps and apply nothing.
void PsServer::State::ApplyPending(int live_trainers) {
  if (options.mode != PsMode::kSync) return;
  bool round = false;
  for (auto& [name, table] : dense) round = round || table->HasPending();
  for (auto& [name, table] : sparse) round = round || table->HasPending();
  if (!round) return;
  for (auto& [name, table] : dense) table->ApplyPending(live_trainers);
  for (auto& [name, table] : sparse) table->ApplyPending(live_trainers);
}

DenseTable& PsServer::State::Dense(const std::string& name) {
  auto it = dense.find(name);
  FLOTILLA_CHECK(it != dense.end(), NotFound, "parameter server ", options.server_index,
                 " has no dense table '", name, "'");
  return *it->second;
}

SparseTable& PsServer::State::Sparse(const std::string& name) {
  auto it = sparse.find(name);
  FLOTILLA_CHECK(it != sparse.end(), NotFound, "parameter server ", options.server_index,
                 " has no sparse table '", name, "'");
  return *it->second;
}

void PsServer::State::RequestStop() {
  std::lock_guard<std::mutex> lock(mu);
  stop_requested = true;
  cv.notify_all();
}

void PsServer::State::Save(const std::string& dir, const std::string& shown) const {
  MakeDirs(dir);
  const int i = options.server_index, n = options.num_servers;
  for (const auto& [name, table] : dense) {
    WriteTableFile(TableFileName(dir, name, i, n), TableKind::kDense, table->Serialize());
  }
  for (const auto& [name, table] : sparse) table->SaveTo(TableFileName(dir, name, i, n));
  log::Info("parameter server {}: saved {} tables to {}", i, dense.size() + sparse.size(),
            shown.empty() ? dir : shown);
}

namespace {

// Every file of a save by another number of servers, read and checked.
std::vector<std::string> ReadSavedSet(const std::string& dir, const std::string& table, TableKind kind) {
  std::vector<std::string> images;
  for (const auto& path : SavedTableFiles(dir, table)) images.push_back(ReadTableFile(path, kind));
  return images;
}

}  // namespace

// Tables saved by this many servers load this server's file; saved by
// another number, every server's file is read and re-cut: dense blocks by
// the new slicing, sparse rows by the slicer.
void PsServer::State::Load(const std::string& dir, const std::string& shown) {
  const int i = options.server_index, n = options.num_servers;
  for (const auto& [name, table] : dense) {
    const std::string path = TableFileName(dir, name, i, n);
    if (std::filesystem::exists(path)) {
      table->Deserialize(ReadTableFile(path, TableKind::kDense), "table file '" + path + "'");
    } else {
      table->DeserializeResliced(ReadSavedSet(dir, name, TableKind::kDense),
                                 StrCat("table '", name, "' in '", dir, "'"));
    }
  }
  for (const auto& [name, table] : sparse) {
    const std::string path = TableFileName(dir, name, i, n);
    if (std::filesystem::exists(path)) {
      table->LoadFrom(path);
    } else {
      const SparseSlicer& slicer = options.sparse_slicer;
      table->LoadResharded(SavedTableFiles(dir, name), [&](int64_t key) { return slicer(key, n) == i; },
                           StrCat("table '", name, "' in '", dir, "'"));
    }
  }
  log::Info("parameter server {}: loaded {} tables from {}", i, dense.size() + sparse.size(),
            shown.empty() ? dir : shown);
}

std::pair<int64_t, int64_t> PsServer::State::Shrink() {
  int64_t dropped = 0, rows = 0;
  for (const auto& [name, table] : sparse) {
    const int64_t n = table->Shrink();
    dropped += n;
    rows += table->size();
    log::Info("parameter server {}: shrink dropped {} rows of '{}', {} left", options.server_index, n,
              name, table->size());
  }
  return {dropped, rows};
}

// ---- PsServer ----

PsServer::PsServer(PsServerOptions options) : state_(std::make_unique<State>(std::move(options))) {}

PsServer::~PsServer() {
  Stop();
  if (state_->server) Run();  // shuts down a started server
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->runners == 0; });
}

const PsServerOptions& PsServer::options() const { return state_->options; }
int64_t PsServer::refused_requests() const { return state_->refused; }

void PsServer::AddDenseTable(DenseTableConfig config) {
  FLOTILLA_ENFORCE(!state_->server, "AddDenseTable('", config.name, "') after Start()");
  FLOTILLA_CHECK(!state_->dense.count(config.name) && !state_->sparse.count(config.name),
                 AlreadyExists, "parameter server already has a table '", config.name, "'");
  const std::string name = config.name;
  state_->dense[name] = std::make_unique<DenseTable>(std::move(config), state_->options.server_index,
                                                     state_->options.num_servers);
}

namespace {

// Memory a server with an ssd table frees goes back to the system, so that
// resident memory stays within the budget: glibc otherwise raises its mmap
// threshold after the first large free (up to 32 MiB), after which write
// batches, database blocks and RPC payloads are carved from its heaps and
// their freed space stays resident there (tens of MiB beyond the budget
// in a long spill). A fixed threshold of 256 KiB maps such blocks
// separately and unmaps them when freed; at most two arenas per core
// bound the free space kept per thread.
void ReturnLargeBlocksAtOnce() {
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_ARENA_MAX, 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}


}  // namespace

void PsServer::AddSparseTable(SparseTableConfig config) {
  FLOTILLA_ENFORCE(!state_->server, "AddSparseTable('", config.name, "') after Start()");
  FLOTILLA_CHECK(!state_->dense.count(config.name) && !state_->sparse.count(config.name),
                 AlreadyExists, "parameter server already has a table '", config.name, "'");
  const std::string name = config.name;
  if (config.table_class == SparseTableClass::kSsd) ReturnLargeBlocksAtOnce();  // process-wide: this server's
  state_->sparse[name] = std::make_unique<SparseTable>(std::move(config));
}

DenseTable& PsServer::dense(const std::string& name) { return state_->Dense(name); }
SparseTable& PsServer::sparse(const std::string& name) { return state_->Sparse(name); }
bool PsServer::has_sparse(const std::string& name) const { return state_->sparse.count(name) > 0; }

std::vector<std::string> PsServer::table_names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : state_->dense) names.push_back(name);
  for (const auto& [name, t] : state_->sparse) names.push_back(name);
  return names;
}

void PsServer::Start() {
  if (state_->server) return;
  state_->service = std::make_unique<PsServiceImpl>(state_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(state_->options.endpoint, ServerCredentials(state_->options.tls),
                           &state_->port);
  builder.SetMaxReceiveMessageSize(state_->options.max_message_bytes);
  builder.SetMaxSendMessageSize(state_->options.max_message_bytes);
  builder.RegisterService(state_->service.get());
  state_->server = builder.BuildAndStart();
  FLOTILLA_CHECK(state_->server && state_->port > 0, Unavailable,
                 "parameter server cannot listen on ", state_->options.endpoint);
  const std::string& ep = state_->options.endpoint;  // the bound address, not a dialable one
  log::Info("parameter server {}/{} ({} mode, {} trainers) listening on {}:{}{}",
            state_->options.server_index, state_->options.num_servers,
            PsModeName(state_->options.mode), state_->options.num_trainers,
            ep.substr(0, ep.rfind(':')), state_->port,
            !state_->options.tls.enabled() ? ""
            : state_->options.tls.ca.empty() ? " (TLS)" : " (mutual TLS)");
  trace::InitProcess();
  WatchTables(state_.get());
  trace::ServeMetrics();  // when FLOTILLA_METRICS_PORT asks for it
}

int PsServer::port() const { return state_->port; }

std::string PsServer::endpoint() const {
  const std::string& ep = state_->options.endpoint;
  std::string host = ep.substr(0, ep.rfind(':'));
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) host = "127.0.0.1";
  return StrCat(host, ":", state_->port);
}

// The first Run() to see the stop request shuts the service down; any
// other (a Run() on another thread, the destructor's) waits until it is done.
void PsServer::Run() {
  Start();
  std::unique_lock<std::mutex> lock(state_->mu);
  ++state_->runners;
  state_->cv.wait(lock, [&] { return state_->stop_requested || state_->shut_down; });
  if (!state_->shut_down) {
    state_->shut_down = true;
    lock.unlock();
    state_->barrier.Cancel(StrCat("parameter server ", state_->options.server_index, " at ",
                                  endpoint(), " is shutting down"));
    state_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    state_->server->Wait();
    log::Info("parameter server {} stopped", state_->options.server_index);
    lock.lock();
    state_->stopped = true;
    state_->cv.notify_all();
  }
  state_->cv.wait(lock, [&] { return state_->stopped; });
  if (State::before_run_returns) {
    lock.unlock();
    State::before_run_returns();
    lock.lock();
  }
  --state_->runners;
  state_->cv.notify_all();
}

void PsServer::Stop() { state_->RequestStop(); }

std::vector<int> PsServer::finished_trainers() const { return state_->barrier.finished(); }

void PsServer::Save(const std::string& dir) const { state_->Save(dir); }
void PsServer::Load(const std::string& dir) { state_->Load(dir); }
int64_t PsServer::Shrink() { return state_->Shrink().first; }

}  // namespace flotilla::ps
