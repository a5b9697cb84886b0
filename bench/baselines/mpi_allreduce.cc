// Baseline: OpenMPI's collectives (float sum, allreduce in place), run under
// mpirun, timed like bench_allreduce's Flotilla ranks.
//   mpirun -np 2 mpi_allreduce [max_bytes] [op,op,...] [min_bytes]
// ops: allreduce (default), broadcast, allgather, reduce_scatter, reduce.
// Rank 0 prints bench_allreduce JSON lines (impl "mpi").
#include <mpi.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>

#include "../bench_allreduce_timing.h"

namespace {

// One collective over `bytes` (nccl-tests' meaning, see the timing header);
// returns false when the result is wrong.
struct Buffers {
  std::vector<float> a, b;
};

std::function<void()> MakeOp(const std::string& op, size_t bytes, int size, int rank,
                             Buffers& buf) {
  const int count = int(bytes / sizeof(float));
  const int part = count / size;
  buf.a.assign(count, 1.0f);
  buf.b.assign(count, 0.0f);
  float* a = buf.a.data();
  float* b = buf.b.data();
  if (op == "broadcast") return [=] { MPI_Bcast(a, count, MPI_FLOAT, 0, MPI_COMM_WORLD); };
  if (op == "allgather") {
    return [=] { MPI_Allgather(a, part, MPI_FLOAT, b, part, MPI_FLOAT, MPI_COMM_WORLD); };
  }
  if (op == "reduce_scatter") {
    return [=] { MPI_Reduce_scatter_block(a, b, part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
  }
  if (op == "reduce") {
    return [=] {
      MPI_Reduce(rank == 0 ? MPI_IN_PLACE : a, a, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    };
  }
  return [=] { MPI_Allreduce(MPI_IN_PLACE, a, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t max_bytes = argc > 1 ? strtoull(argv[1], nullptr, 10) : size_t(64) << 20;
  const size_t min_bytes = argc > 3 ? strtoull(argv[3], nullptr, 10) : 0;
  std::vector<std::string> ops;
  std::stringstream list(argc > 2 ? argv[2] : "allreduce");
  for (std::string op; std::getline(list, op, ',');) ops.push_back(op);
  int status = 0;
  for (const auto& op : ops) {
    for (size_t bytes : flotilla::bench::AllreduceSizes()) {
      if (bytes > max_bytes) break;
      if (bytes < min_bytes) continue;
      Buffers buf;
      auto run = MakeOp(op, bytes, size, rank, buf);
      run();
      if (op == "allreduce" && buf.a[0] != float(size)) status = 1;
      double sec = flotilla::bench::MedianSecondsPerOp(bytes, run,
                                                       [&] { MPI_Barrier(MPI_COMM_WORLD); });
      if (rank == 0) {
        std::cout << flotilla::bench::CollectiveJson(op, "mpi", bytes, size, sec) << std::endl;
      }
    }
  }
  MPI_Finalize();
  return status;
}
