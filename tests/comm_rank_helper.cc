// One rank of a multi-process comm test. Joins a process group through a
// TCPStore and runs a mode:
//   check  — allreduce/broadcast/allgather/send-recv checks, exit 0 when right
//   loop   — allreduce until an error (used by the kill test)
// On any flotilla error it prints "ERROR <kind>: <message>" and exits 3.
//
//   comm_rank_helper --store H:P --rank R --size N [--backend B] [--host-id H]
//       [--gloo-host A] [--host-store] [--timeout-ms T] [--mode check|loop]
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <numeric>

#include "flotilla/comm/process_group.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/error.h"
#include "flotilla/common/strings.h"

using namespace flotilla;
using namespace flotilla::comm;

namespace {

struct Args {
  std::string store, backend = "auto", host_id, gloo_host, mode = "check";
  int rank = 0, size = 1, timeout_ms = 30000;
  bool host_store = false;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (f == "--store") a.store = next();
    else if (f == "--rank") a.rank = atoi(next().c_str());
    else if (f == "--size") a.size = atoi(next().c_str());
    else if (f == "--backend") a.backend = next();
    else if (f == "--host-id") a.host_id = next();
    else if (f == "--gloo-host") a.gloo_host = next();
    else if (f == "--timeout-ms") a.timeout_ms = atoi(next().c_str());
    else if (f == "--mode") a.mode = next();
    else if (f == "--host-store") a.host_store = true;
  }
  return a;
}

void Expect(bool ok, const std::string& what) {
  if (!ok) FLOTILLA_THROW(Internal, "check failed: ", what);
}

void Check(ProcessGroup& pg) {
  const int n = pg.size(), r = pg.rank();
  for (size_t count : {size_t(0), size_t(5), size_t(100000), size_t(3) << 20}) {
    std::vector<double> d(count, r + 1.0);
    pg.allreduce(d.data(), count, DType::kFloat64, ReduceOp::kSum);
    for (double v : d) Expect(v == n * (n + 1) / 2.0, "allreduce sum");
    std::vector<int32_t> m(count, r);
    pg.allreduce(m.data(), count, DType::kInt32, ReduceOp::kMax);
    for (int32_t v : m) Expect(v == n - 1, "allreduce max");
    std::vector<int64_t> b(count, r == n - 1 ? 9 : 0);
    pg.broadcast(b.data(), count, DType::kInt64, n - 1);
    for (int64_t v : b) Expect(v == 9, "broadcast");
  }
  // Small (one flag round) and large (across processes: single copy on shm).
  for (size_t count : {size_t(1000), size_t(100000)}) {
    std::vector<float> in(count, float(r)), out(count * n);
    pg.allgather(in.data(), out.data(), in.size(), DType::kFloat32);
    for (int t = 0; t < n; ++t) Expect(out[t * count + count - 1] == float(t), "allgather");
  }
  if (n > 1) {
    std::vector<char> msg(300000, char(r)), got(300000);
    if (r == 0) {
      pg.send(msg.data(), msg.size(), 1, 5);
    } else if (r == 1) {
      pg.recv(got.data(), got.size(), 0, 5);
      Expect(got[299999] == 0, "send/recv");
    }
  }
  pg.barrier();
}

int Run(const Args& a) {
  std::unique_ptr<TCPStoreServer> server;
  if (a.host_store && a.rank == 0) {
    HostPort hp = ParseHostPort(a.store, "--store");
    server = TCPStoreServer::Start(hp.host, hp.port);
  }
  auto store = ConnectStore(a.store);
  ProcessGroupOptions o;
  o.backend = a.backend;
  o.timeout = std::chrono::milliseconds(a.timeout_ms);
  o.stall_warning_after = std::chrono::milliseconds(a.timeout_ms / 2);
  if (!a.host_id.empty()) o.host_id = a.host_id;
  o.gloo_hostname = a.gloo_host;
  auto pg = NewProcessGroup(store, a.rank, a.size, o);
  store->setString("ready/" + std::to_string(a.rank), "1");
  if (a.mode == "loop") {
    std::vector<float> d(1 << 16, 1.0f);
    while (true) pg->allreduce(d.data(), d.size(), DType::kFloat32, ReduceOp::kSum);
  }
  Check(*pg);
  std::cout << "OK rank " << a.rank << " backend " << pg->backend() << std::endl;
  // Rank 0 may host the store: keep it up until everyone is done.
  store->add("done", 1);
  std::vector<std::string> keys;
  if (a.rank == 0) {
    while (store->add("done", 0) < a.size) usleep(10000);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(Parse(argc, argv));
  } catch (const Error& e) {
    std::cout << "ERROR " << ErrorCodeName(e.code()) << ": " << e.what() << std::endl;
    return 3;
  }
}
