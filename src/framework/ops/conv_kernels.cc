#include "framework/ops/conv_kernels.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "flotilla/core/math.h"

namespace flotilla::ops::conv {
namespace {

// Several images are lowered into one im2col matrix when their feature maps
// are small, so the GEMM has at least this many columns (7x7 maps of 8
// images: 392) — OpenBLAS is several times slower on 49 columns.
constexpr int64_t kMinGemmColumns = 512;
// ... while the matrix stays below this many bytes.
constexpr int64_t kMaxScratchBytes = int64_t{96} << 20;

// A grow-only per-thread buffer; slot 0 holds im2col matrices, slot 1
// gathered output blocks, slot 2 compacted filters, slot 3 their gradients.
template <typename T>
T* Scratch(int slot, int64_t n) {
  struct Buf {
    std::unique_ptr<T[]> data;
    int64_t size = 0;
  };
  thread_local Buf bufs[4];
  Buf& b = bufs[slot];
  if (b.size < n) {
    b.data.reset(new T[static_cast<size_t>(n)]);
    b.size = n;
  }
  return b.data.get();
}

// Images lowered per GEMM.
int64_t BlockImages(const ConvGeometry& g, int64_t elem_bytes) {
  const int64_t per_image = std::max<int64_t>(1, g.out_size());
  int64_t nb = std::min(g.batch, (kMinGemmColumns + per_image - 1) / per_image);
  while (nb > 1 && nb * per_image * g.col_rows() * elem_bytes > kMaxScratchBytes) --nb;
  return std::max<int64_t>(1, nb);
}

// The output columns [lo, hi) whose input column ow*stride + off lies in [0, width).
void ValidRange(int64_t off, int64_t stride, int64_t width, int64_t outs, int64_t* lo, int64_t* hi) {
  // smallest ow with ow*stride + off >= 0
  int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  // smallest ow with ow*stride + off >= width
  int64_t h = width - off <= 0 ? 0 : (width - off + stride - 1) / stride;
  *lo = std::min(l, outs);
  *hi = std::max(*lo, std::min(h, outs));
}

// The kernel taps (kh, kw) through which some output reads a real input
// pixel. A tap that only ever reads padding contributes nothing, so its
// im2col rows (all zeros) and filter columns are left out of the GEMMs: a
// 3x3 convolution on a 1x1 map (ResNet's last stage on small images) then
// costs one tap's work, not nine.
struct Taps {
  std::vector<int32_t> kh, kw;
  bool all = true;  // every tap live: the filter is used as stored
  int64_t size() const { return static_cast<int64_t>(kh.size()); }
};

Taps LiveTaps(const ConvGeometry& g) {
  Taps t;
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    int64_t hlo, hhi;
    ValidRange(kh * g.dil_h - g.pad_top, g.stride_h, g.in_h, g.out_h, &hlo, &hhi);
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      int64_t wlo, whi;
      ValidRange(kw * g.dil_w - g.pad_left, g.stride_w, g.in_w, g.out_w, &wlo, &whi);
      if (hhi > hlo && whi > wlo) {
        t.kh.push_back(static_cast<int32_t>(kh));
        t.kw.push_back(static_cast<int32_t>(kw));
      }
    }
  }
  t.all = t.size() == g.k_h * g.k_w;
  return t;
}

// Rows of the (compacted) im2col matrix of one group.
int64_t LiveRows(const ConvGeometry& g, const Taps& t) { return g.in_c_per_group() * t.size(); }

