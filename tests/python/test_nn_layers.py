"""The convolutional layers of the Python package (fluid.layers,
paddle.static.nn and paddle.nn.functional names): forward and backward
against PyTorch 1.13 (skipped with a message where torch is missing), and
networks written with them the way Paddle's models are written against the
same networks built by the C++ core (flotilla.vision's bound models)."""

import numpy as np
import pytest

import flotilla
from flotilla import errors, fluid
import flotilla.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch 1.13 (python3-torch, scripts/install-deps.sh "
                                 "--bench) is not installed: no comparison against it")

RNG = np.random.RandomState(13)


def _rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def _set(name, value):
    fluid.global_scope().var(name).get_tensor().set(np.ascontiguousarray(value, np.float32), fluid.CPUPlace())


def _get(name):
    return np.array(fluid.global_scope().find_var(name).get_tensor())


def _forward_backward(x_value, build, params=None, extra_feed=None, wrt=()):
    """Builds ``out = build(x)``, loss = sum(out * r) for a random r, sets
    ``params`` by name, runs once; returns out, r, dx and the gradients of ``wrt``."""
    x = fluid.layers.data(name="x", shape=list(x_value.shape), dtype="float32", append_batch_size=False)
    x.stop_gradient = False
    out = build(x)
    r_value = _rand(*[x_value.shape[0]] + list(out.shape[1:]))
    r = fluid.layers.data(name="r", shape=list(r_value.shape), dtype="float32", append_batch_size=False)
    loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, r))
    fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    for name, value in (params or {}).items():
        _set(name, value)
    feed = {"x": x_value, "r": r_value, **(extra_feed or {})}
    fetched = exe.run(fluid.default_main_program(), feed=feed,
                      fetch_list=[out, "x@GRAD"] + [n + "@GRAD" for n in wrt])
    return fetched[0], r_value, fetched[1], dict(zip(wrt, fetched[2:]))


def _torch_grads(fn, x_value, r_value, params):
    """out, dx and d(params) of sum(fn(x, **params) * r) in PyTorch."""
    xt = torch.tensor(x_value, requires_grad=True)
    pt = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    out = fn(xt, **pt)
    (out * torch.tensor(r_value)).sum().backward()
    return out.detach().numpy(), xt.grad.numpy(), {k: v.grad.numpy() for k, v in pt.items()}


def _close(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(a - b).max()) if a.size else 0.0
    assert err <= 1e-4 * scale, f"{what}: max |flotilla - torch| = {err:.3g} (scale {scale:.3g})"


# ---- layers against PyTorch 1.13 ----

