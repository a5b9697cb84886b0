// conv2d (and Paddle's depthwise_conv2d name) and conv2d_transpose on NCHW
// float tensors, with Paddle's slots and attributes:
//
//   conv2d(Input [N, C, H, W], Filter [M, C/groups, kh, kw]) -> Output [N, M, Ho, Wo]
//   conv2d_transpose(Input [N, C, H, W], Filter [C, M/groups, kh, kw]) -> Output [N, M, Ho, Wo]
//
// attributes strides, paddings ([ph, pw] or [top, bottom, left, right]),
// dilations, groups, padding_algorithm (EXPLICIT, SAME, VALID); for the
// transpose also output_padding and output_size. SAME pads so that
// Ho = ceil(H / stride), splitting the padding with the extra row at the
// bottom, and counts the dilated kernel (TensorFlow's rule; Paddle instead
// resets dilation to 1 under SAME). The kernels are in conv_kernels.cc.
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/conv_kernels.h"
#include "framework/ops/grad_registration.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"
#include "framework/ops/input_checks.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

using conv::ConvGeometry;

// Checks Input and Filter and returns the geometry of the convolution
// (input sizes may be unknown, -1, at compile time).
template <typename Ctx>
ConvGeometry Conv2dGeometry(const Ctx& ctx, const Dims& x, const Dims& w) {
  CheckRank4(ctx, "Input", x, "[N, C, H, W]");
  CheckRank4(ctx, "Filter", w, "[out_channels, in_channels / groups, kh, kw]");
  ConvGeometry g;
  g.groups = ctx.template Attr<int32_t>("groups");
  FLOTILLA_ENFORCE(g.groups >= 1, ctx.Where(), ": attribute groups must be >= 1, got ", g.groups);
  g.batch = x[0], g.in_c = x[1], g.in_h = x[2], g.in_w = x[3];
  g.out_c = w[0], g.k_h = w[2], g.k_w = w[3];
  FLOTILLA_ENFORCE(g.out_c % g.groups == 0, ctx.Where(), ": ", DescribeInput(ctx, "Filter", w),
                   " has ", g.out_c, " output channels, not a multiple of groups = ", g.groups);
  FLOTILLA_ENFORCE(!KnownAndDiffer(g.in_c, w[1] * g.groups), ctx.Where(), ": ",
                   DescribeInput(ctx, "Input", x), " has ", g.in_c,
                   " channels but the filter expects ", w[1] * g.groups,
                   " (Filter [M, C/groups, kh, kw] with C/groups = ", w[1], ", groups = ", g.groups,
                   "): expected Input of shape [N, ", w[1] * g.groups, ", H, W]");
  Window win = ResolveWindow(ctx, {x[2], x[3]}, {g.k_h, g.k_w});
  g.stride_h = win.stride[0], g.stride_w = win.stride[1];
  g.dil_h = win.dilation[0], g.dil_w = win.dilation[1];
  g.pad_top = win.pad_begin[0], g.pad_left = win.pad_begin[1];
  g.out_h = win.out[0], g.out_w = win.out[1];
  return g;
}

void Conv2dInferShape(InferShapeContext& ctx) {
  ConvGeometry g = Conv2dGeometry(ctx, ctx.InputDim("Input"), ctx.InputDim("Filter"));
  ctx.SetOutputDim("Output", {g.batch, g.out_c, g.out_h, g.out_w});
  ctx.SetOutputDType("Output", ctx.InputDType("Input"));
}

void Conv2dKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  ExpectDType(w, x.dtype(), ctx.Where(), "Filter");
  ConvGeometry g = Conv2dGeometry(ctx, x.dims(), w.dims());
  Tensor* out = ctx.Output("Output");
  out->Resize({g.batch, g.out_c, g.out_h, g.out_w});
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    conv::ConvForward(g, x.data<T>(), w.data<T>(), out->mutable_data<T>());
  });
}

void Conv2dGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dout = ctx.Input(GradVarName("Output"));
  ConvGeometry g = Conv2dGeometry(ctx, x.dims(), w.dims());
  CheckGradShape(ctx, dout, {g.batch, g.out_c, g.out_h, g.out_w}, "Output");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    if (T* dx = GradOutput<T>(ctx, "Input", x.dims())) conv::ConvBackwardData(g, w.data<T>(), dout.data<T>(), dx);
    if (T* dw = GradOutput<T>(ctx, "Filter", w.dims())) conv::ConvBackwardFilter(g, x.data<T>(), dout.data<T>(), dw);
  });
}