// Writes the im2col rows (channel-major, then live tap) of one image's
// channels [0, in_c_per_group) at `x` into col (row stride ld).
template <typename T>
void Im2Col(const ConvGeometry& g, const Taps& taps, const T* x, T* col, int64_t ld) {
  const int64_t cg = g.in_c_per_group(), nt = taps.size();
  for (int64_t c = 0; c < cg; ++c) {
    const T* xc = x + c * g.in_size();
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t kh = taps.kh[t], kw = taps.kw[t];
      T* row = col + (c * nt + t) * ld;
      const int64_t woff = kw * g.dil_w - g.pad_left;
      int64_t lo, hi;
      ValidRange(woff, g.stride_w, g.in_w, g.out_w, &lo, &hi);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        T* d = row + oh * g.out_w;
        const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dil_h;
        if (ih < 0 || ih >= g.in_h) {
          std::memset(d, 0, sizeof(T) * g.out_w);
          continue;
        }
        const T* s = xc + ih * g.in_w;
        for (int64_t ow = 0; ow < lo; ++ow) d[ow] = T(0);
        if (g.stride_w == 1) {
          if (hi > lo) std::memcpy(d + lo, s + lo + woff, sizeof(T) * (hi - lo));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) d[ow] = s[ow * g.stride_w + woff];
        }
        for (int64_t ow = hi; ow < g.out_w; ++ow) d[ow] = T(0);
      }
    }
  }
}

// The adjoint of Im2Col: adds col's entries into the image at `dx`.
template <typename T>
void Col2ImAdd(const ConvGeometry& g, const Taps& taps, const T* col, int64_t ld, T* dx) {
  const int64_t cg = g.in_c_per_group(), nt = taps.size();
  for (int64_t c = 0; c < cg; ++c) {
    T* xc = dx + c * g.in_size();
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t kh = taps.kh[t], kw = taps.kw[t];
      const T* row = col + (c * nt + t) * ld;
      const int64_t woff = kw * g.dil_w - g.pad_left;
      int64_t lo, hi;
      ValidRange(woff, g.stride_w, g.in_w, g.out_w, &lo, &hi);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dil_h;
        if (ih < 0 || ih >= g.in_h) continue;
        const T* s = row + oh * g.out_w;
        T* d = xc + ih * g.in_w;
        for (int64_t ow = lo; ow < hi; ++ow) d[ow * g.stride_w + woff] += s[ow];
      }
    }
  }
}

// Group gi's filter [out_c/g, live rows]: the stored one when every tap is
// live, else its live columns gathered into scratch.
template <typename T>
const T* LiveFilter(const ConvGeometry& g, const Taps& taps, const T* w, int64_t gi) {
  const int64_t ocg = g.out_c_per_group(), full = g.col_rows(), kk = g.k_h * g.k_w;
  const T* wg = w + gi * ocg * full;
  if (taps.all) return wg;
  const int64_t rows = LiveRows(g, taps), cg = g.in_c_per_group(), nt = taps.size();
  T* out = Scratch<T>(2, ocg * rows);
  for (int64_t o = 0; o < ocg; ++o) {
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t t = 0; t < nt; ++t) {
        out[o * rows + c * nt + t] = wg[o * full + c * kk + taps.kh[t] * g.k_w + taps.kw[t]];
      }
    }
  }
  return out;
}

// Offsets of image n, group gi's first channel.
int64_t InOffset(const ConvGeometry& g, int64_t n, int64_t gi) {
  return (n * g.in_c + gi * g.in_c_per_group()) * g.in_size();
}
int64_t OutOffset(const ConvGeometry& g, int64_t n, int64_t gi) {
  return (n * g.out_c + gi * g.out_c_per_group()) * g.out_size();
}

// Copies group gi's output channels of images [n0, n0+nb) between the NCHW
// tensor and a [out_c/g, nb*out_size] block.
template <typename T>
void GatherOut(const ConvGeometry& g, const T* out, int64_t n0, int64_t nb, int64_t gi, T* block) {
  const int64_t ocg = g.out_c_per_group(), hw = g.out_size(), ld = nb * hw;
  for (int64_t b = 0; b < nb; ++b) {
    const T* src = out + OutOffset(g, n0 + b, gi);
    for (int64_t o = 0; o < ocg; ++o) std::memcpy(block + o * ld + b * hw, src + o * hw, sizeof(T) * hw);
  }
}
template <typename T>
void ScatterOut(const ConvGeometry& g, const T* block, int64_t n0, int64_t nb, int64_t gi, T* out) {
  const int64_t ocg = g.out_c_per_group(), hw = g.out_size(), ld = nb * hw;
  for (int64_t b = 0; b < nb; ++b) {
    T* dst = out + OutOffset(g, n0 + b, gi);
    for (int64_t o = 0; o < ocg; ++o) std::memcpy(dst + o * hw, block + o * ld + b * hw, sizeof(T) * hw);
  }
}

