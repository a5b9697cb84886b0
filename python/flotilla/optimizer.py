"""Optimizers (Paddle's ``fluid.optimizer`` and ``paddle.optimizer``).

``minimize(loss)`` appends backward ops and one update op per parameter to
the loss's program (the C++ core's ``optimizer::*::minimize``). Both Paddle
spellings are accepted: 1.x ``parameter_list=``/``regularization=`` and 2.x
``parameters=``/``weight_decay=`` (a float is an L2 decay coefficient). The
learning rate is a float or a schedule Variable (``layers.exponential_decay``).
"""

from typing import Any, Iterable, List, Optional, Sequence, Tuple

from . import _core
from .framework import Program, Variable

_O = _core.optimizer


def _rate(learning_rate: Any) -> Any:
    if isinstance(learning_rate, Variable):
        return learning_rate
    if isinstance(learning_rate, (int, float)) and not isinstance(learning_rate, bool):
        return float(learning_rate)
    raise NotImplementedError(
        f"learning_rate={learning_rate!r}: Flotilla takes a float or a schedule Variable "
        "(fluid.layers.exponential_decay, piecewise_decay, ...); paddle.optimizer.lr.LRScheduler "
        "objects are not in Flotilla")


def _decay(regularization: Any, weight_decay: Any) -> Any:
    if regularization is not None and weight_decay is not None:
        raise ValueError("give either regularization= (Paddle 1.x) or weight_decay= (2.x), not both")
    decay = regularization if regularization is not None else weight_decay
    if isinstance(decay, (int, float)) and not isinstance(decay, bool):
        return _core.regularizer.L2Decay(float(decay))
    return decay


def _check_unsupported(name: str, grad_clip: Any) -> None:
    if grad_clip is not None:
        raise NotImplementedError(f"{name}(grad_clip=...) (Paddle's gradient clipping) is not in "
                                  "Flotilla yet; nearest: a smaller learning rate")


def _names(items: Optional[Any]) -> List[str]:
    """The names of ``items``: variables or names, or one of either (as
    Paddle takes ``target_vars=loss``)."""
    if items is None:
        return []
    if isinstance(items, (Variable, str)):
        items = [items]
    return [v.name if isinstance(v, Variable) else str(v) for v in items]


class Optimizer:
    """Base of the optimizers: ``minimize``, ``backward`` + ``apply_gradients``."""

    _core: Any
    _parameters: List[str]

    def _init(self, core: Any, parameters: Any) -> None:
        self._core = core
        self._parameters = _names(parameters)

    def minimize(self, loss: Variable, startup_program: Optional[Program] = None,
                 parameter_list: Optional[Sequence[Any]] = None,
                 no_grad_set: Optional[Iterable[Any]] = None) -> Tuple[List[str], List[Tuple[Variable, Variable]]]:
        """Appends backward and update ops for ``loss``; returns
        ``(optimize op types, [(param, grad), ...])``."""
        params = _names(parameter_list) or self._parameters
        return self._core.minimize(loss, startup_program, params, set(_names(no_grad_set)))

    @property
    def type(self) -> str:
        """The update op's type ("sgd", "momentum", "adam", "adagrad")."""
        return self._core.type

    def get_lr(self) -> float:
        """The constant learning rate (Paddle 2.x ``get_lr``)."""
        return self._core.learning_rate


class SGD(Optimizer):
    """param -= lr · grad."""

    def __init__(self, learning_rate: Any = 0.001, parameter_list: Any = None, regularization: Any = None,
                 grad_clip: Any = None, name: Optional[str] = None, parameters: Any = None,
                 weight_decay: Any = None):
        _check_unsupported("SGD", grad_clip)
        self._init(_O.SGD(_rate(learning_rate), _decay(regularization, weight_decay)),
                   parameter_list or parameters)


class Momentum(Optimizer):
    """velocity = mu · velocity + grad; param -= lr · velocity (or Nesterov's)."""

    def __init__(self, learning_rate: Any = 0.001, momentum: float = 0.9, parameter_list: Any = None,
                 use_nesterov: bool = False, regularization: Any = None, grad_clip: Any = None,
                 name: Optional[str] = None, parameters: Any = None, weight_decay: Any = None,
                 rescale_grad: float = 1.0):
        _check_unsupported("Momentum", grad_clip)
        if rescale_grad != 1.0:
            raise NotImplementedError("Momentum(rescale_grad != 1.0) is not in Flotilla; scale the loss")
        self._init(_O.Momentum(_rate(learning_rate), float(momentum), bool(use_nesterov),
                               _decay(regularization, weight_decay)), parameter_list or parameters)


class Adam(Optimizer):
    """Adam (Kingma & Ba)."""

    def __init__(self, learning_rate: Any = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameter_list: Any = None, regularization: Any = None,
                 grad_clip: Any = None, name: Optional[str] = None, lazy_mode: bool = False,
                 parameters: Any = None, weight_decay: Any = None):
        _check_unsupported("Adam", grad_clip)
        self._init(_O.Adam(_rate(learning_rate), float(beta1), float(beta2), float(epsilon),
                           _decay(regularization, weight_decay)), parameter_list or parameters)


class Adagrad(Optimizer):
    """Adagrad: per-coordinate rates from the sum of squared gradients."""

    def __init__(self, learning_rate: Any = 0.001, epsilon: float = 1e-6, parameter_list: Any = None,
                 regularization: Any = None, grad_clip: Any = None, name: Optional[str] = None,
                 initial_accumulator_value: float = 0.0, parameters: Any = None, weight_decay: Any = None):
        _check_unsupported("Adagrad", grad_clip)
        self._init(_O.Adagrad(_rate(learning_rate), float(epsilon), float(initial_accumulator_value),
                              _decay(regularization, weight_decay)), parameter_list or parameters)


# Paddle 1.x spellings.
SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
AdagradOptimizer = Adagrad

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "Adagrad", "SGDOptimizer", "MomentumOptimizer",
           "AdamOptimizer", "AdagradOptimizer"]