@needs_torch
@pytest.mark.parametrize("case", [
    # padding as Flotilla takes it, and as [top, bottom, left, right] for torch
    dict(filters=6, k=3, stride=2, padding=[1, 0, 2, 1], pads=[1, 0, 2, 1], dilation=1, groups=2),
    dict(filters=4, k=3, stride=1, padding=2, pads=[2, 2, 2, 2], dilation=2, groups=1),
    dict(filters=8, k=3, stride=1, padding=[[0, 0], [0, 0], [1, 2], [2, 1]], pads=[1, 2, 2, 1], dilation=1,
         groups=4),  # depthwise
    dict(filters=5, k=[3, 1], stride=[1, 2], padding=[1, 0], pads=[1, 1, 0, 0], dilation=1, groups=1),
], ids=["asym-pad-groups", "dilated", "depthwise", "rect"])
def test_conv2d_matches_torch(programs, case):
    x = _rand(2, 4, 9, 9)
    kh, kw = (case["k"], case["k"]) if isinstance(case["k"], int) else case["k"]
    w, b = _rand(case["filters"], 4 // case["groups"], kh, kw), _rand(case["filters"])
    out, r, dx, g = _forward_backward(
        x, lambda v: fluid.layers.conv2d(v, case["filters"], case["k"], stride=case["stride"],
                                         padding=case["padding"], dilation=case["dilation"], groups=case["groups"],
                                         param_attr="w", bias_attr="b"),
        {"w": w, "b": b}, wrt=("w", "b"))
    pads = case["pads"]

    def conv(xt, w, b):
        xp = TF.pad(xt, [pads[2], pads[3], pads[0], pads[1]])
        return TF.conv2d(xp, w, b, stride=case["stride"], dilation=case["dilation"], groups=case["groups"])
    t_out, t_dx, t_g = _torch_grads(conv, x, r, {"w": w, "b": b})
    _close(out, t_out, "conv2d output")
    _close(dx, t_dx, "conv2d input@GRAD")
    _close(g["w"], t_g["w"], "conv2d filter@GRAD")
    _close(g["b"], t_g["b"], "conv2d bias@GRAD")


@needs_torch
def test_conv2d_transpose_matches_torch(programs):
    x, w, b = _rand(2, 4, 5, 5), _rand(4, 3, 3, 3), _rand(3)
    out, r, dx, g = _forward_backward(
        x, lambda v: fluid.layers.conv2d_transpose(v, 3, output_size=[10, 10], filter_size=3, padding=1, stride=2,
                                                   param_attr="w", bias_attr="b"),
        {"w": w, "b": b}, wrt=("w",))
    assert out.shape == (2, 3, 10, 10)
    t_out, t_dx, t_g = _torch_grads(
        lambda xt, w, b: TF.conv_transpose2d(xt, w, b, stride=2, padding=1, output_padding=1), x, r, {"w": w, "b": b})
    _close(out, t_out, "conv2d_transpose output")
    _close(dx, t_dx, "conv2d_transpose input@GRAD")
    _close(g["w"], t_g["w"], "conv2d_transpose filter@GRAD")


@needs_torch
@pytest.mark.parametrize("kind", ["max-ceil", "avg-exclusive", "avg-inclusive", "global", "adaptive-avg",
                                  "adaptive-max"])
def test_pooling_matches_torch(programs, kind):
    x = _rand(2, 3, 7, 7)
    build, ref = {
        "max-ceil": (lambda v: fluid.layers.pool2d(v, 3, "max", 2, 1, ceil_mode=True),
                     lambda t: TF.max_pool2d(t, 3, 2, 1, ceil_mode=True)),
        "avg-exclusive": (lambda v: fluid.layers.pool2d(v, 3, "avg", 2, 1),
                          lambda t: TF.avg_pool2d(t, 3, 2, 1, count_include_pad=False)),
        "avg-inclusive": (lambda v: F.avg_pool2d(v, 2, 2, 1, exclusive=False),
                          lambda t: TF.avg_pool2d(t, 2, 2, 1, count_include_pad=True)),
        "global": (lambda v: fluid.layers.pool2d(v, pool_type="avg", global_pooling=True),
                   lambda t: TF.adaptive_avg_pool2d(t, 1)),
        "adaptive-avg": (lambda v: F.adaptive_avg_pool2d(v, [3, 2]), lambda t: TF.adaptive_avg_pool2d(t, [3, 2])),
        "adaptive-max": (lambda v: fluid.layers.adaptive_pool2d(v, 3, "max"), lambda t: TF.adaptive_max_pool2d(t, 3)),
    }[kind]
    out, r, dx, _ = _forward_backward(x, build)
    t_out, t_dx, _ = _torch_grads(ref, x, r, {})
    _close(out, t_out, f"{kind} output")
    _close(dx, t_dx, f"{kind} input@GRAD")


@needs_torch
def test_batch_norm_training_matches_torch_and_updates_moving_statistics(programs):
    x, scale, bias = _rand(4, 3, 5, 5) * 3 + 1, _rand(3) + 1.5, _rand(3)
    out, r, dx, g = _forward_backward(
        x, lambda v: fluid.layers.batch_norm(v, momentum=0.8, epsilon=1e-5, param_attr="s", bias_attr="o",
                                             moving_mean_name="m", moving_variance_name="var"),
        {"s": scale, "o": bias}, wrt=("s", "o"))
    t_out, t_dx, t_g = _torch_grads(
        lambda xt, s, o: TF.batch_norm(xt, None, None, s, o, training=True, eps=1e-5), x, r, {"s": scale, "o": bias})
    _close(out, t_out, "batch_norm output")
    _close(dx, t_dx, "batch_norm input@GRAD")
    _close(g["s"], t_g["s"], "batch_norm scale@GRAD")
    _close(g["o"], t_g["o"], "batch_norm bias@GRAD")
    np.testing.assert_allclose(_get("m"), 0.2 * x.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_get("var"), 0.8 + 0.2 * x.var(axis=(0, 2, 3)), rtol=1e-5)  # biased, as Paddle


@needs_torch
def test_layer_norm_and_group_norm_match_torch(programs):
    x = _rand(2, 4, 3, 3)
    w, b = _rand(36), _rand(36)
    out, r, dx, g = _forward_backward(
        x, lambda v: fluid.layers.layer_norm(v, begin_norm_axis=1, param_attr="lw", bias_attr="lb"),
        {"lw": w, "lb": b}, wrt=("lw",))
    t_out, t_dx, t_g = _torch_grads(
        lambda xt, lw, lb: TF.layer_norm(xt, [4, 3, 3], lw.reshape(4, 3, 3), lb.reshape(4, 3, 3)), x, r,
        {"lw": w, "lb": b})
    _close(out, t_out, "layer_norm output")
    _close(dx, t_dx, "layer_norm input@GRAD")
    _close(g["lw"], t_g["lw"], "layer_norm scale@GRAD")


@needs_torch
def test_group_norm_matches_torch(programs):
    x, w, b = _rand(2, 4, 3, 3), _rand(4), _rand(4)
    out, r, dx, g = _forward_backward(
        x, lambda v: fluid.layers.group_norm(v, groups=2, param_attr="gw", bias_attr="gb"), {"gw": w, "gb": b},
        wrt=("gw", "gb"))
    t_out, t_dx, t_g = _torch_grads(lambda xt, gw, gb: TF.group_norm(xt, 2, gw, gb), x, r, {"gw": w, "gb": b})
    _close(out, t_out, "group_norm output")
    _close(dx, t_dx, "group_norm input@GRAD")
    _close(g["gw"], t_g["gw"], "group_norm scale@GRAD")
    _close(g["gb"], t_g["gb"], "group_norm bias@GRAD")


@needs_torch
@pytest.mark.parametrize("kind", ["relu6", "hard_swish", "bilinear-corners", "bilinear-half-pixel", "nearest",
                                  "reflect", "replicate"])
def test_activations_resize_and_pad_match_torch(programs, kind):
    x = _rand(2, 3, 5, 6) * 8
    build, ref = {
        "relu6": (lambda v: fluid.layers.relu6(v), TF.relu6),
        "hard_swish": (lambda v: F.hardswish(v), TF.hardswish),
        "bilinear-corners": (lambda v: fluid.layers.resize_bilinear(v, out_shape=[9, 4]),
                             lambda t: TF.interpolate(t, size=[9, 4], mode="bilinear", align_corners=True)),
        "bilinear-half-pixel": (lambda v: F.interpolate(v, size=[8, 11], mode="bilinear"),
                                lambda t: TF.interpolate(t, size=[8, 11], mode="bilinear", align_corners=False)),
        "nearest": (lambda v: F.interpolate(v, scale_factor=2, mode="nearest"),
                    lambda t: TF.interpolate(t, scale_factor=2, mode="nearest")),
        "reflect": (lambda v: fluid.layers.pad2d(v, [1, 2, 2, 1], mode="reflect"),
                    lambda t: TF.pad(t, [2, 1, 1, 2], mode="reflect")),
        "replicate": (lambda v: F.pad(v, [2, 1, 1, 2], mode="replicate"),
                      lambda t: TF.pad(t, [2, 1, 1, 2], mode="replicate")),
    }[kind]
    out, r, dx, _ = _forward_backward(x, build)
    t_out, t_dx, _ = _torch_grads(ref, x, r, {})
    _close(out, t_out, f"{kind} output")
    _close(dx, t_dx, f"{kind} input@GRAD")


@needs_torch
def test_functional_conv_and_batch_norm_over_given_weights_match_torch(programs):
    x = _rand(2, 3, 6, 6)
    w, b = _rand(4, 3, 3, 3), _rand(4)

    def build(v):
        wv = fluid.layers.create_parameter([4, 3, 3, 3], "float32", name="fw")
        bv = fluid.layers.create_parameter([4], "float32", name="fb", is_bias=True)
        return F.conv2d(v, wv, bv, stride=1, padding="same")
    out, r, dx, g = _forward_backward(x, build, {"fw": w, "fb": b}, wrt=("fw",))
    t_out, t_dx, t_g = _torch_grads(lambda xt, fw, fb: TF.conv2d(xt, fw, fb, padding="same"), x, r,
                                    {"fw": w, "fb": b})
    _close(out, t_out, "F.conv2d output")
    _close(dx, t_dx, "F.conv2d input@GRAD")
    _close(g["fw"], t_g["fw"], "F.conv2d weight@GRAD")


def test_functional_batch_norm_evaluates_with_running_statistics(programs):
    x = _rand(2, 3, 4, 4)
    mean, var = _rand(3), _rand(3) ** 2 + 0.5
    w, b = _rand(3), _rand(3)

    def build(v):
        names = ("rm", "rv", "bw", "bb")
        rm, rv, bw, bb = (fluid.layers.create_global_var([3], 0.0, "float32", persistable=True, name=n) for n in names)
        return F.batch_norm(v, rm, rv, bw, bb, training=False, epsilon=1e-5)
    out, _, _, _ = _forward_backward(x, build, {"rm": mean, "rv": var, "bw": w, "bb": b})
    c = (slice(None), None, None)
    expected = (x - mean[c]) / np.sqrt(var[c] + 1e-5) * w[c] + b[c]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(_get("rm"), mean)  # evaluation leaves them alone


# ---- labels, dropout, layout ----

def test_one_hot_and_label_smooth(programs):
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
    hot = fluid.layers.one_hot(ids, depth=4)
    smooth = fluid.layers.label_smooth(hot, epsilon=0.2)
    v2 = F.one_hot(ids, num_classes=4)
    assert hot.shape == (-1, 4) and v2.shape == (-1, 1, 4)
    exe = fluid.Executor(fluid.CPUPlace())
    labels = np.array([[2], [0], [3]], np.int64)
    h, s, h2 = exe.run(feed={"ids": labels}, fetch_list=[hot, smooth, v2])
    np.testing.assert_array_equal(h, np.eye(4, dtype=np.float32)[labels[:, 0]])
    np.testing.assert_allclose(s, 0.8 * h + 0.05, rtol=1e-6)
    np.testing.assert_array_equal(h2[:, 0, :], h)
    with pytest.raises(errors.InvalidArgumentError, match=r"not a class id in \[0, 4\)"):
        exe.run(feed={"ids": np.array([[4]], np.int64)}, fetch_list=[hot])


def test_dropout_trains_masked_and_is_off_for_test(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[1000], dtype="float32")
    up = fluid.layers.dropout(x, 0.3, dropout_implementation="upscale_in_train", seed=7)
    down = F.dropout(x, p=0.3, mode="downscale_in_infer")
    test = main.clone(for_test=True)
    exe = fluid.Executor(fluid.CPUPlace())
    ones = np.ones((4, 1000), np.float32)
    a, b = exe.run(main, feed={"x": ones}, fetch_list=[up, down])
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.7)} and abs((a == 0).mean() - 0.3) < 0.03
    assert set(np.unique(b)) <= {0.0, 1.0} and abs((b == 0).mean() - 0.3) < 0.03
    a2, b2 = exe.run(main, feed={"x": ones}, fetch_list=[up, down])
    np.testing.assert_array_equal(a, a2)  # a seed fixes the mask (Paddle's fix_seed)
    assert not np.array_equal(b, b2), "an unseeded dropout draws a new mask every step"
    ta, tb = exe.run(test, feed={"x": ones}, fetch_list=[up, down])
    np.testing.assert_array_equal(ta, ones)
    np.testing.assert_allclose(tb, 0.7 * ones, rtol=1e-6)


