// Baseline: raw Gloo AllreduceRingChunked over Gloo's TCP transport, with
// Gloo's own FileStore for rendezvous — what a user of libgloo gets.
//
//   gloo_allreduce <rank> <size> <store_dir> [max_bytes]
// Rank 0 prints bench_allreduce JSON lines (impl "gloo_raw").
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
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
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->connectFullMesh(store, device);
  gloo::BarrierAllToAll barrier(context);
  for (size_t bytes : flotilla::bench::AllreduceSizes()) {
    if (bytes > max_bytes) break;
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
