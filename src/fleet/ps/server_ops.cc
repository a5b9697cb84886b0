// listen_and_serv: the body of a pserver program. Runs one PsServer with the
// tables in attribute "tables" (JSON, see table_spec.h) until every trainer
// has finished (Executor::close()), then returns so the program ends.
#include <mutex>

#include "fleet/ps/ps_ops.h"
#include "fleet/ps/table_spec.h"
#include "flotilla/common/env.h"
#include "flotilla/common/logging.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/ps/server.h"

namespace flotilla::fleet {

namespace {

void ListenAndServKernel(ExecutionContext& ctx) {
  ps::PsServerOptions opt;
  std::string endpoint = ctx.Attr<std::string>("endpoint");
  opt.endpoint = endpoint;  // servers sharing a port differ by address
  opt.server_index = ctx.Attr<int32_t>("server_index");
  opt.num_servers = ctx.Attr<int32_t>("num_servers");
  opt.num_trainers = ctx.Attr<int32_t>("num_trainers");
  opt.mode = ps::ParsePsMode(ctx.Attr<std::string>("mode"));
  opt.token = ctx.AttrOr<std::string>("token", "");
  if (opt.token.empty()) opt.token = env::GetOr("FLOTILLA_PS_TOKEN", "");
  ps::PsServer server(opt);
  AddTables(server, TablesFromJson(ctx.Attr<std::string>("tables"), ctx.Where()),
            ctx.Attr<int64_t>("min_block_size"));
  std::string model_dir = ctx.AttrOr<std::string>("model_dir", "");
  if (!model_dir.empty()) {
    server.Load(model_dir);
    log::Info("pserver {}: loaded tables from {}", endpoint, model_dir);
  }
  server.Start();
  log::Info("pserver {} serving {} table(s) for {} trainer(s), {} mode", endpoint,
            server.table_names().size(), opt.num_trainers, ps::PsModeName(opt.mode));
  server.Run();
  log::Info("pserver {}: every trainer finished", endpoint);
}

}  // namespace

namespace internal {

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