def test_layout_layers_shapes_and_values(programs):
    x = fluid.layers.data(name="x", shape=[2, 3, 4], dtype="float32")
    flat = fluid.layers.flatten(x, axis=2)
    perm = fluid.layers.transpose(x, perm=[0, 3, 1, 2])
    padded = fluid.layers.pad(x, paddings=[0, 0, 0, 0, 1, 0, 0, 2], pad_value=-1.0)
    assert flat.shape == (-1, 12) or flat.shape[1] == 12
    assert perm.shape == (-1, 4, 2, 3) and padded.shape == (-1, 2, 4, 6)
    value = _rand(2, 2, 3, 4)
    f, p, d = fluid.Executor(fluid.CPUPlace()).run(feed={"x": value}, fetch_list=[flat, perm, padded])
    np.testing.assert_array_equal(f, value.reshape(4, 12))
    np.testing.assert_array_equal(p, value.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(d, np.pad(value, [(0, 0), (0, 0), (1, 0), (0, 2)], constant_values=-1.0))


def test_static_nn_names_are_the_nn_layers():
    assert flotilla.static.nn.conv2d is fluid.layers.conv2d
    assert flotilla.static.nn.batch_norm is fluid.layers.batch_norm
    for name in ("conv2d_transpose", "layer_norm", "group_norm"):
        assert getattr(flotilla.static.nn, name) is getattr(fluid.layers, name)
    for name in ("conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "dropout", "relu6",
                 "hardswish", "interpolate", "pad", "one_hot", "label_smooth"):
        assert callable(getattr(F, name)), name


# ---- errors name the layer, the input and what was expected ----

def test_bad_shapes_and_arguments_are_named(programs):
    flat = fluid.layers.data(name="flat", shape=[13], dtype="float32")
    with pytest.raises(errors.InvalidArgumentError, match=r"conv2d.*'flat'.*\[N, C, H, W\]"):
        fluid.layers.conv2d(flat, 4, 3)
    img = fluid.layers.data(name="img", shape=[3, 8, 8], dtype="float32")
    with pytest.raises(errors.InvalidArgumentError, match=r"groups \(2\) must divide the 3 input channels"):
        fluid.layers.conv2d(img, 4, 3, groups=2)
    with pytest.raises(errors.InvalidArgumentError, match="padding must be 'SAME', 'VALID' or numbers"):
        fluid.layers.conv2d(img, 4, 3, padding="full")
    with pytest.raises(errors.InvalidArgumentError, match=r"\[top, bottom, left, right\]"):
        fluid.layers.conv2d(img, 4, 3, padding=[1, 2, 3])
    with pytest.raises(NotImplementedError, match="NCHW"):
        fluid.layers.conv2d(img, 4, 3, data_format="NHWC")
    with pytest.raises(errors.InvalidArgumentError, match="pool_size must be positive unless global_pooling"):
        fluid.layers.pool2d(img)
    with pytest.raises(errors.InvalidArgumentError, match="unknown activation 'gelu'"):
        fluid.layers.conv2d(img, 4, 3, act="gelu")
    with pytest.raises(errors.InvalidArgumentError, match="smaller than the window"):
        fluid.layers.pool2d(img, 9, "max")
    assert isinstance(errors.InvalidArgumentError("x"), ValueError)


# ---- networks written with the layers = the C++ core's networks ----

def _paddle_conv_bn_layer(input, num_filters, filter_size, stride=1, act=None, name=None):
    """models/resnet.py's conv_bn_layer, as Paddle's image-classification code writes it."""
    conv = fluid.layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size, stride=stride,
                               padding=(filter_size - 1) // 2, groups=1, act=None,
                               param_attr=fluid.ParamAttr(name=name + "_weights"), bias_attr=False,
                               name=name + ".conv2d.output.1")
    bn_name = "bn_" + name if name == "conv1" else "bn" + name[3:]
    return fluid.layers.batch_norm(input=conv, act=act, name=bn_name + ".output.1",
                                   param_attr=fluid.ParamAttr(name=bn_name + "_scale"),
                                   bias_attr=fluid.ParamAttr(bn_name + "_offset"),
                                   moving_mean_name=bn_name + "_mean", moving_variance_name=bn_name + "_variance")