// Lowers images [n0, n0+nb) of group gi; returns the matrix (x itself for
// a pointwise convolution of one image).
template <typename T>
const T* Lower(const ConvGeometry& g, const Taps& taps, const T* x, int64_t n0, int64_t nb, int64_t gi) {
  if (g.is_pointwise() && nb == 1) return x + InOffset(g, n0, gi);
  const int64_t ld = nb * g.out_size();
  T* col = Scratch<T>(0, LiveRows(g, taps) * ld);
  for (int64_t b = 0; b < nb; ++b) Im2Col(g, taps, x + InOffset(g, n0 + b, gi), col + b * g.out_size(), ld);
  return col;
}

// ---- depthwise: one input channel per group, out_c = in_c * multiplier ----

template <typename T>
void DepthwiseForward(const ConvGeometry& g, const T* x, const T* w, T* out) {
  const int64_t mult = g.out_c_per_group();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_c; ++oc) {
      const T* xc = x + (n * g.in_c + oc / mult) * g.in_size();
      const T* wc = w + oc * g.k_h * g.k_w;
      T* o = out + (n * g.out_c + oc) * g.out_size();
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          T acc = 0;
          for (int64_t kh = 0; kh < g.k_h; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dil_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.k_w; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dil_w;
              if (iw >= 0 && iw < g.in_w) acc += xc[ih * g.in_w + iw] * wc[kh * g.k_w + kw];
            }
          }
          o[oh * g.out_w + ow] = acc;
        }
      }
    }
  }
}

// dx (when non-null) and dw (when non-null) of a depthwise convolution;
// both are accumulated into, so callers zero them.
template <typename T>
void DepthwiseBackward(const ConvGeometry& g, const T* x, const T* w, const T* dout, T* dx, T* dw) {
  const int64_t mult = g.out_c_per_group();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_c; ++oc) {
      const int64_t in_off = (n * g.in_c + oc / mult) * g.in_size();
      const T* wc = w != nullptr ? w + oc * g.k_h * g.k_w : nullptr;
      T* dwc = dw != nullptr ? dw + oc * g.k_h * g.k_w : nullptr;
      const T* d = dout + (n * g.out_c + oc) * g.out_size();
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const T go = d[oh * g.out_w + ow];
          for (int64_t kh = 0; kh < g.k_h; ++kh) {
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dil_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kw = 0; kw < g.k_w; ++kw) {
              const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dil_w;
              if (iw < 0 || iw >= g.in_w) continue;
              const int64_t at = in_off + ih * g.in_w + iw;
              if (dx != nullptr) dx[at] += go * wc[kh * g.k_w + kw];
              if (dwc != nullptr) dwc[kh * g.k_w + kw] += go * x[at];
            }
          }
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void ConvForward(const ConvGeometry& g, const T* x, const T* w, T* out) {
  if (g.is_depthwise()) return DepthwiseForward(g, x, w, out);
  const Taps taps = LiveTaps(g);
  const int64_t ocg = g.out_c_per_group(), rows = LiveRows(g, taps), nb_max = BlockImages(g, sizeof(T));
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb_max) {
    const int64_t nb = std::min(nb_max, g.batch - n0), cols = nb * g.out_size();
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const T* col = Lower(g, taps, x, n0, nb, gi);
      const T* wg = LiveFilter(g, taps, w, gi);
      if (nb == 1) {
        math::Gemm(false, false, ocg, cols, rows, T(1), wg, rows, col, cols, T(0),
                   out + OutOffset(g, n0, gi), cols);
        continue;
      }
      T* block = Scratch<T>(1, ocg * cols);
      math::Gemm(false, false, ocg, cols, rows, T(1), wg, rows, col, cols, T(0), block, cols);
      ScatterOut(g, block, n0, nb, gi, out);
    }
  }
}

