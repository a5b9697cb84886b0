"""paddle.nn.Layer in static mode: parameters made at construction with
Paddle's names, the structure methods (named_parameters, sublayers,
state_dict, containers), train/eval, and models written as Layers giving
the losses of the same models written with fluid.layers bit for bit."""

import math
import sys
import warnings

import numpy as np
import pytest

import flotilla
from flotilla import fluid, paddle_compat
import flotilla.nn as nn
import flotilla.nn.functional as F

# The wide&deep model is PaddleRec's, in a script written for Paddle.
paddle_compat.install()
from paddle_wide_deep_layer import WideDeepLayer  # noqa: E402

SEED = 7


def _programs():
    main, startup = flotilla.Program(), flotilla.Program()
    main.random_seed = startup.random_seed = SEED
    return main, startup


# ---- wide & deep, PaddleRec style ----

DENSE, SPARSE_SLOTS, VOCAB, EMB_DIM, SIZES = 13, 3, 1000, 8, [16, 8]


def _wide_deep_inputs():
    dense = flotilla.static.data("dense", [None, DENSE], "float32")
    sparse = [flotilla.static.data("C%d" % i, [None, 1], "int64") for i in range(SPARSE_SLOTS)]
    label = flotilla.static.data("label", [None, 1], "float32")
    return dense, sparse, label


def _wide_deep_fluid(dense, sparse, label):
    """The same network with fluid.layers; the weights are named as the
    Layer names them (the initialisers draw by name and seed)."""
    wide = fluid.layers.fc(dense, 1, param_attr=fluid.ParamAttr(
        name="linear_0.w_0", initializer=fluid.initializer.Normal(0.0, 1.0 / math.sqrt(DENSE))))
    embs = [fluid.layers.embedding(s, [VOCAB, EMB_DIM], is_sparse=True, param_attr=fluid.ParamAttr(
        name="SparseFeatFactors", initializer=fluid.initializer.Uniform())) for s in sparse]
    deep = fluid.layers.concat(embs + [dense], axis=1)
    sizes = [EMB_DIM * SPARSE_SLOTS + DENSE] + SIZES + [1]
    for i in range(len(SIZES) + 1):
        deep = fluid.layers.fc(deep, sizes[i + 1], act="relu" if i < len(SIZES) else None,
                               param_attr=fluid.ParamAttr(name="linear_%d.w_0" % (i + 1),
                                                          initializer=fluid.initializer.Normal(
                                   0.0, 1.0 / math.sqrt(sizes[i]))))
    return fluid.layers.elementwise_add(wide, deep)


def _wide_deep_loss(logit, label):
    return fluid.layers.mean(F.binary_cross_entropy_with_logits(logit, label, reduction="none"))


def _wide_deep_batches(steps, batch=16):
    rng = np.random.RandomState(3)
    for _ in range(steps):
        dense = rng.uniform(-1, 1, (batch, DENSE)).astype("float32")
        feed = {"dense": dense, "label": (dense[:, :1] + dense[:, 1:2] > 0).astype("float32")}
        for i in range(SPARSE_SLOTS):
            feed["C%d" % i] = rng.randint(0, VOCAB, (batch, 1)).astype("int64")
        yield feed


LEARNING_RATE = 0.5  # SGD's, for wide&deep here and in nn_layer_ps_train.py


def _train(build, batches, optimizer=lambda: fluid.optimizer.SGD(learning_rate=LEARNING_RATE)):
    """Builds under fresh programs, names and scope; returns the losses."""
    main, startup = _programs()
    scope = fluid.core.Scope()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        loss = build()
        optimizer().minimize(loss)
    with flotilla.scope_guard(scope):
        exe = flotilla.Executor()
        exe.run(startup)
        return np.array([exe.run(main, feed=feed, fetch_list=[loss])[0][0] for feed in batches])


