// Single-copy reads of a peer process's memory (private to shm): Linux
// cross-memory attach (process_vm_readv) copies straight from the buffer a
// peer exposes by address into ours, without staging through shared memory.
// The kernel allows it when this process may ptrace the peer (same user, and
// neither Yama's ptrace_scope nor a seccomp filter forbids it), which the
// backend probes once per group.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flotilla::comm::shm {

// Copies `bytes` from address `remote` of process `pid` to `local`. Returns
// 0, or the errno of the failure (EPERM / ENOSYS: not allowed here; ESRCH:
// the process is gone; EFAULT: bad address).
int ReadPeer(int64_t pid, void* local, uint64_t remote, size_t bytes);

}  // namespace flotilla::comm::shm
