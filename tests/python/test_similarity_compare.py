"""softsign, cosine similarity (fluid.layers.cos_sim,
paddle.nn.functional.cosine_similarity), elementwise max/min (with NumPy's
broadcasting) and the comparisons (paddle.less_than, ...): forward and
backward against PyTorch 1.13 (skipped with a message where torch is
missing) and NumPy."""

import numpy as np
import pytest

from flotilla import fluid
from flotilla.paddle_compat import paddle_root as paddle
import flotilla.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch 1.13 (python3-torch) is not installed: no "
                                 "comparison against it")
RNG = np.random.RandomState(5)


@pytest.fixture(autouse=True)
def _fresh(programs):
    """Every test builds into fresh programs and scope (conftest.programs)."""
    yield


def _data(name, value):
    v = fluid.layers.data(name=name, shape=list(value.shape), dtype="float64", append_batch_size=False)
    v.stop_gradient = False
    return v


def _run(build, **inputs):
    """out = build(*vars); loss = sum(out * r); returns out, r and d(loss)/d(input) per input."""
    names = list(inputs)
    out = build(*[_data(n, inputs[n]) for n in names])
    r_value = RNG.uniform(-1, 1, [inputs[names[0]].shape[0]] + [d for d in out.shape[1:]])
    r = fluid.layers.data(name="r", shape=list(r_value.shape), dtype="float64", append_batch_size=False)
    loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, r))
    fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fetched = exe.run(fluid.default_main_program(), feed={**inputs, "r": r_value},
                      fetch_list=[out] + [n + "@GRAD" for n in names])
    return fetched[0], r_value, dict(zip(names, fetched[1:]))


def _torch(fn, r_value, **inputs):
    ts = {n: torch.tensor(v, requires_grad=True) for n, v in inputs.items()}
    out = fn(**ts)
    (out * torch.tensor(r_value).reshape(out.shape)).sum().backward()
    return out.detach().numpy(), {n: t.grad.numpy() for n, t in ts.items()}


@needs_torch
def test_softsign_matches_torch():
    x = RNG.uniform(-3, 3, (4, 5))
    out, r, grads = _run(F.softsign, x=x)
    want, want_grads = _torch(lambda x: TF.softsign(x), r, x=x)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(grads["x"], want_grads["x"], rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("y_rows", [6, 1])
def test_cosine_similarity_matches_torch(y_rows):
    x, y = RNG.uniform(-1, 1, (6, 4)), RNG.uniform(-1, 1, (y_rows, 4))
    out, r, grads = _run(lambda a, b: F.cosine_similarity(a, b, axis=1), x=x, y=y)
    want, want_grads = _torch(lambda x, y: TF.cosine_similarity(x, y, dim=1), r, x=x, y=y)
    assert out.shape == (6,)
    np.testing.assert_allclose(out, want, rtol=1e-10)
    np.testing.assert_allclose(grads["x"], want_grads["x"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads["y"], want_grads["y"], rtol=1e-9, atol=1e-12)


def test_cos_sim_layer_gives_a_column():
    x, y = RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (3, 4))
    out, _, _ = _run(fluid.layers.cos_sim, x=x, y=y)
    want = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    np.testing.assert_allclose(out, want.reshape(3, 1), rtol=1e-12)


@needs_torch
@pytest.mark.parametrize("fn,torch_fn", [(paddle.maximum, torch.maximum if torch else None),
                                         (paddle.minimum, torch.minimum if torch else None)])
def test_maximum_minimum_broadcast_as_numpy_and_match_torch(fn, torch_fn):
    x, y = RNG.uniform(-1, 1, (4, 1)), RNG.uniform(-1, 1, (4,))  # [4, 1] with [4] -> [4, 4]
    out, r, grads = _run(fn, x=x, y=y)
    want, want_grads = _torch(lambda x, y: torch_fn(x, y), r, x=x, y=y)
    assert out.shape == (4, 4)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_allclose(grads["x"], want_grads["x"], rtol=1e-12)
    np.testing.assert_allclose(grads["y"], want_grads["y"], rtol=1e-12)


def test_comparisons_give_ones_and_zeros():
    x = fluid.layers.data(name="x", shape=[2, 3], dtype="float32", append_batch_size=False)
    y = fluid.layers.data(name="y", shape=[3], dtype="float32", append_batch_size=False)
    fns = [paddle.less_than, paddle.less_equal, paddle.greater_than, paddle.greater_equal, paddle.equal,
           paddle.not_equal]
    outs = [fn(x, y) for fn in fns]
    x_value = np.array([[1, 2, 3], [3, 2, 1]], np.float32)
    y_value = np.array([2, 2, 2], np.float32)
    exe = fluid.Executor(fluid.CPUPlace())
    got = exe.run(fluid.default_main_program(), feed={"x": x_value, "y": y_value}, fetch_list=outs)
    for fn, want, value in zip(fns, [np.less, np.less_equal, np.greater, np.greater_equal, np.equal,
                                     np.not_equal], got):
        assert value.dtype == np.int64, fn.__name__
        np.testing.assert_array_equal(value, want(x_value, y_value).astype(np.int64), err_msg=fn.__name__)


def test_fill_constant_batch_size_like_follows_the_batch():
    x = fluid.layers.data(name="x", shape=[-1, 3], dtype="float32", append_batch_size=False)
    out = fluid.layers.fill_constant_batch_size_like(input=x, shape=[-1, 1], value=0.5, dtype="float32")
    exe = fluid.Executor(fluid.CPUPlace())
    (value,) = exe.run(fluid.default_main_program(), feed={"x": np.zeros((5, 3), np.float32)}, fetch_list=[out])
    np.testing.assert_array_equal(value, np.full((5, 1), 0.5, np.float32))


def test_param_attr_learning_rate_scales_the_update():
    x = fluid.layers.data(name="x", shape=[-1, 2], dtype="float32", append_batch_size=False)
    fast = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="fast", learning_rate=3.0,
                                                             initializer=fluid.initializer.Constant(0.5)),
                           bias_attr=False)
    slow = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="slow", initializer=fluid.initializer.Constant(0.5)),
                           bias_attr=False)
    loss = fluid.layers.mean(fluid.layers.elementwise_add(fast, slow))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    exe.run(fluid.default_main_program(), feed={"x": np.array([[1, 2], [3, 4]], np.float32)})
    scope = fluid.global_scope()
    fast_step = 0.5 - np.array(scope.find_var("fast").get_tensor())
    slow_step = 0.5 - np.array(scope.find_var("slow").get_tensor())
    np.testing.assert_allclose(slow_step.ravel(), [0.2, 0.3], rtol=1e-6)  # 0.1 * mean of x's columns
    np.testing.assert_allclose(fast_step, 3 * slow_step, rtol=1e-6)
