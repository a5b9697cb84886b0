"""The image-classification networks of the C++ core (``src/models``), in
the shape of Paddle's image-classification ``models`` package:
``models.ResNet50().net(input=image, class_dim=1000)`` appends the network
to the default programs and returns the logits (no softmax).

Parameters carry Paddle's names (``conv1_weights``, ``bn_conv1_scale``,
``res2a_branch2a_weights``, ..., ``fc_0.w_0``), so weights map by name
between Paddle, the C++ API and Python. The blocks are exposed too, for
networks of one's own (:func:`conv_bn_layer`, :func:`basic_block`,
:func:`bottleneck_block`)."""

from typing import List

from .. import _core
from ..framework import Variable

_V = _core.vision

__all__ = ["ResNet", "ResNet18", "ResNet34", "ResNet50", "ResNet101", "ResNet152", "LeNet", "get_model",
           "model_names", "conv_bn_layer", "basic_block", "bottleneck_block"]


class ResNet:
    """ResNet with basic (18, 34) or bottleneck (50, 101, 152) blocks, for
    NCHW images of at least 32x32."""

    def __init__(self, layers: int = 50):
        self.layers = int(layers)

    def net(self, input: Variable, class_dim: int = 1000) -> Variable:
        """Appends the network on ``input`` [N, 3, H, W]; returns logits [N, class_dim]."""
        return _V.resnet(input, self.layers, int(class_dim))


def ResNet18() -> ResNet:
    """ResNet-18."""
    return ResNet(18)


def ResNet34() -> ResNet:
    """ResNet-34."""
    return ResNet(34)


def ResNet50() -> ResNet:
    """ResNet-50."""
    return ResNet(50)


def ResNet101() -> ResNet:
    """ResNet-101."""
    return ResNet(101)


def ResNet152() -> ResNet:
    """ResNet-152."""
    return ResNet(152)


class LeNet:
    """A LeNet-style CNN for small images: two conv(5x5)-relu-maxpool
    stages (20, 50 filters), fc 500 relu, fc class_dim."""

    def net(self, input: Variable, class_dim: int = 10) -> Variable:
        """Appends the network on ``input`` [N, C, H, W]; returns logits."""
        return _V.lenet(input, int(class_dim))


def model_names() -> List[str]:
    """The names :func:`get_model` takes."""
    return ["ResNet18", "ResNet34", "ResNet50", "ResNet101", "ResNet152", "LeNet"]


def get_model(name: str):
    """The model called ``name`` ("ResNet50", "resnet18", "LeNet"); an
    unknown name raises InvalidArgumentError naming the choices."""
    if name.lower() == "lenet":
        return LeNet()
    return ResNet(_V.resnet_depth(name))


def conv_bn_layer(input: Variable, num_filters: int, filter_size: int, stride: int = 1, act=None,
                  name: str = "") -> Variable:
    """conv (no bias) + batch_norm (+ fused relu), named ``<name>_weights``
    and ``bn<name without 'res'>_*`` (``bn_conv1_*`` for ``conv1``)."""
    return _V.conv_bn_layer(input, int(num_filters), int(filter_size), int(stride), act or "", name)


def basic_block(input: Variable, num_filters: int, stride: int, is_first: bool, name: str) -> Variable:
    """Two 3x3 conv-bn layers plus the shortcut, then relu(sum)."""
    return _V.basic_block(input, int(num_filters), int(stride), bool(is_first), name)


def bottleneck_block(input: Variable, num_filters: int, stride: int, name: str) -> Variable:
    """1x1, 3x3 (strided), 1x1 (4x filters) conv-bn layers plus the shortcut."""
    return _V.bottleneck_block(input, int(num_filters), int(stride), name)
