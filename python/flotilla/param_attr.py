"""ParamAttr: how a layer creates a parameter (Paddle's ``fluid.ParamAttr``)."""

from typing import Any, Optional

from . import _core


class ParamAttr:
    """Name, initializer, regularizer and trainability of one parameter.

    Args:
        name: the parameter's name (default: a unique one such as ``fc_0.w_0``).
        initializer: e.g. ``initializer.Xavier()`` (default: the layer's).
        learning_rate: this parameter's multiplier of the optimizer's learning rate.
        regularizer: weight decay of this parameter alone (``L2Decay(1e-4)``).
        trainable: False keeps the parameter fixed (no gradient).
    """

    def __init__(self, name: Optional[str] = None, initializer: Any = None, learning_rate: float = 1.0,
                 regularizer: Any = None, trainable: bool = True, do_model_average: bool = False,
                 need_clip: bool = True):
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable

    def _to_core(self, default_name: Optional[str] = None) -> "_core.ParamAttr":
        return _core.ParamAttr(self.name or default_name or "", self.initializer, self.trainable, self.regularizer,
                               True, float(self.learning_rate))


def to_core(attr: Any, default_name: Optional[str] = None) -> "_core.ParamAttr":
    """Paddle's accepted forms of a ``param_attr``/``bias_attr`` argument as the
    core's ParamAttr: None (defaults), False (no such parameter), a name, an
    initializer, or a :class:`ParamAttr`. ``default_name`` names the
    parameter when the argument does not."""
    if attr is None or attr is True:
        return _core.ParamAttr(default_name or "")
    if attr is False:
        return _core.ParamAttr(enabled=False)
    if isinstance(attr, str):
        return _core.ParamAttr(attr or default_name or "")
    if isinstance(attr, _core.initializer.Initializer):
        return _core.ParamAttr(default_name or "", attr)
    if isinstance(attr, ParamAttr):
        return attr._to_core(default_name)
    if isinstance(attr, _core.ParamAttr):
        return attr
    raise TypeError(f"param_attr must be None, False, a name, an initializer or a ParamAttr; got {attr!r}")


