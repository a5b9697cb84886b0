// listen_and_serv: the body of a pserver program. Runs one PsServer with the
// tables in attribute "tables" (JSON, see table_spec.h) until every trainer
// has finished (Executor::close()), then returns so the program ends.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "fleet/ps/ps_ops.h"
#include "fleet/ps/table_spec.h"
#include "flotilla/common/env.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/strings.h"
#include "flotilla/common/tls_files.h"
#include "flotilla/common/logging.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/ps/server.h"

namespace flotilla::fleet {

namespace {

// The peak resident set of this process (VmHWM), in MiB; 0 when unknown.
double PeakRssMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// One JSON line per sparse table with what its accessor and spills did,
// and one with the server's peak memory.
void LogSparseCounters(ps::PsServer& server) {
  log::Info("pserver memory {}", nlohmann::json{{"peak_rss_mb", PeakRssMb()}}.dump());
  for (const auto& name : server.table_names()) {
    if (!server.has_sparse(name)) continue;
    const ps::SparseTableCounters c = server.sparse(name).counters();
    log::Info("pserver table {}", nlohmann::json{{"table", name}, {"rows", c.rows},
                                                  {"memory_rows", c.memory_rows}, {"admitted", c.admitted},
                                                  {"refused_sightings", c.refused_sightings},
                                                  {"dropped_pushes", c.dropped_pushes},
                                                  {"shrunk", c.shrunk}, {"spilled", c.spilled},
                                                  {"loaded", c.loaded}}
                                        .dump());
  }
}

void ListenAndServKernel(ExecutionContext& ctx) {
  ps::PsServerOptions opt;
  std::string endpoint = ctx.Attr<std::string>("endpoint");
  opt.endpoint = endpoint;  // servers sharing a port differ by address
  opt.server_index = ctx.Attr<int32_t>("server_index");
  opt.num_servers = ctx.Attr<int32_t>("num_servers");
  opt.num_trainers = ctx.Attr<int32_t>("num_trainers");
  opt.mode = ps::ParsePsMode(ctx.Attr<std::string>("mode"));
  opt.token = internal::PsToken(ctx);
  opt.tls = TlsFilesFromEnv();
  const std::string sparse_json = ctx.AttrOr<std::string>("sparse_config", "");
  const SparseTableSettings sparse =
      sparse_json.empty() ? SparseTableSettings{} : SparseSettingsFromJson(sparse_json, ctx.Where());
  const bool ssd = sparse.table_class == "ssd";
  if (ssd) RemoveStaleSsdDirs(sparse);
  auto server = std::make_unique<ps::PsServer>(opt);
  AddTables(*server, TablesFromJson(ctx.Attr<std::string>("tables"), ctx.Where()),
            ctx.Attr<int64_t>("min_block_size"), sparse);
  std::string model_dir = ctx.AttrOr<std::string>("model_dir", "");
  if (!model_dir.empty()) {
    server->Load(model_dir);
    log::Info("pserver {}: loaded tables from {}", endpoint, model_dir);
  }
  server->Start();
  log::Info("pserver {} serving {} table(s) for {} trainer(s), {} mode", endpoint,
            server->table_names().size(), opt.num_trainers, ps::PsModeName(opt.mode));
  server->Run();
  log::Info("pserver {}: every trainer finished", endpoint);
  LogSparseCounters(*server);
  // The launcher stops servers once the trainers are gone; what is left to
  // do (ssd tables removing their databases) must not be cut short.
  auto previous = std::signal(SIGTERM, SIG_IGN);
  server.reset();
  if (ssd) std::filesystem::remove_all(SsdServerDir(sparse, opt.server_index));
  std::signal(SIGTERM, previous);
}

}  // namespace

namespace internal {

std::string PsToken(const ExecutionContext& ctx) {
  return PsToken(ctx.AttrOr<std::string>("token", ""), ctx.Where());
}

std::string PsToken(const std::string& token_attr, const std::string& who) {
  std::string token = token_attr;
  if (token.empty()) token = env::GetOr("FLOTILLA_PS_TOKEN", "");
  if (token.empty()) token = RequireJobSecret(StrCat(who, " (parameter-server RPCs)"));
  return token;
}

void RegisterPsServerOps() {
  OpRegistry::Global().Register({.type = "listen_and_serv",
                                 .kernels = {{Place::Kind::kCPU, ListenAndServKernel}},
                                 .default_attrs = {{"model_dir", std::string()},
                                                   {"min_block_size", int64_t{8192}}}});
}

}  // namespace internal

void RegisterPsOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterAllOps();
    internal::RegisterPsTrainerOps();
    internal::RegisterPsLookupOps();
    internal::RegisterPsServerOps();
  });
}

}  // namespace flotilla::fleet
