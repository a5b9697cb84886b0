// Element-wise reduction and copy kernels on raw buffers, dispatched on DType.
//
// The loops are compiled for several instruction sets (AVX-512, AVX2 and the
// x86-64 baseline on x86-64; the architecture's baseline elsewhere) and the
// best one the CPU supports is picked when the program loads, so release
// builds need no -march=native. UseIsa switches to another one this CPU
// supports (tests compare them all). Buffers need no particular alignment.
// Every result is computed element by element in a fixed order, so it is
// bit-identical on any machine and whatever vector width runs it.
#pragma once

#include <cstddef>
#include <vector>

#include "flotilla/comm/types.h"
#include "flotilla/core/dtype.h"

namespace flotilla::comm {

// dst[i] = a[i] op b[i]; kAvg reduces as a sum (divide with DivideBy). `dst`
// may alias `a` or `b` (in-place accumulate).
void ReduceInto(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op);
// data[i] /= divisor (integer division for integer dtypes).
void DivideBy(void* data, size_t count, DType dtype, int divisor);

// A reduction of `nsrc` (>= 1) sources into one or two destinations:
//   r[i] = (((srcs[0][i] op srcs[1][i]) op srcs[2][i]) ...), then r[i] /= divisor
//   when op is kAvg and divisor > 1; dst[i] = r[i], and dst2[i] = r[i] when
//   dst2 is non-null.
// `dst` may be one of the sources (in-place); dst2 aliases nothing. With `stream`,
// stores to `dst` bypass the caches (non-temporal stores): for results the
// caller will not read soon, larger than the caches.
struct ReduceArgs {
  void* dst = nullptr;
  void* dst2 = nullptr;
  const void* const* srcs = nullptr;
  int nsrc = 0;
  size_t count = 0;
  DType dtype = DType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int divisor = 1;
  bool stream = false;
};
void ReduceMany(const ReduceArgs& args);

// memcpy, or with `stream` a copy whose stores bypass the caches. Either way
// the data is visible to other cores once the call returns (a store fence
// follows streamed stores).
void CopyBytes(void* dst, const void* src, size_t bytes, bool stream);

// The instruction sets the kernels are compiled for, widest last.
enum class Isa { kBaseline, kAvx2, kAvx512 };

// "baseline", "avx2" or "avx512".
const char* IsaName(Isa isa);
// The instruction sets this CPU (and its OS) can run, baseline first.
std::vector<Isa> SupportedIsas();
// The instruction set the kernels run with now: the widest supported one
// unless UseIsa chose another.
Isa ActiveIsa();
// Runs the kernels with `isa` from now on, in every thread (calls already
// running finish with the old one). Throws InvalidArgument naming the
// instruction set when this CPU cannot run it.
void UseIsa(Isa isa);

}  // namespace flotilla::comm