def _paddle_shortcut(input, ch_out, stride, is_first, name):
    if input.shape[1] != ch_out or stride != 1 or is_first:
        return _paddle_conv_bn_layer(input, ch_out, 1, stride, name=name)
    return input


def _paddle_basic_block(input, num_filters, stride, is_first, name):
    conv0 = _paddle_conv_bn_layer(input, num_filters, 3, stride, act="relu", name=name + "_branch2a")
    conv1 = _paddle_conv_bn_layer(conv0, num_filters, 3, act=None, name=name + "_branch2b")
    short = _paddle_shortcut(input, num_filters, stride, is_first, name + "_branch1")
    return fluid.layers.elementwise_add(x=short, y=conv1, act="relu")


def _paddle_bottleneck_block(input, num_filters, stride, name):
    conv0 = _paddle_conv_bn_layer(input, num_filters, 1, act="relu", name=name + "_branch2a")
    conv1 = _paddle_conv_bn_layer(conv0, num_filters, 3, stride, act="relu", name=name + "_branch2b")
    conv2 = _paddle_conv_bn_layer(conv1, num_filters * 4, 1, act=None, name=name + "_branch2c")
    short = _paddle_shortcut(input, num_filters * 4, stride, False, name + "_branch1")
    return fluid.layers.elementwise_add(x=short, y=conv2, act="relu")


