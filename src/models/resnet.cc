#include "flotilla/models/resnet.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "flotilla/api/layers.h"

namespace flotilla::models {
namespace {

std::string BnName(const std::string& conv_name) {
  return conv_name == "conv1" ? "bn_conv1" : "bn" + conv_name.substr(3);
}

Variable Shortcut(const Variable& input, int ch_out, int stride, bool is_first, const std::string& name) {
  const int64_t ch_in = input.shape()[1];
  if (ch_in != ch_out || stride != 1 || is_first) return ConvBnLayer(input, ch_out, 1, stride, "", name);
  return input;
}

std::vector<int> Depths(int layers) {
  switch (layers) {
    case 18: return {2, 2, 2, 2};
    case 34:
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
  }
  FLOTILLA_THROW(InvalidArgument, "ResNet: layers must be 18, 34, 50, 101 or 152, got ", layers);
}

// "res4a", "res4b1", ... for the deep stages of ResNet-101/152, else "res4a", "res4b".
std::string BlockName(int layers, int stage, int i) {
  const std::string base = "res" + std::to_string(stage + 2);
  if ((layers == 101 || layers == 152) && stage == 2) return i == 0 ? base + "a" : base + "b" + std::to_string(i);
  return base + static_cast<char>('a' + i);
}

}  // namespace

Variable ConvBnLayer(const Variable& input, int num_filters, int filter_size, int stride,
                     const std::string& act, const std::string& name) {
  auto conv = layers::conv2d(input, num_filters, filter_size, stride, (filter_size - 1) / 2, 1, 1,
                             ParamAttr::Named(name + "_weights"), ParamAttr::None(), "",
                             name + ".conv2d.output.1");
  const std::string bn = BnName(name);
  return layers::batch_norm(conv, {.act = act,
                                   .param_attr = ParamAttr::Named(bn + "_scale"),
                                   .bias_attr = ParamAttr::Named(bn + "_offset"),
                                   .name = bn + ".output.1",
                                   .moving_mean_name = bn + "_mean",
                                   .moving_variance_name = bn + "_variance"});
}

Variable BasicBlock(const Variable& input, int num_filters, int stride, bool is_first,
                    const std::string& name) {
  auto conv0 = ConvBnLayer(input, num_filters, 3, stride, "relu", name + "_branch2a");
  auto conv1 = ConvBnLayer(conv0, num_filters, 3, 1, "", name + "_branch2b");
  auto shortcut = Shortcut(input, num_filters, stride, is_first, name + "_branch1");
  return layers::elementwise_add(shortcut, conv1, -1, "relu");
}

Variable BottleneckBlock(const Variable& input, int num_filters, int stride, const std::string& name) {
  auto conv0 = ConvBnLayer(input, num_filters, 1, 1, "relu", name + "_branch2a");
  auto conv1 = ConvBnLayer(conv0, num_filters, 3, stride, "relu", name + "_branch2b");
  auto conv2 = ConvBnLayer(conv1, num_filters * 4, 1, 1, "", name + "_branch2c");
  auto shortcut = Shortcut(input, num_filters * 4, stride, false, name + "_branch1");
  return layers::elementwise_add(shortcut, conv2, -1, "relu");
}

Variable ResNet(const Variable& image, int layers, int class_dim) {
  const std::vector<int> depth = Depths(layers);
  const int filters[] = {64, 128, 256, 512};
  auto conv = ConvBnLayer(image, 64, 7, 2, "relu", "conv1");
  conv = layers::pool2d(conv, 3, "max", 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    for (int i = 0; i < depth[stage]; ++i) {
      const int stride = (i == 0 && stage != 0) ? 2 : 1;
      const std::string name = BlockName(layers, stage, i);
      conv = layers >= 50 ? BottleneckBlock(conv, filters[stage], stride, name)
                          : BasicBlock(conv, filters[stage], stride, stage == 0 && i == 0, name);
    }
  }
  auto pool = layers::pool2d(conv, 1, "avg", 1, 0, /*global_pooling=*/true);
  const double stdv = 1.0 / std::sqrt(double(pool.shape()[1]));
  return layers::fc(pool, class_dim, 1,
                    ParamAttr::Named("fc_0.w_0", std::make_shared<initializer::Uniform>(-stdv, stdv)),
                    ParamAttr::Named("fc_0.b_0"));
}

int ResNetDepth(const std::string& model) {
  std::string lower;
  for (char c : model) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int d : {18, 34, 50, 101, 152}) {
    if (lower == "resnet" + std::to_string(d)) return d;
  }
  FLOTILLA_THROW(InvalidArgument, "unknown model '", model,
                 "' (expected ResNet18, ResNet34, ResNet50, ResNet101 or ResNet152)");
}

Variable LeNet(const Variable& image, int class_dim) {
  auto c1 = layers::conv2d(image, 20, 5, 1, 2, 1, 1, {}, {}, "relu");
  auto p1 = layers::pool2d(c1, 2, "max", 2);
  auto c2 = layers::conv2d(p1, 50, 5, 1, 2, 1, 1, {}, {}, "relu");
  auto p2 = layers::pool2d(c2, 2, "max", 2);
  auto f1 = layers::fc(p2, 500, 1, {}, {}, "relu");
  return layers::fc(f1, class_dim);
}

}  // namespace flotilla::models
