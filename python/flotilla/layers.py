"""Layers (Paddle 1.x ``fluid.layers``): functions that append ops, and their
parameters, to the default programs and return the output Variable."""

from typing import List, Optional, Sequence, Union

from . import _core
from .framework import Variable
from .param_attr import to_core

_L = _core.layers

_ACTS = {None: "", "": "", "relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "softmax": "softmax"}


def _act(act: Optional[str], layer: str) -> str:
    if act not in _ACTS:
        raise ValueError(f"{layer}: act={act!r} is not supported (None, 'relu', 'tanh', 'sigmoid', 'softmax')")
    return _ACTS[act]


def _apply_act(x: Variable, act: Optional[str], layer: str) -> Variable:
    a = _act(act, layer)
    return getattr(_L, a)(x) if a else x


def data(name: str, shape: Sequence[int], dtype="float32", lod_level: int = 0,
         append_batch_size: bool = True, stop_gradient: bool = True, type=None) -> Variable:
    """A variable the user feeds. With ``append_batch_size`` and no -1 in
    ``shape``, a leading -1 (the batch) is added, as Paddle does.

    ``lod_level`` 1: each batch is variable-length sequences packed along the
    first dimension, fed as a LoDTensor (``create_lod_tensor``) or through a
    DataFeeder given one list per sample; ``shape`` is one step's."""
    if lod_level < 0:
        raise ValueError(f"layers.data(name={name!r}): lod_level must be >= 0, got {lod_level}")
    return _L.data(name, [int(d) for d in shape], dtype, append_batch_size, int(lod_level))


def fc(input: Union[Variable, List[Variable]], size: int, num_flatten_dims: int = 1, param_attr=None,
       bias_attr=None, act: Optional[str] = None, is_test: bool = False, name: Optional[str] = None) -> Variable:
    """Fully connected: ``act(input · W + b)``; several inputs sum their products."""
    inputs = list(input) if isinstance(input, (list, tuple)) else [input]
    return _L.fc(inputs, int(size), int(num_flatten_dims), to_core(param_attr), to_core(bias_attr),
                 _act(act, "fc"), name or "")


def embedding(input: Variable, size: Sequence[int], is_sparse: bool = False, is_distributed: bool = False,
              padding_idx: Optional[int] = None, param_attr=None, dtype="float32") -> Variable:
    """Rows of a ``[size[0], size[1]]`` table for int64 ids. ``is_sparse``: the
    gradient is sparse; ``is_distributed``: the table lives on parameter servers."""
    return _L.embedding(input, [int(s) for s in size], is_sparse, is_distributed,
                        -1 if padding_idx is None else int(padding_idx), to_core(param_attr), dtype)


def relu(x: Variable, name=None) -> Variable:
    """max(x, 0)."""
    return _L.relu(x)


def tanh(x: Variable, name=None) -> Variable:
    """Hyperbolic tangent."""
    return _L.tanh(x)


def sigmoid(x: Variable, name=None) -> Variable:
    """1 / (1 + exp(-x))."""
    return _L.sigmoid(x)


def square(x: Variable, name=None) -> Variable:
    """x * x."""
    return _L.square(x)


def softmax(input: Variable, use_cudnn: bool = False, name=None, axis: int = -1) -> Variable:
    """Softmax along ``axis``."""
    return _L.softmax(input, axis)


def scale(x: Variable, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True, act=None,
          name=None) -> Variable:
    """``scale * x + bias`` (or ``scale * (x + bias)``)."""
    return _apply_act(_L.scale(x, float(scale), float(bias), bias_after_scale), act, "scale")


def mean(x: Variable, name=None) -> Variable:
    """Mean of every element: a [1] variable."""
    return _L.mean(x)


def _dims(dim) -> List[int]:
    if dim is None:
        return []
    return [int(d) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]


def reduce_sum(input: Variable, dim=None, keep_dim: bool = False, name=None) -> Variable:
    """Sum over ``dim`` (all dimensions when None)."""
    return _L.reduce_sum(input, _dims(dim), keep_dim)


def reduce_mean(input: Variable, dim=None, keep_dim: bool = False, name=None) -> Variable:
    """Mean over ``dim`` (all dimensions when None)."""
    return _L.reduce_mean(input, _dims(dim), keep_dim)


def elementwise_add(x: Variable, y: Variable, axis: int = -1, act=None, name=None) -> Variable:
    """x + y with Paddle's broadcasting of y from ``axis``."""
    return _L.elementwise_add(x, y, axis, _act(act, "elementwise_add"))


def elementwise_sub(x: Variable, y: Variable, axis: int = -1, act=None, name=None) -> Variable:
    """x - y with Paddle's broadcasting."""
    return _L.elementwise_sub(x, y, axis, _act(act, "elementwise_sub"))


def elementwise_mul(x: Variable, y: Variable, axis: int = -1, act=None, name=None) -> Variable:
    """x * y with Paddle's broadcasting."""
    return _L.elementwise_mul(x, y, axis, _act(act, "elementwise_mul"))


def elementwise_div(x: Variable, y: Variable, axis: int = -1, act=None, name=None) -> Variable:
    """x / y with Paddle's broadcasting."""
    return _L.elementwise_div(x, y, axis, _act(act, "elementwise_div"))


def elementwise_max(x: Variable, y: Variable, axis: int = -1, act=None, name=None) -> Variable:
    """max(x, y) elementwise with Paddle's broadcasting."""
    return _L.elementwise_max(x, y, axis, _act(act, "elementwise_max"))


def elementwise_min(x: Variable, y: Variable, axis: int = -1, act=None, name=None) -> Variable:
    """min(x, y) elementwise with Paddle's broadcasting."""
    return _L.elementwise_min(x, y, axis, _act(act, "elementwise_min"))


def _compare(type_: str, x: Variable, y: Variable, cond) -> Variable:
    if cond is not None:
        raise NotImplementedError(f"fluid.layers.{type_}(cond=...) (writing into a given variable) is not in "
                                  f"Flotilla; nearest: use the returned variable")
    return _L.compare(type_, x, y, -1)


def less_than(x: Variable, y: Variable, force_cpu=None, cond=None, name=None) -> Variable:
    """x < y elementwise: 1/0 as int64 (Flotilla has no bool dtype)."""
    return _compare("less_than", x, y, cond)


def less_equal(x: Variable, y: Variable, cond=None, name=None) -> Variable:
    """x <= y elementwise: 1/0 as int64."""
    return _compare("less_equal", x, y, cond)


def greater_than(x: Variable, y: Variable, cond=None, name=None) -> Variable:
    """x > y elementwise: 1/0 as int64."""
    return _compare("greater_than", x, y, cond)


def greater_equal(x: Variable, y: Variable, cond=None, name=None) -> Variable:
    """x >= y elementwise: 1/0 as int64."""
    return _compare("greater_equal", x, y, cond)


def equal(x: Variable, y: Variable, cond=None, name=None) -> Variable:
    """x == y elementwise: 1/0 as int64."""
    return _compare("equal", x, y, cond)


def not_equal(x: Variable, y: Variable, cond=None, name=None) -> Variable:
    """x != y elementwise: 1/0 as int64."""
    return _compare("not_equal", x, y, cond)


def cos_sim(X: Variable, Y: Variable) -> Variable:
    """Cosine similarity of matching rows of X [N, D] and Y [N or 1, D]: [N, 1]."""
    return _L.cos_sim(X, Y, 0.0)


def softsign(x: Variable, name=None) -> Variable:
    """x / (1 + |x|)."""
    return _L.softsign(x)


def matmul(x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False,
           alpha: float = 1.0, name=None) -> Variable:
    """alpha · op(x) · op(y)."""
    return _L.matmul(x, y, transpose_x, transpose_y, float(alpha))


def sums(input: List[Variable], out=None) -> Variable:
    """Sum of a list of variables of one shape."""
    return _L.sums(list(input))


def concat(input: List[Variable], axis: int = 0, name=None) -> Variable:
    """Concatenation along ``axis``."""
    return _L.concat(list(input), int(axis))


def reshape(x: Variable, shape: Sequence[int], actual_shape=None, act=None, inplace: bool = False,
            name=None) -> Variable:
    """``x`` with a new shape (one entry may be -1; 0 keeps that dimension)."""
    return _apply_act(_L.reshape(x, [int(d) for d in shape]), act, "reshape")


def cast(x: Variable, dtype) -> Variable:
    """``x`` converted to ``dtype``."""
    return _L.cast(x, dtype)


def fill_constant(shape: Sequence[int], dtype, value: float, force_cpu: bool = False, out=None,
                  name=None) -> Variable:
    """A variable of ``shape`` filled with ``value``."""
    return _L.fill_constant([int(d) for d in shape], dtype, float(value), name or "")


def fill_constant_batch_size_like(input: Variable, shape: Sequence[int], dtype, value: float,
                                  input_dim_idx: int = 0, output_dim_idx: int = 0, force_cpu: bool = False
                                  ) -> Variable:
    """A variable of ``shape`` filled with ``value`` whose dim ``output_dim_idx``
    is ``input``'s dim ``input_dim_idx`` (the batch size) at run time."""
    return _L.fill_constant_batch_size_like(input, [int(d) for d in shape], dtype, float(value),
                                            int(input_dim_idx), int(output_dim_idx))


def cross_entropy(input: Variable, label: Variable, soft_label: bool = False,
                  ignore_index: int = -100) -> Variable:
    """-log(input[label]) per row, for probabilities ``input``."""
    return _L.cross_entropy(input, label, soft_label, ignore_index)


def square_error_cost(input: Variable, label: Variable) -> Variable:
    """(input - label)^2 per element."""
    return _L.square_error_cost(input, label)


def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = False,
                               ignore_index: int = -100, numeric_stable_mode: bool = True,
                               return_softmax: bool = False, axis: int = -1) -> Variable:
    """Cross entropy of softmax(logits), computed stably."""
    if return_softmax:
        raise NotImplementedError("softmax_with_cross_entropy(return_softmax=True) is not in Flotilla; "
                                  "call layers.softmax(logits) for the probabilities")
    return _L.softmax_with_cross_entropy(logits, label, soft_label, ignore_index)