def _python_net(image):
    conv = _paddle_conv_bn_layer(image, 8, 7, 2, act="relu", name="conv1")
    conv = fluid.layers.pool2d(conv, pool_size=3, pool_type="max", pool_stride=2, pool_padding=1)
    conv = _paddle_basic_block(conv, 8, 1, True, "res2a")
    conv = _paddle_basic_block(conv, 16, 2, False, "res3a")
    conv = _paddle_bottleneck_block(conv, 4, 2, "res4a")
    pool = fluid.layers.pool2d(conv, pool_type="avg", global_pooling=True)
    return fluid.layers.fc(pool, 10, param_attr="fc_0.w_0", bias_attr="fc_0.b_0")


def _cpp_net(image):
    m = flotilla.vision.models
    conv = m.conv_bn_layer(image, 8, 7, 2, "relu", "conv1")
    conv = fluid.layers.pool2d(conv, pool_size=3, pool_type="max", pool_stride=2, pool_padding=1)
    conv = m.basic_block(conv, 8, 1, True, "res2a")
    conv = m.basic_block(conv, 16, 2, False, "res3a")
    conv = m.bottleneck_block(conv, 4, 2, "res4a")
    pool = fluid.layers.pool2d(conv, pool_type="avg", global_pooling=True)
    return fluid.layers.fc(pool, 10, param_attr="fc_0.w_0", bias_attr="fc_0.b_0")