def _wide_deep_layer_loss():
    dense, sparse, label = _wide_deep_inputs()
    model = WideDeepLayer(VOCAB, EMB_DIM, DENSE, SPARSE_SLOTS, SIZES)
    return _wide_deep_loss(model(sparse, dense), label)


def _wide_deep_fluid_loss():
    dense, sparse, label = _wide_deep_inputs()
    return _wide_deep_loss(_wide_deep_fluid(dense, sparse, label), label)


def test_wide_deep_layer_matches_fluid_layers_bit_for_bit():
    steps = 20
    ours = _train(_wide_deep_layer_loss, _wide_deep_batches(steps))
    theirs = _train(_wide_deep_fluid_loss, _wide_deep_batches(steps))
    assert ours.shape == (steps,) and np.all(np.isfinite(ours))
    assert ours[-5:].mean() < ours[:5].mean()  # it learns
    np.testing.assert_array_equal(ours, theirs)


# ---- a small CNN ----

class SmallCNN(nn.Layer):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2D(1, 4, 3, padding=1), nn.BatchNorm2D(4), nn.ReLU(),
                                      nn.MaxPool2D(2, 2))
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(4 * 4 * 4, classes, weight_attr="fc_w")

    def forward(self, x):
        return self.fc(self.flatten(self.features(x)))


def _cnn_inputs():
    return flotilla.static.data("img", [None, 1, 8, 8], "float32"), flotilla.static.data("y", [None, 1], "int64")


def _cnn_layer_loss():
    img, label = _cnn_inputs()
    return F.cross_entropy(SmallCNN()(img), label)


def _cnn_fluid_loss():
    img, label = _cnn_inputs()
    conv = fluid.layers.conv2d(img, 4, 3, padding=1)
    pooled = fluid.layers.pool2d(fluid.layers.batch_norm(conv, act="relu"), 2, "max", 2)
    logits = fluid.layers.fc(pooled, 10, param_attr="fc_w")
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))


def _cnn_batches(steps, batch=8):
    rng = np.random.RandomState(5)
    for _ in range(steps):
        img = rng.uniform(-1, 1, (batch, 1, 8, 8)).astype("float32")
        yield {"img": img, "y": (img[:, :, :4].sum(axis=(1, 2, 3)) > 0).astype("int64").reshape(batch, 1)}


def test_cnn_layer_matches_fluid_layers_bit_for_bit():
    steps = 20
    adam = lambda: fluid.optimizer.Adam(learning_rate=0.01)  # noqa: E731
    ours = _train(_cnn_layer_loss, _cnn_batches(steps), adam)
    theirs = _train(_cnn_fluid_loss, _cnn_batches(steps), adam)
    assert ours[-5:].mean() < ours[:5].mean()
    np.testing.assert_array_equal(ours, theirs)


# ---- names and structure ----

def test_parameters_get_paddles_names_and_structured_keys():
    main, startup = _programs()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        model = WideDeepLayer(VOCAB, EMB_DIM, DENSE, SPARSE_SLOTS, SIZES)
        bn = nn.BatchNorm2D(4)
        conv = nn.Conv2D(3, 2, 3, bias_attr=False)
        assert [p.name for p in nn.Linear(2, 2).parameters()] == ["linear_4.w_0", "linear_4.b_0"]
    assert model.full_name() == "wide_deep_layer_0"
    named = [(k, p.name) for k, p in model.named_parameters()]
    assert named == [("wide_part.weight", "linear_0.w_0"), ("wide_part.bias", "linear_0.b_0"),
                     ("embedding.weight", "SparseFeatFactors"),
                     ("linear_0.weight", "linear_1.w_0"), ("linear_0.bias", "linear_1.b_0"),
                     ("linear_1.weight", "linear_2.w_0"), ("linear_1.bias", "linear_2.b_0"),
                     ("linear_2.weight", "linear_3.w_0"), ("linear_2.bias", "linear_3.b_0")]
    assert list(model.state_dict()) == [k for k, _ in named]
    assert [p.name for p in bn.parameters()] == ["batch_norm2d_0.w_0", "batch_norm2d_0.b_0", "batch_norm2d_0.w_1",
                                                 "batch_norm2d_0.w_2"]
    assert [p.name for p in conv.parameters()] == ["conv2d_0.w_0"] and conv.bias is None
    assert conv.weight.shape == (2, 3, 3, 3)
    assert [n for n, _ in model.named_sublayers()] == ["wide_part", "embedding", "linear_0", "act_0", "linear_1",
                                                       "act_1", "linear_2"]
    assert len(model.sublayers(include_self=True)) == 8
    # parameters live in main (persistable) and are initialised by startup
    assert all(main.global_block().var(p.name).persistable for p in model.parameters())
    assert set(p.name for p in model.parameters()) <= set(startup.global_block().var_names())
    # trainable=False and the statistics
    assert bn._mean.stop_gradient and bn._variance.stop_gradient and not bn.weight.stop_gradient


