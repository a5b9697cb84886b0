// The table phase of bench_ps: sparse-table operations per second per core
// (Flotilla's SparseTable, a plain std::unordered_map, absl::flat_hash_map).
#pragma once

#include <cstddef>
#include <cstdint>

namespace flotilla::ps::bench {

struct TableBenchOptions {
  size_t rows = 1'000'000;   // rows in the table (all pulled/pushed rows exist)
  int64_t dim = 16;
  size_t batch_keys = 10'000;
  size_t batches = 50;       // distinct batches per pass
  int reps = 3;              // passes per measurement (median)
};

// Prints one JSON line per operation with keys/s per core of each
// contender, then the ratios in DESIGN.md's comparison shape.
void RunTableBench(const TableBenchOptions& options);

}  // namespace flotilla::ps::bench
