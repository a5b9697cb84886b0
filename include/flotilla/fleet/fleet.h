// fleet: distributed training in a few added lines (Paddle's
// fluid.incubate.fleet.collective.fleet).
//
//   fleet::PaddleCloudRoleMaker role(/*is_collective=*/true);
//   fleet::init(role);
//   fleet::DistributedStrategy strategy;
//   auto opt = fleet::distributed_optimizer(sgd, strategy);
//   opt.minimize(loss);
//   exe.Run(fleet::startup_program());            // parameters broadcast from rank 0
//   exe.Run(fleet::main_program(), feed, {loss.name()});
//   fleet::save_persistables(exe, "model");       // rank 0 writes
//
// The free functions act on one process-wide Fleet. Tests that run ranks as
// threads create one Fleet object per rank instead. A Fleet is used from one
// thread at a time; its collectives block until every worker takes part and
// throw DeadlineExceeded / Unavailable naming the ranks that did not.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "flotilla/api/optimizer.h"
#include "flotilla/comm/process_group.h"
#include "flotilla/comm/store.h"
#include "flotilla/fleet/distribute_transpiler.h"
#include "flotilla/fleet/distributed_strategy.h"
#include "flotilla/fleet/role_maker.h"
#include "flotilla/framework/executor.h"

namespace flotilla::io {
class Dataset;
}

namespace flotilla::comm {
class TCPStoreServer;
}  // namespace flotilla::comm

namespace flotilla::fleet {

// Where a parameter-server job's save_inference_model puts the model, under
// the directory it is given (Paddle's "dnn_plugin").
inline constexpr const char* kPsInferenceModelDir = "dnn_plugin";

struct HeterSplit;  // fleet/heter_split.h

struct FleetOptions {
  // Rendezvous and collective timeout.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // "auto" | "shm" | "gloo" | "hierarchical" for the workers' groups
  // (use_hierarchical_allreduce forces "hierarchical" for training).
  std::string backend = "auto";
};

class Fleet;

// What a transactional step commits besides the variables (see
// Fleet::run_step): the trainer's step counter and its position in the
// data, counted in samples of the whole job.
struct StepState {
  int64_t step = 0;
  int64_t position = 0;
};

// What fault tolerance ("step") has survived in this process.
struct FaultStats {
  int generation = 0;        // 0 until the first re-form
  int faults = 0;            // ranks lost
  int64_t steps_lost = 0;    // steps dropped and redone
  double last_reform_ms = 0;    // failure seen → new group built and state agreed
  double last_recovery_ms = 0;  // failure seen → first step committed in the new world
};

// What distributed_optimizer returns: wraps an optimizer so that minimize()
// also runs the collective pass. Holds references to the fleet and the
// optimizer, which must outlive it.
class DistributedOptimizer {
 public:
  DistributedOptimizer(Fleet& fleet, optimizer::Optimizer& opt, DistributedStrategy strategy);

  // backward() + apply_gradients() on loss's program, then the collective
  // pass (see src/fleet/collective_pass.h) on it and on `startup` (default:
  // the default startup program). Afterwards fleet.main_program() and
  // startup_program() are these programs. With one worker the programs are
  // left as a single process would build them. In a parameter-server job
  // the update ops move to the servers: the result lists none.
  optimizer::MinimizeResult minimize(const Variable& loss, Program* startup = nullptr,
                                     const std::vector<std::string>& parameter_list = {},
                                     const std::set<std::string>& no_grad_set = {});

  const DistributedStrategy& strategy() const { return strategy_; }
  // Variables of each all-reduce bucket, in the order they are started.
  const std::vector<std::vector<std::string>>& buckets() const { return buckets_; }

