// DistributeTranspiler: splits a single-process program into the programs of
// a parameter-server job (Paddle's fluid.DistributeTranspiler).
//
//   DistributeTranspiler t;
//   t.transpile(trainer_id, "10.0.0.1:6174,10.0.0.2:6174", trainers);
//   if (role == "PSERVER") {
//     Program ps = t.get_pserver_program(current_endpoint);
//     Program st = t.get_startup_program(current_endpoint, ps);
//     exe.run(st); exe.run(ps);          // serves until every trainer closed
//   } else {
//     exe.run(default_startup_program());
//     for (...) exe.run(t.get_trainer_program(), feed, {loss.name()});
//     exe.close();                        // tells the servers this trainer is done
//   }
//
// The trainer program is the original main program rewritten IN PLACE (so
// Variable handles stay valid and default_main_program() is the trainer
// program, as in Paddle): forward and backward stay; the optimizer ops go
// (GEO keeps the dense ones: trainers optimise locally); a ps_trainer_init op
// first connects to the servers on the first run (trainer 0 seeds them with
// its initial values, the others pull after a barrier); ps_send pushes the
// gradients, ps_barrier (sync) waits for the servers to apply the step and
// ps_recv pulls the parameters. Lookups of is_sparse / is_distributed
// embeddings become distributed_lookup_table (pulls only the batch's rows;
// the gradient is a SelectedRows pushed to the sparse table). The startup
// program loses the initialisers of is_distributed tables (they live only on
// the servers, initialised row by row on first pull).
//
// The pserver program holds one listen_and_serv op: the endpoint, the tables
// it owns (every sparse table, and the dense blocks SliceDense places there)
// with the update rule of the original optimizer op (sgd, adagrad, adam).
//
// Failure: transpile throws InvalidArgument for a malformed endpoint list
// and Unimplemented naming the op for an optimizer the servers cannot run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flotilla/framework/program.h"
#include "flotilla/ps/sparse_table.h"

namespace flotilla::fleet {

// How the servers keep sparse tables (strategy.sparse_table_configs): the
// table class, and Paddle's CTR accessor rules for admitting and dropping
// rows. Applies to every sparse table of the job.
struct SparseTableSettings {
  std::string table_class = "memory";  // memory | ssd
  // ssd: the memory one server gives its sparse tables' rows (shared by the
  // tables in proportion to their row sizes), and where the rest go (a
  // directory per server and table below it; default FLOTILLA_PS_SSD_DIR,
  // else $TMPDIR or /tmp).
  int64_t memory_budget_mb = 0;
  std::string ssd_path;
  ps::SparseAccessorConfig accessor;
  // The label variable: each id's instance's label counts as its click in
  // the show/click statistics pushes carry (empty: shows only).
  std::string click_var;
};

struct DistributeTranspilerConfig {
  // "sync" | "async" | "geo". transpile()'s sync_mode=false selects "async"
  // unless mode is "geo".
  std::string mode = "sync";
  int geo_k_steps = 100;
  // Async communicator (strategy.a_sync_configs).
  int send_queue_size = 16;
  int max_merge_var_num = 1;
  bool independent_recv_thread = false;
  // Dense parameters are cut in blocks no smaller than this (Paddle's 8192).
  int64_t min_block_size = 8192;
  // Trainer 0 writes its initial dense values to the servers. Turn off when
  // the servers loaded a saved model (init_server(model_dir)).
  bool seed_servers = true;
  // Per-server give-up time of a trainer's RPC (0: FLOTILLA_PS_TIMEOUT_MS or 30 s).
  int64_t rpc_timeout_ms = 0;
  std::string token;  // shared secret; default FLOTILLA_PS_TOKEN
  SparseTableSettings sparse;
};

// One parameter the servers hold, as the transpiler found it.
struct PsTableInfo {
  std::string name;
  bool sparse = false;       // a lookup table with is_sparse / is_distributed
  bool distributed = false;  // is_distributed: no copy on the trainers
  Dims dims;
  std::string grad;
  std::string optimizer;     // sgd | momentum | adagrad | adam
  float learning_rate = 0;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  float momentum = 0.9f;      // momentum's mu
  bool use_nesterov = false;
  // Initialiser of sparse rows on the servers: the startup op's kind.
  std::string init_kind = "constant";  // constant | uniform | normal
  float init_a = 0, init_b = 0;        // value | (min, max) | (mean, std)
  uint64_t init_seed = 0;
};

class DistributeTranspiler {
 public:
  explicit DistributeTranspiler(DistributeTranspilerConfig config = {});

  // Analyses `program` (default: default_main_program()) after minimize()
  // and rewrites it into the trainer program; `startup` (default:
  // default_startup_program()) loses the is_distributed initialisers.
  // pservers: "ip:port,ip:port".
  void transpile(int trainer_id, const std::string& pservers, int trainers, bool sync_mode = true,
                 Program* program = nullptr, Program* startup = nullptr);

  // The rewritten main program.
  Program& get_trainer_program() const;
  // The program of the server at `endpoint` (one of pservers; throws
  // InvalidArgument naming it otherwise). model_dir: tables loaded from there.
  Program get_pserver_program(const std::string& endpoint, const std::string& model_dir = "") const;
  // The server's startup program (empty: tables initialise themselves and
  // trainer 0 seeds the dense ones).
  Program get_startup_program(const std::string& endpoint, const Program& pserver_program) const;
  // A copy of `test_program` (a Clone(for_test) of the original main) whose
  // lookups of server tables read them from the servers.
  Program get_test_program(const Program& test_program) const;

  const std::vector<PsTableInfo>& tables() const { return tables_; }
  const std::vector<std::string>& pserver_endpoints() const { return endpoints_; }
  const DistributeTranspilerConfig& config() const { return config_; }

 private:
  void Analyse(const Program& main, const Program& startup);
  void RewriteTrainer(Program& main) const;
  void RewriteStartup(Program& startup) const;

  DistributeTranspilerConfig config_;
  int trainer_id_ = 0;
  int trainers_ = 1;
  std::vector<std::string> endpoints_;
  std::vector<PsTableInfo> tables_;
  Program* main_ = nullptr;
};

}  // namespace flotilla::fleet
