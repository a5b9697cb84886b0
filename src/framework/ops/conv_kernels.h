// CPU kernels of 2-D convolution on NCHW tensors, by im2col + GEMM
// (OpenBLAS through math::Gemm), with a direct kernel for depthwise
// convolutions (one input channel per group), where a GEMM per channel
// would be all overhead.
//
// A convolution is described once by ConvGeometry; conv2d's forward, its
// two gradients and conv2d_transpose (whose forward is conv2d's input
// gradient and vice versa) are built from the same four routines.
//
// Scratch buffers (the im2col matrix, gathered output blocks) are
// thread-local and only grow, so a training loop allocates them once.
// Not thread-safe on shared outputs; distinct calls on distinct outputs may
// run concurrently.
#pragma once

#include <cstdint>

namespace flotilla::ops::conv {

struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_c = 0, in_h = 0, in_w = 0;     // the "image" side
  int64_t out_c = 0, out_h = 0, out_w = 0;  // the "feature map" side
  int64_t k_h = 1, k_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // bottom/right padding is implied by out_h/out_w
  int64_t groups = 1;

  int64_t in_c_per_group() const { return in_c / groups; }
  int64_t out_c_per_group() const { return out_c / groups; }
  int64_t in_size() const { return in_h * in_w; }
  int64_t out_size() const { return out_h * out_w; }
  // Rows of the im2col matrix of one group: in_c/groups * k_h * k_w.
  int64_t col_rows() const { return in_c_per_group() * k_h * k_w; }
  bool is_pointwise() const {
    return k_h == 1 && k_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 &&
           pad_left == 0 && in_h == out_h && in_w == out_w;
  }
  bool is_depthwise() const { return groups > 1 && in_c_per_group() == 1; }
  // Multiply-adds of one forward pass (for GFLOP/s figures).
  double macs() const {
    return double(batch) * out_c * out_size() * col_rows();
  }
};

// out[N, out_c, out_h, out_w] = conv(x[N, in_c, in_h, in_w], w[out_c, in_c/g, kh, kw]).
template <typename T>
void ConvForward(const ConvGeometry& g, const T* x, const T* w, T* out);
// dx = conv's input gradient of dout (dx is overwritten).
template <typename T>
void ConvBackwardData(const ConvGeometry& g, const T* w, const T* dout, T* dx);
// dw = conv's filter gradient (dw is overwritten).
template <typename T>
void ConvBackwardFilter(const ConvGeometry& g, const T* x, const T* dout, T* dw);

}  // namespace flotilla::ops::conv