 private:
  Fleet& fleet_;
  optimizer::Optimizer& opt_;
  DistributedStrategy strategy_;
  std::vector<std::vector<std::string>> buckets_;
};

class Fleet {
 public:
  Fleet();
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Takes the role and, for a collective worker of a job with more than one
  // worker, meets the others through the role's store (PADDLE_MASTER) and
  // builds their process group (blocking). Throws InvalidArgument when a
  // multi-worker role names no store.
  //
  // Called again (Paddle's scripts and unit tests do), it re-initialises:
  // what the last init and minimize() set up is dropped — process groups,
  // the parameter-server job, main_program() — and the new role taken. The
  // workers of a multi-worker role meet anew under keys of this init's
  // generation, so each must call init as many times as the others.
  void init(const RoleMaker& role, FleetOptions options = {});
  // The same with a store the caller provides (tests: a HashStore shared by
  // thread ranks).
  void init(const RoleMaker& role, std::shared_ptr<comm::Store> store, FleetOptions options = {});
  bool initialized() const { return role_ != nullptr; }
  // The role the last init() took. Throws InvalidArgument before init().
  const RoleInfo& role() const;

  bool is_worker() const;
  bool is_server() const;
  bool is_first_worker() const;
  int worker_index() const;
  int worker_num() const;
  std::vector<std::string> worker_endpoints() const;
  std::vector<std::string> server_endpoints() const;
  // Blocks until every worker calls it. The workers meet in the process
  // group and then in the store, so a worker returns only once every other
  // worker has finished its collectives: one that exits right after its last
  // barrier cannot close a connection a slower peer is still reading (Gloo
  // reports such a close as an error even when the data had arrived).
  void barrier_worker();

  // Paddle's InMemoryDataset.global_shuffle(fleet): this worker's records
  // exchanged with every other worker's through the job's store
  // (PADDLE_MASTER; a parameter-server worker opens it on first use), then
  // shuffled locally. Every worker calls it, the same number of times;
  // blocks until the others' records arrived. One worker: a local shuffle.
  // Throws InvalidArgument when several workers have no store address.
  void global_shuffle(io::Dataset& dataset, uint64_t seed);
  // The sum of `value` over every worker (each calls it): Paddle's dataset
  // sizes with fleet. One worker: `value`.
  int64_t sum_over_workers(int64_t value);

  DistributedOptimizer distributed_optimizer(optimizer::Optimizer& opt,
                                             DistributedStrategy strategy = {});

  // The programs the last minimize() transpiled. Throws InvalidArgument
  // before minimize().
  Program& main_program() const;
  Program& startup_program() const;

  // Rank 0 saves the persistable variables of `main` (default
  // main_program()) from `scope` (default global_scope()) to `dir`; the
  // others wait for it at a barrier, so `dir` is complete on return. When
  // rank 0 fails, it rethrows its error and the others throw Unavailable
  // quoting it.
  void save_persistables(const Executor& exe, const std::string& dir, const Program* main = nullptr,
                         const Scope* scope = nullptr);
  // Rank 0 saves an inference model (io::SaveInferenceModel); others wait.
  // In a parameter-server job trainer 0 saves as Paddle does there: the
  // servers' tables in `dir`, the inference model (program and the
  // parameters it reads) in `dir`/kPsInferenceModelDir.
  void save_inference_model(const Executor& exe, const std::string& dir,
                            const std::vector<std::string>& feed_names,
                            const std::vector<std::string>& fetch_names,
                            const Program* main = nullptr, const Scope* scope = nullptr);

