#include "comm/shm/peer_memory.h"

#include <sys/uio.h>

#include <cerrno>

namespace flotilla::comm::shm {

int ReadPeer(int64_t pid, void* local, uint64_t remote, size_t bytes) {
  char* to = static_cast<char*>(local);
  while (bytes > 0) {
    iovec l{to, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid), &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EFAULT;
    to += n;
    remote += uint64_t(n);
    bytes -= size_t(n);
  }
  return 0;
}

}  // namespace flotilla::comm::shm
