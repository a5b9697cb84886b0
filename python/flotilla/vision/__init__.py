"""Image classification: the C++ core's models (:mod:`flotilla.vision.models`:
ResNet-18/34/50/101/152 with Paddle's parameter names, LeNet) and the
ImageNet-layout reader (:class:`ImageNetReader`) that Paddle's
image-classification scripts read."""

from . import models  # noqa: F401
from .imagenet import ImageNetReader  # noqa: F401

__all__ = ["models", "ImageNetReader"]