  // ---- parameter-server jobs (a non-collective role) ----
  // In such a job distributed_optimizer(...).minimize() transpiles the
  // programs with DistributeTranspiler: strategy.a_sync false → sync;
  // a_sync true → async (a_sync_configs: max_merge_var_num,
  // send_queue_size, independent_recv_thread); a_sync with
  // a_sync_configs.k_steps > 0 → GEO. main_program() (the loss's program,
  // rewritten in place) is then the trainer program.
  //
  // Servers: prepare the pserver program; with model_dir, its tables are
  // loaded from there (what save_persistables wrote). Throws InvalidArgument
  // on a worker or before minimize().
  void init_server(const std::string& model_dir = "");
  // Serves until every worker has called stop_worker() (or closed its
  // executor). Blocking.
  void run_server();
  // init_server, run_server, init_worker and stop_worker behave as Paddle's
  // in the other kinds of job: in a collective job each logs that it should
  // not be called there and returns, or throws InvalidArgument ("Fleet can
  // not find suitable runtime handler") before minimize(); in a
  // non-distributed fleet (RoleInfo::non_distributed) each logs that it does
  // not work there and returns.
  //
  // Workers: connects to the servers now (default: at the first run of the
  // trainer program). Worker 0 seeds the servers with its initial values
  // unless servers_loaded (the servers ran init_server(model_dir)): then
  // every worker starts from the servers' values. Blocks until every worker
  // has arrived. Call after running the startup program.
  void init_worker(bool servers_loaded = false);
  // Flushes what is queued, tells the servers this worker is done. Idempotent.
  void stop_worker();
  // Ends a pass (Paddle's fleet.shrink): every worker calls it; after all
  // arrived, what is queued is pushed and worker 0 has every server decay
  // its sparse rows' show/click statistics and drop the rows
  // strategy.sparse_table_configs calls stale. Returns the rows dropped
  // (on worker 0; 0 on the others). Blocking.
  int64_t shrink();
  // GEO and async workers: starts pulling the sparse rows a step fed
  // `next_feed` will look up, on a background thread, so they arrive while
  // the current step computes. Call it with the next batch before running
  // the current one, on the thread that will run it:
  //   fleet::prefetch_sparse(next_feed);
  //   exe.run(fleet::main_program(), feed, {loss});
  // Async: the rows are pulled before the current step's gradients reach
  // the servers (one step staler, as the async communicator's are anyway).
  // Does nothing in sync mode, before the worker is connected, or when
  // the program looks up fewer than two tables of fed ids. Throws
  // InvalidArgument naming an ids variable `next_feed` lacks.
  void prefetch_sparse(const FeedMap& next_feed);
  // The transpiler of a parameter-server job (nullptr otherwise), e.g. for
  // get_test_program().
  const DistributeTranspiler* ps_transpiler() const;

  // ---- heterogeneous parameter-server jobs (--heter_worker_num) ----
  // The program is split (strategy.heter_configs.boundary_vars, or the
  // sparse lookups' outputs found automatically): trainers run the sparse
  // lookups and their pushes, heter workers the dense rest. Async mode only
  // (strategy.a_sync, k_steps 0). Heter workers run the startup program,
  // init_worker(), run_heter_worker(), stop_worker(); trainers
  // heter_train_step() per mini-batch, heter_flush() at the end.
  bool is_heter_worker() const;
  // True when the job has heter workers (on every role of it).
  bool is_heter_job() const;
  // Serves the dense part to this worker's trainers (trainer t goes to heter
  // worker t % heter workers) until each has called heter_flush(). Blocking.
  void run_heter_worker();
  // One mini-batch: its sparse forward here, the dense part on the heter
  // worker, and once strategy.heter_configs.pipeline_depth batches are in
  // flight the oldest one's sparse backward and pushes. Returns
  // `fetch_list` (dense-side variables, e.g. the loss) of the batch this
  // call finished, or an empty vector while the pipeline fills.
  std::vector<Tensor> heter_train_step(Executor& exe, const FeedMap& feed,
                                       const std::vector<std::string>& fetch_list = {});
  // Finishes the batches in flight, tells the heter worker this trainer is
  // done (it flushes its pushes) and pulls the dense parameters into
  // `scope` (default global_scope()), so the trainer can evaluate the model.
  void heter_flush(Executor& exe, Scope* scope = nullptr);

