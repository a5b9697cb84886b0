// The ops a distributed program holds beyond the framework's: collective ops
// (c_allreduce_sum, c_broadcast, sync_batch_norm, ...) and parameter-server
// ops (send, recv, distributed_lookup_table, listen_and_serv, ...).
#pragma once

namespace flotilla::fleet {

// Registers every framework op, every collective op and every
// parameter-server op with OpRegistry::Global(). Fleet's passes and the
// transpiler register what they insert themselves; a process that runs a
// distributed program it did not build (a loaded program, the Python
// module) calls this first. Idempotent, thread-safe.
void RegisterOps();

}  // namespace flotilla::fleet