template <typename T>
void ConvBackwardData(const ConvGeometry& g, const T* w, const T* dout, T* dx) {
  std::fill(dx, dx + g.batch * g.in_c * g.in_size(), T(0));
  if (g.is_depthwise()) return DepthwiseBackward<T>(g, nullptr, w, dout, dx, nullptr);
  const Taps taps = LiveTaps(g);
  const int64_t ocg = g.out_c_per_group(), rows = LiveRows(g, taps), nb_max = BlockImages(g, sizeof(T));
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb_max) {
    const int64_t nb = std::min(nb_max, g.batch - n0), cols = nb * g.out_size();
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const T* wg = LiveFilter(g, taps, w, gi);
      const T* dmat = dout + OutOffset(g, n0, gi);
      if (nb > 1) {
        T* block = Scratch<T>(1, ocg * cols);
        GatherOut(g, dout, n0, nb, gi, block);
        dmat = block;
      }
      if (g.is_pointwise() && nb == 1) {
        math::Gemm(true, false, rows, cols, ocg, T(1), wg, rows, dmat, cols, T(0),
                   dx + InOffset(g, n0, gi), cols);
        continue;
      }
      T* col = Scratch<T>(0, rows * cols);
      math::Gemm(true, false, rows, cols, ocg, T(1), wg, rows, dmat, cols, T(0), col, cols);
      for (int64_t b = 0; b < nb; ++b) {
        Col2ImAdd(g, taps, col + b * g.out_size(), cols, dx + InOffset(g, n0 + b, gi));
      }
    }
  }
}

// Adds the compacted filter gradient dl [out_c/g, live rows] into group
// gi's columns of dw.
template <typename T>
void ScatterFilterGrad(const ConvGeometry& g, const Taps& taps, const T* dl, int64_t gi, T* dw) {
  const int64_t ocg = g.out_c_per_group(), full = g.col_rows(), kk = g.k_h * g.k_w;
  const int64_t rows = LiveRows(g, taps), cg = g.in_c_per_group(), nt = taps.size();
  T* dg = dw + gi * ocg * full;
  for (int64_t o = 0; o < ocg; ++o) {
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t t = 0; t < nt; ++t) {
        dg[o * full + c * kk + taps.kh[t] * g.k_w + taps.kw[t]] += dl[o * rows + c * nt + t];
      }
    }
  }
}

template <typename T>
void ConvBackwardFilter(const ConvGeometry& g, const T* x, const T* dout, T* dw) {
  const int64_t ocg = g.out_c_per_group(), full = g.col_rows(), nb_max = BlockImages(g, sizeof(T));
  std::fill(dw, dw + g.out_c * full, T(0));
  if (g.is_depthwise()) return DepthwiseBackward<T>(g, x, nullptr, dout, nullptr, dw);
  const Taps taps = LiveTaps(g);
  const int64_t rows = LiveRows(g, taps);
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb_max) {
    const int64_t nb = std::min(nb_max, g.batch - n0), cols = nb * g.out_size();
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const T* dmat = dout + OutOffset(g, n0, gi);
      if (nb > 1) {
        T* block = Scratch<T>(1, ocg * cols);
        GatherOut(g, dout, n0, nb, gi, block);
        dmat = block;
      }
      const T* col = Lower(g, taps, x, n0, nb, gi);
      if (taps.all) {
        math::Gemm(false, true, ocg, rows, cols, T(1), dmat, cols, col, cols, T(1), dw + gi * ocg * rows, rows);
        continue;
      }
      T* dl = Scratch<T>(3, ocg * rows);
      math::Gemm(false, true, ocg, rows, cols, T(1), dmat, cols, col, cols, T(0), dl, rows);
      ScatterFilterGrad(g, taps, dl, gi, dw);
    }
  }
}

template void ConvForward<float>(const ConvGeometry&, const float*, const float*, float*);
template void ConvForward<double>(const ConvGeometry&, const double*, const double*, double*);
template void ConvBackwardData<float>(const ConvGeometry&, const float*, const float*, float*);
template void ConvBackwardData<double>(const ConvGeometry&, const double*, const double*, double*);
template void ConvBackwardFilter<float>(const ConvGeometry&, const float*, const float*, float*);
template void ConvBackwardFilter<double>(const ConvGeometry&, const double*, const double*,
                                         double*);

}  // namespace flotilla::ops::conv