  // ---- fault tolerance (DistributedStrategy.fault_tolerance "step") ----
  // Runs one training step of `program` (main_program()) on `feed` and
  // returns `fetch_list`; on success the step is committed: state.step
  // grows by one and state.position by samples_per_rank × worker_num().
  // Without fault tolerance it is exe.run and never returns nullopt.
  //
  // With it, the step is a transaction. The gradients' all-reduces all end
  // before the first optimizer op, so a collective that fails (a peer died:
  // Unavailable, DeadlineExceeded) leaves parameters, optimizer state and
  // learning rate as before the step; persistable variables the forward and
  // backward ops write (batch-norm statistics, counters) are restored from a
  // copy taken before the step. The survivors then re-form: the launcher
  // (--fault_tolerance step) publishes the lost ranks in the job's store,
  // the survivors agree on generation G+1's members there, rebuild their
  // process groups in-process (same ring ids, new ranks 0..N-2 in the old
  // order), and the member that committed the most steps broadcasts every
  // persistable variable of `program` and its StepState to the others. Then
  // run_step returns nullopt: worker_index() / worker_num() are the new
  // world's; redo the step from `state` (its batch is re-assigned by the
  // new rank and world). Throws the collective's error when no rank was
  // reported lost within the re-form timeout (a failure that is not a lost
  // peer) or this worker is not in the new world.
  std::optional<std::vector<Tensor>> run_step(Executor& exe, const Program& program,
                                              const FeedMap& feed,
                                              const std::vector<std::string>& fetch_list,
                                              StepState& state, int64_t samples_per_rank = 0,
                                              Scope* scope = nullptr);
  bool fault_tolerant() const { return fault_tolerant_; }
  const FaultStats& fault_stats() const { return fault_stats_; }

  // The workers' default group (nullptr in a one-worker job without store).
  std::shared_ptr<comm::ProcessGroup> process_group() const { return group_; }
  // The group the last minimize() all-reduces on (for its statistics).
  std::shared_ptr<comm::ProcessGroup> training_group() const { return training_group_; }

 private:
  friend class DistributedOptimizer;
  // The ring for `strategy`: the default group, or a new one when it needs
  // more communicators or the hierarchical backend.
  int TrainingRing(const DistributedStrategy& strategy);
  void CheckInit(const char* what) const;
  bool ps_mode() const { return role_ != nullptr && !role_->is_collective && !role_->non_distributed; }
  // Drops what the last init and minimize() set up (a re-init).
  void Reset();
  // True when a parameter-server call `what` has nothing to do in this job
  // (collective or non-distributed; see init_server).
  bool SkipOutsidePs(const char* what) const;
  void TranspilePs(Program& main, Program& startup, const DistributedStrategy& strategy);
  const HeterSplit& RequireHeter(const char* what) const;
  struct PsJob;
  std::shared_ptr<PsJob> ps_;
  void SaveOnFirstWorker(const char* what, const std::function<void()>& save);
  void SavePsTables(const std::string& dir);
  // The store the workers meet in: the collective store, else the job's
  // (opened once); nullptr with one worker.
  std::shared_ptr<comm::Store> WorkersStore();

  // Fault tolerance: drops the failed groups, agrees on the next world and
  // rebuilds the groups and the state (see run_step).
  void Reform(Executor& exe, const Program& program, Scope* scope, StepState& state,
              const std::string& failure);
  std::vector<int> AgreeOnMembers(int generation, const StepState& state, const std::string& failure);
  void SyncState(const Program& program, Scope* scope, StepState& state, int root);
  // Persistable variables written before the step's last collective
  // (computed once per program version).
  const std::vector<std::string>& PreCommitWrites(const Program& program);

  // Worker 0, when it hosts the store, waits (bounded) until every other
  // worker has disconnected, so none loses the store in its last request.
  static void WaitForStoreClients(const comm::TCPStoreServer& server);

