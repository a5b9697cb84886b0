// Executor: runs a Program's global block on a Place, in a Scope.
//
// Persistable variables (parameters, optimizer state) live in the scope the
// caller passes (default global_scope()); temporaries live in a scope the
// executor owns, one per (program, scope), whose lookups fall back to the
// caller's and which is reused across runs, so a training loop allocates
// nothing after its first step. The caller's scope may be destroyed before
// the executor, but not used by it afterwards. Programs are prepared
// once per version (ops resolved to kernels and variables). Each Run honours
// the program's RunSettings (Paddle's ExecutionStrategy): it runs the
// program `iterations` times and frees its temporaries every
// `drop_scope_every` runs, counted per (program, scope).
//
// Run() is not thread-safe for one Executor; use one Executor per thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/core/place.h"
#include "flotilla/core/tensor.h"
#include "flotilla/framework/program.h"
#include "flotilla/framework/scope.h"

namespace flotilla {

using FeedMap = std::map<std::string, Tensor>;

// Where each run of one RunFrom call takes its feed (a data loader's next
// batch). Called once per run, on the calling thread; what it throws ends
// the call.
using FeedSource = std::function<FeedMap()>;

// Observes each op as it runs: (op, start ns, end ns). For traces and tests
// of communication overlap. Called on the executor's thread.
using OpObserver = std::function<void(const OpDesc&, int64_t, int64_t)>;

class Executor {
 public:
  explicit Executor(Place place = CPUPlace());
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Feeds `feed`, runs every op of block 0 and returns copies of the fetched
  // variables in order. Throws InvalidArgument naming the variable for a feed
  // of the wrong shape or dtype, NotFound for a feed or fetch name that is not
  // in the program, and InvalidArgument for a data variable the program reads
  // but that was not fed. Fetch variables by name: {loss.name(), "acc"}.
  // With program.run_settings().iterations > 1, runs it that many times,
  // feeding `feed` to each, and returns the last run's fetches.
  std::vector<Tensor> Run(const Program& program, const FeedMap& feed = {},
                          const std::vector<std::string>& fetch_list = {},
                          Scope* scope = nullptr);
  // Run, each of the program's iterations fed by `next_feed()`.
  std::vector<Tensor> RunFrom(const Program& program, const FeedSource& next_feed,
                              const std::vector<std::string>& fetch_list = {}, Scope* scope = nullptr);

  // Paddle's spellings, for code moved from fluid: exe.run(startup).
  std::vector<Tensor> run(const Program& program, const FeedMap& feed = {},
                          const std::vector<std::string>& fetch_list = {},
                          Scope* scope = nullptr) {
    return Run(program, feed, fetch_list, scope);
  }
  void close() { Close(); }

  // Tells every remote service this trainer used (parameter servers) that it
  // has finished, by running the hooks registered with AddCloseHook. Safe to
  // call more than once.
  void Close();
  // Hooks are process-wide: the distributed runtimes register theirs.
  static void AddCloseHook(std::function<void()> hook);

  // The scope holding the temporaries (and feeds) of `program` run in
  // `scope` (default global_scope()); nullptr before its first run. For
  // debugging and tests: a feed shares the caller's tensor there.
  Scope* local_scope(const Program& program, const Scope* scope = nullptr) const;

  // Frees the temporaries of `program` run in `scope` (default
  // global_scope()): its local scope is replaced by an empty one and the
  // program is prepared again at its next run (Paddle's
  // ExecutionStrategy.num_iteration_per_drop_scope). Persistable variables
  // are untouched; a program never run is left alone.
  void DropLocalScope(const Program& program, Scope* scope = nullptr);

  void set_op_observer(OpObserver observer) { observer_ = std::move(observer); }
  const Place& place() const { return place_; }

 private:
  struct Prepared;
  Prepared& Prepare(const Program& program, Scope& scope);
  // One run of `program`; returns the fetches.
  std::vector<Tensor> RunOnce(const Program& program, const FeedMap& feed,
                              const std::vector<std::string>& fetch_list, Scope& scope);
  // The program's RunSettings: its iterations, each fed by `feed_for(i)`.
  std::vector<Tensor> RunIterations(const Program& program, const std::function<const FeedMap&(int)>& feed_for,
                                    const std::vector<std::string>& fetch_list, Scope& scope);

  Place place_;
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Prepared>> cache_;  // (program id, scope id)
  OpObserver observer_;
  bool closed_ = false;
};

}  // namespace flotilla
