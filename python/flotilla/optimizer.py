"""Optimizers with Paddle 1.x names (``fluid.optimizer``): ``minimize(loss)``
appends backward and update ops and returns ``(optimize_ops, params_grads)``."""

from typing import Any, List, Optional, Sequence, Set, Tuple

from . import _core
from .framework import Program, Variable

_O = _core.optimizer


class Optimizer:
    """Base of Flotilla's optimizers: wraps the C++ optimizer ``self._core``."""

    _core: "_O.Optimizer"

    def minimize(self, loss: Variable, startup_program: Optional[Program] = None,
                 parameter_list: Optional[Sequence[Any]] = None,
                 no_grad_set: Optional[Set[Any]] = None) -> Tuple[List[str], List[Tuple[Variable, Variable]]]:
        """Appends backward ops for ``loss`` and one update op per parameter.

        Args:
            loss: the scalar to minimise.
            startup_program: where the learning rate and accumulators are
                initialised (default: the default startup program).
            parameter_list: parameters (or names) to update; default all.
            no_grad_set: variables (or names) that get no gradient.
        """
        params = [p.name if isinstance(p, Variable) else str(p) for p in (parameter_list or [])]
        no_grad = {v.name if isinstance(v, Variable) else str(v) for v in (no_grad_set or set())}
        return self._core.minimize(loss, startup_program, params, no_grad)

    @property
    def type(self) -> str:
        return self._core.type


def _rate(learning_rate: Any) -> Any:
    if isinstance(learning_rate, Variable):
        return learning_rate
    if hasattr(learning_rate, "_flotilla_schedule"):  # paddle.optimizer.lr schedulers
        return learning_rate._flotilla_schedule()
    return float(learning_rate)


class SGD(Optimizer):
    """param -= lr · grad."""

    def __init__(self, learning_rate: Any, regularization: Any = None, name: Optional[str] = None):
        self._core = _O.SGD(_rate(learning_rate), regularization)


class Momentum(Optimizer):
    """velocity = mu · velocity + grad; param -= lr · velocity (or Nesterov's)."""

    def __init__(self, learning_rate: Any, momentum: float, use_nesterov: bool = False,
                 regularization: Any = None, name: Optional[str] = None):
        self._core = _O.Momentum(_rate(learning_rate), float(momentum), use_nesterov, regularization)


class Adam(Optimizer):
    """Adam (Kingma & Ba)."""

    def __init__(self, learning_rate: Any = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, regularization: Any = None, name: Optional[str] = None,
                 lazy_mode: bool = False):
        self._core = _O.Adam(_rate(learning_rate), float(beta1), float(beta2), float(epsilon), regularization)


class Adagrad(Optimizer):
    """Adagrad: per-coordinate rates from the sum of squared gradients."""

    def __init__(self, learning_rate: Any, epsilon: float = 1e-6, regularization: Any = None,
                 name: Optional[str] = None, initial_accumulator_value: float = 0.0):
        self._core = _O.Adagrad(_rate(learning_rate), float(epsilon), float(initial_accumulator_value),
                                regularization)


SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
AdagradOptimizer = Adagrad
