// The ops that bridge the framework and the parameter servers. The
// DistributeTranspiler inserts them; they find the trainer's PsClient and
// communicators in the process-wide ps::TrainerRuntime.
//
//   ps_trainer_init   first run only: connects (PsClient + the mode's
//                     communicator), trainer 0 seeds the servers with its
//                     initial values, every trainer pulls them after a
//                     barrier; registers Executor::close() → finish
//   ps_send           pushes the gradients Grad (dense) and SparseGrad
//                     (SelectedRows): sync adds them to the step's round,
//                     async queues them on the communicator, GEO applies
//                     sparse SGD to the locally cached rows
//   ps_barrier        sync: waits until the servers applied the step
//   ps_recv           pulls the dense parameters Out (sync: from the
//                     servers; async: the communicator's latest values)
//   ps_geo_step       GEO: counts a local step; every k_steps pushes deltas
//   ps_prefetch_sparse  GEO: the step's fed Ids of every lookup pulled into
//                     the trainer's cache in one round trip
//   distributed_lookup_table(_grad)  rows of a server table for Ids; the
//                     gradient is a SelectedRows over Ids
//   listen_and_serv   runs a PsServer with the tables in attribute "tables"
//                     until every trainer has finished
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace flotilla {
class ExecutionContext;
class Tensor;
}

namespace flotilla::fleet {

// Registers the ops above (and every framework op). Idempotent, thread-safe.
void RegisterPsOps();

namespace internal {
void RegisterPsTrainerOps();
void RegisterPsLookupOps();
void RegisterPsServerOps();
// The token servers demand and trainers send: the op's "token" attribute,
// else FLOTILLA_PS_TOKEN, else the job secret (RequireJobSecret: throws
// InvalidArgument naming the variables when none is set and the job does not
// run with FLOTILLA_INSECURE=1).
std::string PsToken(const ExecutionContext& ctx);
// The same from a token attribute's value; `who` names the caller in the error.
std::string PsToken(const std::string& token_attr, const std::string& who);
// The ids other than padding_idx, in order: what ps_prefetch_sparse and
// fleet::prefetch_sparse hand to GEO's cache for one lookup.
std::vector<int64_t> WithoutPadding(const int64_t* ids, int64_t n, int64_t padding_idx);
// Async mode: starts pulling, on a background thread, the rows of the
// lookups (Ids[i] of table tables[i]) a later step on this thread makes;
// that step's ps_prefetch_sparse takes them when its keys are exactly
// these (else pulls afresh). Up to four pulls ahead per thread; a fifth
// drops the oldest.
void PullAheadForLookups(const std::vector<std::string>& tables, const std::vector<const Tensor*>& ids,
                         const std::vector<int64_t>& padding);
// Held around every call into the trainer's GeoCommunicator (not
// thread-safe) by the ops, which several threads may run at once.
std::mutex& GeoMutex();
}  // namespace internal

}  // namespace flotilla::fleet
