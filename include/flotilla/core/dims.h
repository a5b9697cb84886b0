// Tensor shapes. A Dims entry of -1 means "unknown until run time" (the batch
// dimension of a data layer); runtime tensors never hold -1.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace flotilla {

using Dims = std::vector<int64_t>;

// Product of the entries; 1 for a scalar (empty dims). -1 if any is unknown.
int64_t Numel(const Dims& dims);
// "[2, 3]".
std::string DimsToString(const Dims& dims);
// Product of dims[begin, end).
int64_t Product(const Dims& dims, size_t begin, size_t end);
// Flattens to 2-D at column `num_col_dims`: [prod(d[0:k]), prod(d[k:])].
Dims FlattenTo2D(const Dims& dims, int num_col_dims);
// True when `actual` matches `expected`, where -1 in expected matches anything.
bool DimsCompatible(const Dims& expected, const Dims& actual);

}  // namespace flotilla
