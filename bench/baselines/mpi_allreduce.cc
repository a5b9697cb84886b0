// Baseline: OpenMPI MPI_Allreduce (float sum, in place), run under mpirun.
//   mpirun -np 2 mpi_allreduce [max_bytes]
// Rank 0 prints bench_allreduce JSON lines (impl "mpi").
#include <mpi.h>

#include <cstdlib>
#include <iostream>

#include "../bench_allreduce_timing.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t max_bytes = argc > 1 ? strtoull(argv[1], nullptr, 10) : size_t(64) << 20;
  int status = 0;
  for (size_t bytes : flotilla::bench::AllreduceSizes()) {
    if (bytes > max_bytes) break;
    const int count = int(bytes / sizeof(float));
    std::vector<float> data(count, 1.0f);
    MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (data[0] != float(size)) status = 1;
    double sec = flotilla::bench::MedianSecondsPerOp(
        bytes,
        [&] { MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
        [&] { MPI_Barrier(MPI_COMM_WORLD); });
    if (rank == 0) std::cout << flotilla::bench::AllreduceJson("mpi", bytes, size, sec) << std::endl;
  }
  MPI_Finalize();
  return status;
}