def _train(build, steps, images, labels, init=None):
    """Builds the classifier in fresh programs, trains with Momentum + L2
    decay + piecewise decay; returns (op types, parameters, losses)."""
    main, startup, scope = flotilla.Program(), flotilla.Program(), flotilla._core.Scope()
    startup.random_seed = 3
    with flotilla.scope_guard(scope), flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        image = fluid.layers.data(name="image", shape=[3, 32, 32], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(build(image), label))
        lr = fluid.layers.piecewise_decay(boundaries=[2], values=[0.1, 0.01])
        fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9,
                                 regularization=fluid.regularizer.L2Decay(1e-4)).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        params = [v.name for v in main.global_block().all_parameters()]
        for name, value in (init or {}).items():
            _set(name, value)
        losses = [float(exe.run(main, feed={"image": images, "label": labels}, fetch_list=[loss])[0].ravel()[0])
                  for _ in range(steps)]
        return list(main.global_block().ops), {n: _get(n) for n in params}, losses


def test_resnet_blocks_written_in_python_equal_the_cpp_models():
    images = _rand(4, 3, 32, 32)
    labels = np.array([[1], [7], [3], [1]], np.int64)
    ops_cpp, init, _ = _train(_cpp_net, 0, images, labels)
    ops_cpp, params_cpp, losses_cpp = _train(_cpp_net, 3, images, labels, init)
    ops_py, params_py, losses_py = _train(_python_net, 3, images, labels, init)
    assert ops_py == ops_cpp
    assert sorted(params_py) == sorted(params_cpp) and "res4a_branch2c_weights" in params_py
    assert "bn3a_branch1_mean" in params_py and "bn_conv1_variance" in params_py
    assert losses_py == losses_cpp, (losses_py, losses_cpp)
    assert losses_cpp[-1] < losses_cpp[0]
    for name in params_cpp:
        np.testing.assert_array_equal(params_py[name], params_cpp[name], err_msg=name)


def test_lenet_written_in_python_equals_the_cpp_model():
    def python_lenet(image):
        c1 = fluid.layers.conv2d(image, 20, 5, padding=2, act="relu")
        p1 = fluid.layers.pool2d(c1, 2, "max", 2)
        c2 = fluid.layers.conv2d(p1, 50, 5, padding=2, act="relu")
        p2 = fluid.layers.pool2d(c2, 2, "max", 2)
        return fluid.layers.fc(fluid.layers.fc(p2, 500, act="relu"), 10)
    images = _rand(3, 3, 32, 32)
    labels = np.array([[0], [4], [9]], np.int64)
    lenet = flotilla.vision.models.LeNet()
    ops_cpp, init, _ = _train(lambda image: lenet.net(image, 10), 0, images, labels)
    ops_py, params_py, losses_py = _train(python_lenet, 2, images, labels, init)
    ops_cpp, params_cpp, losses_cpp = _train(lambda image: lenet.net(image, 10), 2, images, labels, init)
    assert ops_py == ops_cpp and sorted(params_py) == sorted(params_cpp) == sorted(init)
    assert "conv2d_1.w_0" in params_py and "fc_1.b_0" in params_py
    assert losses_py == losses_cpp
