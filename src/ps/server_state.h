// PsServer::State: everything the service handlers share with PsServer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "flotilla/common/safe_file.h"
#include "flotilla/ps/server.h"
#include "ps/request_dedup.h"
#include "ps/trainer_barrier.h"

namespace flotilla::ps {

class PsServiceImpl;

struct PsServer::State {
  explicit State(PsServerOptions opts);
  ~State();

  // Applies every table's pending sync gradients divided by `live_trainers`.
  void ApplyPending(int live_trainers);
  DenseTable& Dense(const std::string& name);
  SparseTable& Sparse(const std::string& name);
  void RequestStop();
  // `shown` names the directory in logs (default: `dir`).
  void Save(const std::string& dir, const std::string& shown = "") const;
  void Load(const std::string& dir, const std::string& shown = "");
  // Shrinks every sparse table: (rows dropped, rows left).
  std::pair<int64_t, int64_t> Shrink();
  // A directory named by a trainer's request, resolved under the model
  // root; throws InvalidArgument naming it when it would leave the root.
  std::string ConfinedPath(const std::string& requested) const;
  // ConfinedPath's directory, opened from the model root one component at a
  // time with O_NOFOLLOW: a symbolic link inside the root (or the root
  // itself being one) is refused with InvalidArgument naming it, so a link
  // cannot lead a Save or Load out of the root. Missing components are
  // created when `create` (the parents only when `create_parents`);
  // NotFound names the first missing one otherwise.
  SafeDir ConfinedDir(const std::string& requested, bool create, bool create_parents) const;

  PsServerOptions options;
  std::string wire_token;  // WireToken(options.token): what requests must carry
  // Tables are added before Start() and never removed: lookups need no lock.
  std::map<std::string, std::unique_ptr<DenseTable>> dense;
  std::map<std::string, std::unique_ptr<SparseTable>> sparse;
  TrainerBarrier barrier;
  RequestDedup dedup;  // push ids already applied

  std::unique_ptr<PsServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool stop_requested = false;  // guarded by mu
  bool shut_down = false;       // guarded by mu; a Run() began the shutdown
  bool stopped = false;         // guarded by mu; the shutdown is complete
  int runners = 0;              // guarded by mu; Run() calls in progress
  std::atomic<int64_t> refused{0};  // requests refused for a missing or wrong token

  // Test hook: when set, every Run() calls it (without the lock) after its
  // last wait, while it still touches the state; a test pauses a Run() on
  // another thread there to check that ~PsServer waits for it. Set and
  // cleared while no Run() is in progress.
  static inline std::function<void()> before_run_returns;
};

}  // namespace flotilla::ps
