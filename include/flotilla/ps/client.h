// PsClient: a trainer's connection to every parameter server.
//
// Dense parameters are addressed by name and sliced internally with
// SliceDense (the same function the servers use); sparse rows are routed by
// the options' slicer. Every call fans out to the servers concerned in
// parallel and returns when all have answered.
//
// Failure: each RPC attempt has a deadline (rpc_timeout); an unreachable
// server is retried with backoff until retry_timeout has passed, then the
// call throws Unavailable (or DeadlineExceeded) naming the server endpoint.
// A server that rejects a request raises the matching flotilla::Error with
// the server's message; a wrong token raises InvalidArgument saying so.
//
// Thread-safety: all methods may be called concurrently (the communicators
// push and pull from their own threads).
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flotilla/common/tls_files.h"
#include "flotilla/core/selected_rows.h"
#include "flotilla/core/tensor.h"
#include "flotilla/ps/slicing.h"

namespace flotilla::ps {

struct PsClientOptions {
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(30)};    // per attempt
  std::chrono::milliseconds retry_timeout{std::chrono::seconds(30)};  // total for one server
  int max_attempts = 30;
  // Barrier attempts wait this long (must exceed the servers' barrier_timeout).
  std::chrono::milliseconds barrier_timeout{std::chrono::minutes(11)};
  // Save, Load and Shrink attempts wait this long: their work grows with the
  // tables (an ssd table of 20M rows writes gigabytes), not with the request.
  std::chrono::milliseconds table_io_timeout{std::chrono::hours(1)};
  std::string token;  // sent with every request when non-empty
  // TLS to the servers (flotilla/common/tls_files.h): their certificates are
  // checked against `ca`; cert/key are presented when given (the servers
  // demand them when they have a CA). Default: plaintext.
  TlsFiles tls;
  // Largest request or reply on the wire (as PsServerOptions).
  int max_message_bytes = 256 << 20;
  SparseSlicer slicer = ModSlicer;
  int64_t min_block_size = kMinBlockSize;  // must match the servers' tables
  // A server's share of a sparse pull larger than this many keys is split
  // into concurrent calls, so the server looks up one part while the
  // others are on the wire; at most `pull_calls` calls per pull in all
  // (0: this machine's cores), never fewer than one per server.
  int64_t pull_split_keys = 4096;
  int pull_calls = 0;
};

// A dense variable for batched calls. For pulls `value` is the destination
// (float32; its shape gives numel); for pushes, the gradient or values.
struct DenseVar {
  std::string name;
  Tensor value;
  int64_t row_width = 1;  // product of dims[1:], as the table was created with
  // Gradient pushes: the step's learning rate when it is scheduled (unset:
  // the servers' constant rate).
  std::optional<float> learning_rate = std::nullopt;
};

class PsClient {
 public:
  // Connects lazily: no RPC happens until the first call.
  PsClient(std::vector<std::string> endpoints, int trainer_id, int num_trainers,
           PsClientOptions options = {});
  ~PsClient();
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

  int trainer_id() const;
  int num_trainers() const;
  int num_servers() const;
  const std::vector<std::string>& endpoints() const;
  const PsClientOptions& options() const;

  // ---- dense ----
  // Fills each var.value (float32, shape set by the caller) from the servers.
  // The values land in var.value's buffer, shared with the caller's tensor
  // when that tensor was allocated.
  void PullDense(std::span<DenseVar> vars);
  void PullDense(const std::string& name, Tensor* value, int64_t row_width = 1);
  // Sends gradients: applied at once (async) or added to the step's sync
  // round, applied at the next Barrier().
  void PushDense(std::span<const DenseVar> grads);
  void PushDense(const std::string& name, const Tensor& grad, int64_t row_width = 1);
  // Overwrites the servers' values (trainer 0 seeding the servers).
  void InitDense(std::span<const DenseVar> values);
  // GEO: the servers add `delta` to their values.
  void PushDenseDelta(std::span<const DenseVar> deltas);

