// GeoCommunicator: the trainer side of GEO mode. The trainer optimises its
// own copy of the parameters; every k_steps the communicator pushes the
// change since the last sync (the delta, divided by the number of trainers
// by default, as Paddle's GEO-SGD does) and pulls the servers' fresh values.
//
//   GeoCommunicator geo(client, {.k_steps = 100});
//   geo.AddDense("fc_0.w_0", w);       // w: the trainer's parameter tensor
//   geo.Init();                         // trainer 0 seeds the servers
//   for (...) { local step updating w in place; geo.Step(); }
//   geo.Sync();                         // push what is left
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "flotilla/core/tensor.h"
#include "flotilla/ps/client.h"

namespace flotilla::ps {

struct GeoOptions {
  int k_steps = 100;
  bool scale_delta_by_trainers = true;
  // Step()'s syncs exchange with the servers on a background thread while
  // training goes on (as Paddle's GEO communicator does); the fresh dense
  // values are applied at a later Step(), keeping the local progress made
  // meanwhile. Sync() always waits for its exchange.
  bool background_sync = true;
};

// Not thread-safe: one training loop drives it (PrefetchNext's pull runs on
// a thread of its own and touches only what it pulls).
class GeoCommunicator {
 public:
  GeoCommunicator(std::shared_ptr<PsClient> client, GeoOptions options);
  ~GeoCommunicator();
  GeoCommunicator(const GeoCommunicator&) = delete;
  GeoCommunicator& operator=(const GeoCommunicator&) = delete;

  // `param` is shared, not copied: syncs write fresh values into its buffer.
  void AddDense(const std::string& name, Tensor param, int64_t row_width = 1);
  // A sparse table whose rows the trainer reads with PullSparse and writes
  // back with UpdateSparse.
  void AddSparse(const std::string& name);
  // Trainer 0 writes its dense values to the servers; after a barrier the
  // others pull them, and a second barrier keeps any delta from landing
  // before every trainer holds the seed. Call once, on every trainer.
  void Init();

  // Local rows [keys.size(), dim]: cached rows, missing ones fetched from the
  // servers (and remembered as the base of the next delta).
  Tensor PullSparse(const std::string& name, std::span<const int64_t> keys);
  // Brings the rows of several tables' keys into the cache in one round
  // trip (PsClient::PullSparseTables): a step's lookups then read every
  // table locally instead of waiting on the servers once per table.
  struct TableKeys {
    std::string name;
    std::span<const int64_t> keys;
  };
  // Rows PrefetchNext pulled for this batch are taken from there.
  void Prefetch(std::span<const TableKeys> tables);
  // Starts pulling, on a background thread, the rows of `tables`' keys that
  // are not cached now: called with the next batch's ids before the current
  // step runs, that step's compute hides the next one's round trip. The
  // Prefetch of the same batch (same tables and distinct keys) takes them,
  // unless a sync came between (its deltas may postdate them: those rows
  // are pulled again). At most four batches are pulled ahead (the oldest
  // is dropped); the keys are copied.
  void PrefetchNext(std::span<const TableKeys> tables);
  // A lookup's output: out[i] = the row of ids[i] ([ids, dim] floats; dim
  // must be the table's width), zeros where ids[i] == padding_idx; rows not
  // cached are fetched. Returns the ids looked up (padding left out).
  int64_t Gather(const std::string& name, std::span<const int64_t> ids, int64_t padding_idx, float* out,
                 int64_t dim);
  // Writes locally optimised rows back into the cache (keys from PullSparse).
  void UpdateSparse(const std::string& name, std::span<const int64_t> keys, const Tensor& rows);
  // Local SGD in the cache: row(keys[i]) -= lr * grads[i], fetching rows
  // not cached yet. Keys may repeat (each applies, as merged SGD would).
  void SgdSparse(const std::string& name, std::span<const int64_t> keys, const Tensor& grads,
                 float lr);

  // Counts a local step; every k_steps syncs (on a background thread with
  // options.background_sync: the pull's values are applied at a later
  // Step, plus the local progress since). Returns true when it synced.
  bool Step();
  // Waits for a background sync, then pushes dense and sparse deltas, pulls
  // fresh dense values into the parameters and drops the sparse cache
  // (next pulls fetch fresh rows).
  void Sync();
  // Waits until a background sync has reached the servers and applies the
  // values it pulled (what a save of the servers' tables needs first).
  void Wait();
  int64_t syncs() const;
  // Starts over from the servers' values (after they loaded a checkpoint):
  // pulls the dense parameters, takes them as the base of the next delta
  // and drops the sparse cache. Local changes since the last sync are lost.
  void Restart();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace flotilla::ps