def sigmoid_cross_entropy_with_logits(x: Variable, label: Variable, ignore_index: int = -100, name=None,
                                      normalize: bool = False) -> Variable:
    """Logistic loss of logits ``x`` against 0/1 ``label``."""
    return _L.sigmoid_cross_entropy_with_logits(x, label, ignore_index, normalize)


def log_loss(input: Variable, label: Variable, epsilon: float = 1e-4, name=None) -> Variable:
    """Negative log likelihood of probabilities ``input`` against labels in
    [0, 1], elementwise (Paddle's ``fluid.layers.log_loss``)."""
    return _L.log_loss(input, label, float(epsilon))


def accuracy(input: Variable, label: Variable, k: int = 1, correct=None, total=None) -> Variable:
    """Top-k accuracy of class scores against int64 labels."""
    return _L.accuracy(input, label, int(k))


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 4095, topk: int = 1,
        slide_steps: int = 1):
    """Streaming ROC AUC of the positive-class scores ``input[:, -1]`` (or a
    [N, 1] score) against 0/1 ``label``, over every batch since the startup
    program ran. Returns Paddle's ``(auc, batch_auc, [batch_stat_pos,
    batch_stat_neg, stat_pos, stat_neg])``; Flotilla keeps one window (the
    whole run), so ``batch_auc`` is ``auc`` and the batch states are the
    global ones."""
    if curve != "ROC":
        raise NotImplementedError(f"layers.auc(curve={curve!r}): only 'ROC' is in Flotilla")
    if topk != 1:
        raise NotImplementedError(f"layers.auc(topk={topk}): only topk=1 is in Flotilla")
    auc_var, stat_pos, stat_neg = _L.auc(input, label, int(num_thresholds))
    return auc_var, auc_var, [stat_pos, stat_neg, stat_pos, stat_neg]


