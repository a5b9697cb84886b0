// Tensor shapes. A Dims entry of -1 means "unknown until run time" (the batch
// dimension of a data layer); runtime tensors never hold -1.
//
// Shape arithmetic is overflow-checked here, in one place: a product that
// does not fit in int64 throws instead of wrapping, and every decoder of
// outside bytes (tensor files, table images, RPC payloads, feeds) sizes its
// buffers through CheckedByteSize before allocating anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace flotilla {

using Dims = std::vector<int64_t>;

// Product of the entries; 1 for a scalar (empty dims). -1 if any is unknown.
// Throws InvalidArgument naming the shape when the product overflows int64.
int64_t Numel(const Dims& dims);
// "[2, 3]".
std::string DimsToString(const Dims& dims);
// Product of dims[begin, end); -1 if any is unknown; throws InvalidArgument
// on overflow as Numel does.
int64_t Product(const Dims& dims, size_t begin, size_t end);
// Flattens to 2-D at column `num_col_dims`: [prod(d[0:k]), prod(d[k:])].
Dims FlattenTo2D(const Dims& dims, int num_col_dims);
// True when `actual` matches `expected`, where -1 in expected matches anything.
bool DimsCompatible(const Dims& expected, const Dims& actual);

// a * b for sizes read from outside: throws Corruption naming `what` when
// either is negative or the product overflows int64.
int64_t CheckedMul(int64_t a, int64_t b, const std::string& what);
// The bytes of a tensor of `dims` with `element_bytes`-byte elements, for
// decoders: throws Corruption naming `what` and the shape when an entry is
// negative, the arithmetic overflows, or the result exceeds `max_bytes`.
size_t CheckedByteSize(const Dims& dims, size_t element_bytes, size_t max_bytes,
                       const std::string& what);

}  // namespace flotilla