// ---- conv2d_transpose: the input gradient of a conv2d whose image is
// Output and whose feature map is Input ----

template <typename Ctx>
ConvGeometry TransposeGeometry(const Ctx& ctx, const Dims& x, const Dims& w) {
  CheckRank4(ctx, "Input", x, "[N, C, H, W]");
  CheckRank4(ctx, "Filter", w, "[in_channels, out_channels / groups, kh, kw]");
  ConvGeometry g;
  g.groups = ctx.template Attr<int32_t>("groups");
  FLOTILLA_ENFORCE(g.groups >= 1, ctx.Where(), ": attribute groups must be >= 1, got ", g.groups);
  FLOTILLA_ENFORCE(!KnownAndDiffer(x[1], w[0]), ctx.Where(), ": ", DescribeInput(ctx, "Input", x),
                   " has ", x[1], " channels but ", DescribeInput(ctx, "Filter", w),
                   " expects ", w[0], ": expected Input of shape [N, ", w[0], ", H, W]");
  FLOTILLA_ENFORCE(w[0] % g.groups == 0, ctx.Where(), ": ", DescribeInput(ctx, "Filter", w),
                   " has ", w[0], " input channels, not a multiple of groups = ", g.groups);
  g.batch = x[0], g.out_c = x[1], g.out_h = x[2], g.out_w = x[3];
  g.in_c = w[1] * g.groups, g.k_h = w[2], g.k_w = w[3];
  TransposedWindow win = ResolveTransposedWindow(ctx, {x[2], x[3]}, {g.k_h, g.k_w});
  g.stride_h = win.stride[0], g.stride_w = win.stride[1];
  g.dil_h = win.dilation[0], g.dil_w = win.dilation[1];
  g.pad_top = win.pad_begin[0], g.pad_left = win.pad_begin[1];
  g.in_h = win.out[0], g.in_w = win.out[1];
  return g;
}

void TransposeInferShape(InferShapeContext& ctx) {
  ConvGeometry g = TransposeGeometry(ctx, ctx.InputDim("Input"), ctx.InputDim("Filter"));
  ctx.SetOutputDim("Output", {g.batch, g.in_c, g.in_h, g.in_w});
  ctx.SetOutputDType("Output", ctx.InputDType("Input"));
}

void TransposeKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  ExpectDType(w, x.dtype(), ctx.Where(), "Filter");
  ConvGeometry g = TransposeGeometry(ctx, x.dims(), w.dims());
  Tensor* out = ctx.Output("Output");
  out->Resize({g.batch, g.in_c, g.in_h, g.in_w});
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    conv::ConvBackwardData(g, w.data<T>(), x.data<T>(), out->mutable_data<T>());
  });
}

void TransposeGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dout = ctx.Input(GradVarName("Output"));
  ConvGeometry g = TransposeGeometry(ctx, x.dims(), w.dims());
  CheckGradShape(ctx, dout, {g.batch, g.in_c, g.in_h, g.in_w}, "Output");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    if (T* dx = GradOutput<T>(ctx, "Input", x.dims())) conv::ConvForward(g, dout.data<T>(), w.data<T>(), dx);
    if (T* dw = GradOutput<T>(ctx, "Filter", w.dims())) conv::ConvBackwardFilter(g, dout.data<T>(), x.data<T>(), dw);
  });
}

AttributeMap ConvDefaults() {
  return {{"strides", std::vector<int32_t>{1, 1}},
          {"paddings", std::vector<int32_t>{0, 0}},
          {"dilations", std::vector<int32_t>{1, 1}},
          {"groups", int32_t{1}},
          {"padding_algorithm", std::string("EXPLICIT")},
          {"data_format", std::string("NCHW")}};
}

const GradSlots kConvGrad = {
    .forward_inputs = {"Input", "Filter"}, .output_grads = {"Output"}, .input_grads = {"Input", "Filter"}};

}  // namespace

void RegisterConvOps() {
  auto& r = OpRegistry::Global();
  for (const char* type : {"conv2d", "depthwise_conv2d"}) {
    RegisterKernelWithGrad(r, type, Conv2dInferShape, Conv2dKernel, ConvDefaults(), kConvGrad, Conv2dGradKernel);
  }
  AttributeMap transpose = ConvDefaults();
  transpose["output_padding"] = std::vector<int32_t>{};
  transpose["output_size"] = std::vector<int32_t>{};
  RegisterKernelWithGrad(r, "conv2d_transpose", TransposeInferShape, TransposeKernel, std::move(transpose),
                         kConvGrad, TransposeGradKernel);
}

}  // namespace flotilla::ops