def test_create_add_parameter_containers_and_hooks():
    main, startup = _programs()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        class MyLayer(nn.Layer):
            def __init__(self):
                super().__init__(name_scope="demo")
                self.w = self.create_parameter([3, 2], default_initializer=nn.initializer.Constant(0.5))
                self.add_parameter("extra", self.create_parameter([2], is_bias=True))
                self.blocks = nn.LayerList([nn.Linear(2, 2) for _ in range(2)])
                self.plist = nn.ParameterList([self.create_parameter([1])])

            def forward(self, x):
                y = fluid.layers.matmul(x, self.w) + self.extra
                for block in self.blocks:
                    y = block(y)
                return y

        m = MyLayer()
        assert m.full_name() == "demo_0"
        assert [p.name for p in m.parameters()][:2] == ["demo_0.w_0", "demo_0.b_0"]
        assert [k for k, _ in m.named_parameters()] == ["w", "extra", "blocks.0.weight", "blocks.0.bias",
                                                          "blocks.1.weight", "blocks.1.bias", "plist.0"]
        assert len(m.blocks) == 2 and isinstance(m.blocks[-1], nn.Linear)
        m.blocks.append(nn.Linear(2, 2))
        assert len(m.blocks) == 3 and len(m.blocks[1:]) == 2
        calls = []
        handle = m.register_forward_post_hook(lambda layer, inputs, out: calls.append(out.name))
        x = flotilla.static.data("x", [None, 3], "float32")
        out = m(x)
        handle.remove()
        m(x)
        assert calls == [out.name]
        with pytest.raises(TypeError, match="should be a Parameter"):
            m.add_parameter("bad", x)
        with pytest.raises(KeyError, match="can not contain"):
            m.add_parameter("a.b", None)
        with pytest.raises(TypeError, match="should be of type Parameter"):
            m.w = 3
        assert m.create_parameter([2], attr=False) is None
    exe = flotilla.Executor()
    with flotilla.scope_guard(fluid.core.Scope()):
        exe.run(startup)
        got, = exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[out])
        assert got.shape == (2, 2)
        w = np.array(flotilla.global_scope().find_var("demo_0.w_0").get_tensor())
        np.testing.assert_array_equal(w, np.full((3, 2), 0.5, "float32"))


def test_layer_without_super_init_is_refused_by_name():
    class Broken(nn.Layer):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with flotilla.program_guard(*_programs()):
        with pytest.raises(RuntimeError, match=r"super\(Broken, self\).__init__\(\) should be called first"):
            Broken()