  // ---- sparse ----
  // Returns rows [keys.size(), dim] (rows unknown to a server are created
  // with its initializer). An empty key list returns a [0, 0] tensor.
  Tensor PullSparse(const std::string& name, std::span<const int64_t> keys);
  // The same into *out, reusing its buffer when large enough: steps that
  // pull into one tensor allocate once.
  void PullSparse(const std::string& name, std::span<const int64_t> keys, Tensor* out);
  // The rows handed over server call by server call, as each answer
  // arrives (while the others are still on the wire), straight from the
  // reply: sink(positions, rows, dim) receives rows [positions.size(), dim]
  // where row j belongs to keys[positions[j]]. Every key is delivered
  // exactly once; the spans live only during the sink call, which runs on
  // the calling thread. An exception from the sink cancels the pull and
  // propagates.
  using RowSink =
      std::function<void(std::span<const uint32_t> positions, const float* rows, int64_t dim)>;
  void PullSparse(const std::string& name, std::span<const int64_t> keys, const RowSink& sink);
  // One table's part of PullSparseTables.
  struct TablePull {
    std::string table;
    std::span<const int64_t> keys;
    RowSink sink;
  };
  // The rows of several tables in one round trip: each server gets one call
  // carrying its keys of every table, and each table's rows reach its sink
  // as PullSparse(table, keys, sink) hands them over. A step that looks up
  // two tables waits for one reply per server instead of two in sequence.
  void PullSparseTables(std::span<const TablePull> pulls);
  // grads is [keys.size(), dim] float32. Keys may repeat.
  // `lr`: the step's learning rate when it is scheduled (unset: the
  // servers' constant rate).
  void PushSparse(const std::string& name, std::span<const int64_t> keys, const Tensor& grads,
                  std::optional<float> lr = std::nullopt);
  void PushSparse(const std::string& name, const SelectedRows& grads,
                  std::optional<float> lr = std::nullopt);
  void InitSparse(const std::string& name, std::span<const int64_t> keys, const Tensor& values);
  void PushSparseDelta(const std::string& name, std::span<const int64_t> keys, const Tensor& deltas);

  // ---- async variants: run on a background thread; the future rethrows ----
  // The tensors are shared, not copied: do not modify them until the future
  // is ready. The client must outlive the future.
  std::future<void> PushDenseAsync(std::vector<DenseVar> grads);
  std::future<void> PushSparseAsync(std::string name, std::vector<int64_t> keys, Tensor grads);
  std::future<Tensor> PullSparseAsync(std::string name, std::vector<int64_t> keys);

  // ---- control ----
  // Blocks until every unfinished trainer has reached the barrier on every
  // server. In sync mode the servers apply the step's averaged gradients
  // before releasing, so a pull after Barrier() sees the new values.
  void Barrier();
  // Every server saves / loads its tables under dir (a path on the servers,
  // under their model root; no symbolic link on the way is followed).
  // With `parent_must_exist`, the servers create `dir` itself only: a
  // server still saving after its parent was removed (a failed checkpoint
  // save removes its temporary directory) fails instead of recreating it.
  void Save(const std::string& dir, bool parent_must_exist = false);
  void Load(const std::string& dir);
  // Ends a pass on every server's sparse tables (SparseTable::Shrink);
  // returns the rows dropped over all servers.
  int64_t Shrink();
  // Tells every server this trainer is done (Executor::close()); idempotent.
  // Servers whose trainers have all finished leave PsServer::Run().
  void Finish();
  // Asks every server to stop serving now.
  void StopServers();
  // Transport baseline for benchmarks: sends `payload` to server `server`
  // and returns its reply: reply_bytes bytes, or the payload itself when
  // reply_bytes < 0. Same channel, deadline and retries as every other call.
  std::string Echo(int server, const std::string& payload, int64_t reply_bytes = -1);
  // The same echo to every server at once, fanned out like every other call.
  void EchoAll(const std::string& payload, int64_t reply_bytes);

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace flotilla::ps
