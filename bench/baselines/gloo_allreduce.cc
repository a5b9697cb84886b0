// Baseline: raw Gloo AllreduceRingChunked over Gloo's TCP transport, with
// Gloo's own FileStore for rendezvous — what a user of libgloo gets.
//
// Each size runs on fresh connections. Gloo's TCP pair sizes its socket's
// send buffer to the first message it sends (SO_SNDBUF, which also turns off
// the kernel's autotuning) and only ever grows it to a larger message: after
// the 4 KB run (1 KB chunks, a send buffer at the kernel's ~4.5 KB minimum),
// the 16 KB run's 4 KB chunks no longer fit, and each write waits for a
// delayed ACK: 45-90 ms per allreduce instead of ~60 us. Fresh connections
// measure every size as Gloo runs it when that size is what it carries.
//
//   gloo_allreduce <rank> <size> <store_dir> [max_bytes]
// Rank 0 prints bench_allreduce JSON lines (impl "gloo_raw").
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdlib>
#include <iostream>

#include "../bench_allreduce_timing.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: gloo_allreduce <rank> <size> <store_dir> [max_bytes]\n";
    return 2;
  }
  const int rank = atoi(argv[1]), size = atoi(argv[2]);
  const size_t max_bytes = argc > 4 ? strtoull(argv[4], nullptr, 10) : size_t(64) << 20;
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[3]);
  for (size_t bytes : flotilla::bench::AllreduceSizes()) {
    if (bytes > max_bytes) break;
    gloo::rendezvous::PrefixStore prefixed(std::to_string(bytes), store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->connectFullMesh(prefixed, device);
    gloo::BarrierAllToAll barrier(context);
    const size_t count = bytes / sizeof(float);
    std::vector<float> data(count, 1.0f);
    gloo::AllreduceRingChunked<float> allreduce(context, {data.data()}, int(count));
    allreduce.run();
    if (data[0] != float(size)) {
      std::cerr << "gloo_allreduce: wrong result " << data[0] << "\n";
      return 1;
    }
    double sec = flotilla::bench::MedianSecondsPerOp(
        bytes, [&] { allreduce.run(); }, [&] { barrier.run(); });
    if (rank == 0) std::cout << flotilla::bench::AllreduceJson("gloo_raw", bytes, size, sec) << std::endl;
  }
  return 0;
}