def test_state_dict_round_trips_through_the_global_scope():
    main, startup = _programs()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1D(4))
    with flotilla.scope_guard(fluid.core.Scope()):
        flotilla.Executor().run(startup)
        state = model.state_dict()
        assert list(state) == ["0.weight", "0.bias", "1.weight", "1.bias", "1._mean", "1._variance"]
        new = {k: np.full(v.shape, i, "float32") for i, (k, v) in enumerate(state.items())}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.set_state_dict({**new, "0.bias": np.zeros(7, "float32")})
        assert any("0.bias receives a shape [7]" in str(w.message) for w in caught)
        scope = flotilla.global_scope()
        for i, (k, v) in enumerate(state.items()):
            got = np.array(scope.find_var(v.name).get_tensor())
            if k == "0.bias":
                np.testing.assert_array_equal(got, np.zeros(4, "float32"))  # skipped: initial value kept
            else:
                np.testing.assert_array_equal(got, new[k])
        model.set_state_dict({v.name: np.ones(v.shape, "float32") for v in state.values()},
                             use_structured_name=False)
        np.testing.assert_array_equal(np.array(scope.find_var("linear_0.b_0").get_tensor()), np.ones(4))


def test_train_and_eval_choose_is_test():
    main, startup = _programs()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1D(4))
        x = flotilla.static.data("x", [None, 4], "float32")
        train_out = model(x)
        model.eval()
        assert not model.training and not model[1].training
        eval_out = model(x)
        model.train()
        assert model[2].training
    exe = flotilla.Executor()
    feed = {"x": np.random.RandomState(0).uniform(-1, 1, (64, 4)).astype("float32")}
    with flotilla.scope_guard(fluid.core.Scope()):
        exe.run(startup)
        ev1, = exe.run(main, feed=feed, fetch_list=[eval_out])
        ev2, = exe.run(main, feed=feed, fetch_list=[eval_out])
        tr, = exe.run(main, feed=feed, fetch_list=[train_out])
    # eval: no dropout, running statistics (unchanged between the two
    # fetches of eval_out except by the train-mode batch norm in the same run)
    assert np.all(np.isfinite(ev1)) and np.all(np.isfinite(tr))
    # train: batch statistics, so each column has mean ~0 over the batch
    np.testing.assert_allclose(tr.mean(axis=0), 0, atol=1e-5)
    assert not np.allclose(ev1.mean(axis=0), 0, atol=1e-3)
    assert ev2.shape == ev1.shape


def test_embedding_shapes_padding_and_sparse_gradient():
    main, startup = _programs()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        emb = nn.Embedding(10, 3, padding_idx=-1, sparse=True)
        ids = flotilla.static.data("ids", [None, 2], "int64")
        out = emb(ids)
        assert out.shape == (-1, 2, 3)
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.reduce_sum(out))
        with pytest.raises(ValueError, match="padding_idx"):
            nn.Embedding(10, 3, padding_idx=10)
    with flotilla.scope_guard(fluid.core.Scope()):
        exe = flotilla.Executor()
        exe.run(startup)
        before = np.array(flotilla.global_scope().find_var("embedding_0.w_0").get_tensor())
        got, = exe.run(main, feed={"ids": np.array([[1, 9], [1, 2]], "int64")}, fetch_list=[out])
        after = np.array(flotilla.global_scope().find_var("embedding_0.w_0").get_tensor())
    np.testing.assert_array_equal(got[0, 1], np.zeros(3))  # padding row 9
    np.testing.assert_array_equal(got[0, 0], before[1])
    np.testing.assert_allclose(after[1], before[1] - 0.2, rtol=1e-6)  # looked up twice
    np.testing.assert_array_equal(after[9], before[9])
    np.testing.assert_array_equal(after[5], before[5])