def create_parameter(shape: Sequence[int], dtype, name=None, attr=None, is_bias: bool = False,
                     default_initializer=None) -> Variable:
    """A trainable parameter initialised by the startup program."""
    core_attr = to_core(attr if attr is not None else name)
    return _L.create_parameter([int(d) for d in shape], dtype, core_attr, is_bias, default_initializer)


def create_global_var(shape: Sequence[int], value: float, dtype, persistable: bool = False,
                      force_cpu: bool = False, name=None) -> Variable:
    """A variable set to ``value`` by the startup program."""
    return _L.create_global_var([int(d) for d in shape], float(value), dtype, persistable, name or "")


# ---- learning-rate schedules ----

def exponential_decay(learning_rate: float, decay_steps: int, decay_rate: float,
                      staircase: bool = False) -> Variable:
    """lr · rate^(step / decay_steps)."""
    return _L.exponential_decay(float(learning_rate), int(decay_steps), float(decay_rate), staircase)


def natural_exp_decay(learning_rate: float, decay_steps: int, decay_rate: float,
                      staircase: bool = False) -> Variable:
    """lr · exp(-rate · step / decay_steps)."""
    return _L.natural_exp_decay(float(learning_rate), int(decay_steps), float(decay_rate), staircase)


def inverse_time_decay(learning_rate: float, decay_steps: int, decay_rate: float,
                       staircase: bool = False) -> Variable:
    """lr / (1 + rate · step / decay_steps)."""
    return _L.inverse_time_decay(float(learning_rate), int(decay_steps), float(decay_rate), staircase)


