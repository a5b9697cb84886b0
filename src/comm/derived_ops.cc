#include "comm/derived_ops.h"

#include <cstring>
#include <vector>

#include "flotilla/common/enforce.h"

namespace flotilla::comm {

void ReduceScatterViaAllreduce(Backend& backend, int rank, int size, const void* in, void* out,
                               size_t count, DType dtype, ReduceOp op) {
  const size_t bytes = count * SizeOf(dtype);
  std::vector<char> all(static_cast<const char*>(in), static_cast<const char*>(in) + bytes * size);
  backend.allreduce(all.data(), count * size, dtype, op);
  if (bytes) std::memcpy(out, all.data() + rank * bytes, bytes);
}

void ReduceViaAllreduce(Backend& backend, int size, void* data, size_t count, DType dtype,
                        ReduceOp op, int root) {
  FLOTILLA_ENFORCE(root >= 0 && root < size, "reduce root ", root, " outside group of ", size);
  backend.allreduce(data, count, dtype, op);
}

}  // namespace flotilla::comm