def test_common_layers_shapes():
    main, startup = _programs()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        x = flotilla.static.data("x", [None, 2, 6, 6], "float32")
        assert nn.AvgPool2D(2)(x).shape == (-1, 2, 3, 3)
        assert nn.AdaptiveAvgPool2D(1)(x).shape == (-1, 2, 1, 1)
        assert nn.AdaptiveMaxPool2D([2, 3])(x).shape == (-1, 2, 2, 3)
        assert nn.Flatten()(x).shape == (-1, 72)
        assert nn.Flatten(2)(x).shape == (-1, 2, 36)
        assert nn.LayerNorm([6, 6])(x).shape == (-1, 2, 6, 6)
        assert nn.BatchNorm(2, act="relu")(x).shape == (-1, 2, 6, 6)
        for act in (nn.ReLU(), nn.Sigmoid(), nn.Tanh(), nn.Softmax(), nn.ReLU6(), nn.Hardswish()):
            assert act(x).shape == (-1, 2, 6, 6)
        with pytest.raises(NotImplementedError, match="padding_mode"):
            nn.Conv2D(2, 2, 3, padding_mode="reflect")


# ---- in a parameter-server job ----

@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wide_deep_layer_trains_with_one_server_and_one_worker(tmp_path, mode):
    """The Layer model under fleet's parameter-server transpiler, one server
    and one worker started by hand with PaddleCloudRoleMaker's variables.
    Sync with one worker is one process's training: the losses are its, bit for bit."""
    import os
    import re
    import socket
    import subprocess
    from conftest import child_env

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    common = {"PADDLE_PSERVERS_IP_PORT_LIST": f"127.0.0.1:{port}", "PADDLE_TRAINERS_NUM": "1",
              "PADDLE_TRAINER_ENDPOINTS": f"127.0.0.1:{port + 1}",
              "FLOTILLA_JOB_SECRET": os.environ.get("FLOTILLA_JOB_SECRET", "nn-layer-test-job")}
    roles = [{"TRAINING_ROLE": "PSERVER", "PADDLE_PORT": str(port), "POD_IP": "127.0.0.1"},
             {"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "0"}]
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_layer_ps_train.py")
    procs = []
    try:
        for i, role in enumerate(roles):
            out = open(tmp_path / f"p{i}.log", "w")
            procs.append(subprocess.Popen([sys.executable, script, "--mode", mode], cwd=str(tmp_path), stdout=out,
                                          stderr=subprocess.STDOUT, env=child_env({**common, **role})))
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    logs = [(tmp_path / f"p{i}.log").read_text() for i in range(2)]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(text[-1500:] for text in logs)
    losses = np.array([float(v) for v in re.findall(r"^STEP \d+ (\S+)$", logs[1], re.M)], "float32")
    assert len(losses) == 20 and np.all(np.isfinite(losses)), logs[1][-1500:]
    assert losses[-5:].mean() < losses[:5].mean(), losses
    if mode == "sync":
        local = _train(_wide_deep_layer_loss, _wide_deep_batches(20))
        np.testing.assert_array_equal(losses, local)


def test_paddlerec_style_script_runs_under_the_compat_switch(tmp_path):
    """paddle_wide_deep_layer.py, written for Paddle, run unchanged under
    ``python3 -m flotilla.paddle_compat``: it trains, and static.save/load
    and save/load_inference_model give its predictions back exactly."""
    import os
    import re
    from conftest import run_python

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle_wide_deep_layer.py")
    proc = run_python(["-m", "flotilla.paddle_compat", script, str(tmp_path)], timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    losses = [float(v) for v in re.findall(r"^STEP \d+ (\S+)$", proc.stdout, re.M)]
    assert len(losses) == 20 and sum(losses[-5:]) < sum(losses[:5]), losses
    assert "OK static.load" in proc.stdout and "OK inference model" in proc.stdout, proc.stdout[-1000:]
    assert "STATE wide_part.weight,wide_part.bias,embedding.weight" in proc.stdout, proc.stdout[-500:]


def test_missing_nn_names_still_name_themselves():
    from flotilla import paddle_compat
    assert "Normal" in paddle_compat.nearest("paddle.nn.initializer.TruncatedNormal")
    assert "Linear" in paddle_compat.nearest("paddle.nn.LSTM")