def polynomial_decay(learning_rate: float, decay_steps: int, end_learning_rate: float = 0.0001,
                     power: float = 1.0, cycle: bool = False) -> Variable:
    """Polynomial decay from ``learning_rate`` to ``end_learning_rate``."""
    return _L.polynomial_decay(float(learning_rate), int(decay_steps), float(end_learning_rate),
                               float(power), cycle)


def piecewise_decay(boundaries: Sequence[int], values: Sequence[float]) -> Variable:
    """values[i] while step < boundaries[i]."""
    return _L.piecewise_decay([int(b) for b in boundaries], [float(v) for v in values])


def cosine_decay(learning_rate: float, step_each_epoch: int, epochs: int) -> Variable:
    """lr · (cos(epoch · π / epochs) + 1) / 2."""
    return _L.cosine_decay(float(learning_rate), int(step_each_epoch), int(epochs))


def noam_decay(d_model: float, warmup_steps: int, learning_rate: float = 1.0) -> Variable:
    """The Transformer's schedule."""
    return _L.noam_decay(float(d_model), int(warmup_steps), float(learning_rate))


def linear_lr_warmup(learning_rate, warmup_steps: int, start_lr: float, end_lr: float) -> Variable:
    """Linear ramp from ``start_lr`` to ``end_lr``, then ``learning_rate`` (a float or a schedule)."""
    if isinstance(learning_rate, Variable):
        return _L.linear_lr_warmup(learning_rate, int(warmup_steps), float(start_lr), float(end_lr))
    return _L.linear_lr_warmup(float(learning_rate), int(warmup_steps), float(start_lr), float(end_lr))


# ---- convolutional networks (conv2d, pool2d, batch_norm, ...): nn_layers.py ----
from .nn_layers import *  # noqa: E402,F401,F403
from .sequence_lod import *  # noqa: E402,F401,F403