  std::unique_ptr<RoleInfo> role_;
  FleetOptions options_;
  // Worker 0's store when no launcher hosts one (RoleInfo::host_store);
  // declared before store_ so it outlives every use of the store.
  std::unique_ptr<comm::TCPStoreServer> store_server_;
  std::shared_ptr<comm::Store> store_;
  std::shared_ptr<comm::ProcessGroup> group_;
  std::shared_ptr<comm::ProcessGroup> training_group_;
  std::vector<int> rings_;  // registered by this fleet; unregistered on destruction
  // Fault tolerance: the raw job store's "flotilla/ft" keys, this worker's
  // id (its first worker_index), the current world's members by id, and
  // the training group's options (rebuilt per generation).
  bool fault_tolerant_ = false;
  std::shared_ptr<comm::Store> ft_store_;
  int ft_id_ = 0;
  std::vector<int> ft_members_;
  comm::ProcessGroupOptions default_group_options_;
  std::optional<comm::ProcessGroupOptions> training_group_options_;  // when not the default group
  FaultStats fault_stats_;
  struct PreCommit {
    uint64_t program = 0, version = 0;
    std::vector<std::string> names;
  };
  std::optional<PreCommit> pre_commit_;  // of the last program run_step ran
  std::optional<std::chrono::steady_clock::time_point> failure_seen_;  // until the next commit
  int inits_ = 0;  // the generation of the workers' keys in the store
  int groups_made_ = 0;
  int saves_ = 0;
  int store_barriers_ = 0;
  int dataset_rounds_ = 0;  // global_shuffle / sum_over_workers calls
  Program* main_ = nullptr;
  Program* startup_ = nullptr;
};

// ---- the process-wide fleet (Paddle's module-level functions) ----
Fleet& default_fleet();
void init(const RoleMaker& role, FleetOptions options = {});
bool is_worker();
bool is_server();
bool is_first_worker();
int worker_index();
int worker_num();
std::vector<std::string> worker_endpoints();
std::vector<std::string> server_endpoints();
void barrier_worker();
DistributedOptimizer distributed_optimizer(optimizer::Optimizer& opt, DistributedStrategy strategy = {});
Program& main_program();
Program& startup_program();
bool is_heter_worker();
bool is_heter_job();
void run_heter_worker();
std::vector<Tensor> heter_train_step(Executor& exe, const FeedMap& feed,
                                     const std::vector<std::string>& fetch_list = {});
void heter_flush(Executor& exe, Scope* scope = nullptr);
void save_persistables(const Executor& exe, const std::string& dir, const Program* main = nullptr,
                       const Scope* scope = nullptr);
void save_inference_model(const Executor& exe, const std::string& dir,
                          const std::vector<std::string>& feed_names,
                          const std::vector<std::string>& fetch_names, const Program* main = nullptr,
                          const Scope* scope = nullptr);
// Parameter-server jobs (see Fleet::init_server ...).
void init_server(const std::string& model_dir = "");
void run_server();
void init_worker(bool servers_loaded = false);
void stop_worker();
int64_t shrink();
void prefetch_sparse(const FeedMap& next_feed);
std::optional<std::vector<Tensor>> run_step(Executor& exe, const Program& program,
                                            const FeedMap& feed,
                                            const std::vector<std::string>& fetch_list,
                                            StepState& state, int64_t samples_per_rank = 0,
                                            Scope* scope = nullptr);

// Applies `strategy`'s exec_strategy to `program` (Paddle's
// ExecutionStrategy, as CompiledProgram.with_data_parallel and
// distributed_optimizer(...).minimize do), after Validate (throws as it
// does):
// - num_threads, when set: the threads this process's GEMM kernels use, at
//   most the CPUs it may run on (the executor runs a program's ops in order
//   on one thread; the threads go to the large kernels);
// - num_iteration_per_run and num_iteration_per_drop_scope (when set; unset:
//   temporaries kept) become program.run_settings(), which Executor::Run
//   honours.
void ApplyExecutionStrategy(const DistributedStrategy& strategy, Program& program);

// Paddle's fleet.util.get_file_shard: `files` split into worker_num
// contiguous blocks, the first len % worker_num of them one file longer;
// returns block worker_index (possibly empty). Throws InvalidArgument when
// worker_index is not in [0, worker_num).
std::vector<std::string> FileShard(const std::vector<std::string>& files, int worker_index, int worker_num);

// Loads what save_persistables wrote into `scope` (default global_scope()),
// in any process — distributed or not.
void load_persistables(const Executor& exe, const std::string& dir, const Program& main,
                       Scope* scope = nullptr);

}  // namespace flotilla::fleet
