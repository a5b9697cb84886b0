"""The Paddle APIs Paddle's own test scripts reach for: paddle.dataset.mnist
from local files, fluid.nets.simple_img_conv_pool / img_conv_group,
fluid.Scope, GeneratorLoader.iterable / _reset, wait_server_ready, a lazily
read PaddleCloudRoleMaker, GeneralRoleMaker, saving into "dir/", and the
corpus runner scripts/paddle_corpus.py."""

import gzip
import json
import os
import socket
import struct
import sys
import threading
import time

import numpy as np
import pytest

import flotilla
import flotilla.fluid as fluid
from flotilla.dataset import mnist
from flotilla.distributed.fleet.base import private_helper_function, role_maker

from conftest import SOURCE_DIR, child_env


@pytest.fixture
def mnist_home(tmp_path, monkeypatch):
    mnist.write_local_copy(str(tmp_path / "mnist"), train_size=30, test_size=10)
    monkeypatch.setenv("FLOTILLA_DATA_HOME", str(tmp_path))
    return tmp_path


def test_mnist_reads_paddles_idx_files(mnist_home):
    samples = list(mnist.train()())
    assert len(samples) == 30 and len(list(mnist.test()())) == 10
    image, label = samples[0]
    assert image.shape == (784,) and image.dtype == np.float32
    assert -1.0 <= image.min() < image.max() <= 1.0
    assert isinstance(label, int) and 0 <= label <= 9
    # The bytes Paddle's reader would scale: pixel / 255 * 2 - 1.
    with gzip.open(mnist_home / "mnist" / mnist.TRAIN_IMAGES) as f:
        raw = f.read()
    assert struct.unpack_from(">4I", raw) == (2051, 30, 28, 28)
    first = np.frombuffer(raw, np.uint8, 784, 16).astype(np.float32)
    np.testing.assert_allclose(image, first / 255.0 * 2.0 - 1.0, rtol=1e-6)


def test_mnist_missing_file_names_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOTILLA_DATA_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"mnist/train-images-idx3-ubyte.gz.*downloads nothing"):
        mnist.train()


def test_mnist_corrupt_header_is_refused(mnist_home):
    path = mnist_home / "mnist" / mnist.TEST_LABELS
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">2I", 1234, 10) + bytes(10))
    with pytest.raises(ValueError, match="magic number 1234"):
        list(mnist.test()())


def test_simple_img_conv_pool_is_conv_then_pool():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = fluid.layers.data(name="img", shape=[1, 12, 12], dtype="float32")
        w, b = fluid.ParamAttr(name="w"), fluid.ParamAttr(name="b")
        ours = fluid.nets.simple_img_conv_pool(input=img, filter_size=3, num_filters=4, pool_size=2,
                                               pool_stride=2, act="relu", param_attr=w, bias_attr=b)
        conv = fluid.layers.conv2d(img, num_filters=4, filter_size=3, act="relu", param_attr="w", bias_attr="b")
        ref = fluid.layers.pool2d(conv, pool_size=2, pool_stride=2)
    x = np.random.RandomState(0).uniform(-1, 1, (2, 1, 12, 12)).astype(np.float32)
    with fluid.scope_guard(fluid.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        got, want = exe.run(main, feed={"img": x}, fetch_list=[ours, ref])
    assert got.shape == (2, 4, 5, 5) and got.max() > 0
    np.testing.assert_array_equal(got, want)


def test_img_conv_group_stacks_convs_and_pools():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = fluid.layers.data(name="img", shape=[3, 8, 8], dtype="float32")
        out = fluid.nets.img_conv_group(input=img, conv_num_filter=[4, 6], pool_size=2, conv_act="relu",
                                        conv_with_batchnorm=[True, False], pool_stride=2)
        with pytest.raises(ValueError, match="3 settings for 2 convolutions"):
            fluid.nets.img_conv_group(input=img, conv_num_filter=[4, 6], pool_size=2, conv_padding=[1, 1, 1])
    types = [getattr(op, "type", op) for op in main.global_block().ops]
    assert types.count("conv2d") == 2 and types.count("batch_norm") == 1 and types.count("pool2d") == 1
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        (res,) = exe.run(main, feed={"img": np.ones((2, 3, 8, 8), np.float32)}, fetch_list=[out])
    assert res.shape == (2, 6, 4, 4)


def test_fluid_scope_is_a_scope_the_executor_uses():
    assert fluid.Scope is flotilla.framework.Scope
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        fluid.layers.fc(x, size=2)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(startup)
    param = main.global_block().all_parameters()[0].name
    assert scope.find_var(param) is not None


def test_loader_iterable_and_early_reset():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, iterable=True)
        other = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, iterable=False)
    assert loader.iterable is True and other.iterable is False

    def endless():
        i = 0
        while True:
            yield (np.full([1, 2], i, np.float32),)
            i += 1
    loader.set_batch_generator(endless)
    it = iter(loader())
    assert next(it)[0]["x"][0, 0] == 0
    loader._reset()
    assert loader._thread is None
    # A new pass starts from the generator's beginning again.
    for data in loader():
        assert data[0]["x"][0, 0] == 0
        break


def test_wait_server_ready_returns_once_the_port_listens():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = socket.socket()

    def listen_later():
        time.sleep(0.5)
        server.bind(("127.0.0.1", port))
        server.listen(1)
    t = threading.Thread(target=listen_later)
    start = time.monotonic()
    t.start()
    try:
        private_helper_function.wait_server_ready([f"127.0.0.1:{port}"], poll_seconds=0.2)
        assert time.monotonic() - start >= 0.5
    finally:
        t.join()
        server.close()
    with pytest.raises(ValueError, match="not host:port"):
        private_helper_function.wait_server_ready(["localhost"])


def test_cloud_role_maker_reads_the_environment_at_first_use(monkeypatch):
    monkeypatch.setenv("TRAINING_ROLE", "TEST")
    monkeypatch.setenv("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:36001")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    ro = role_maker.PaddleCloudRoleMaker(is_collective=False)  # as Paddle's: no error yet
    with pytest.raises(ValueError, match="TRAINING_ROLE"):
        ro.generate_role()
    monkeypatch.setenv("TRAINING_ROLE", "TRAINER")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    ro = role_maker.PaddleCloudRoleMaker(is_collective=False)
    ro.generate_role()
    assert ro.is_worker() and ro.worker_index() == 1 and ro.worker_num() == 2


def test_general_role_maker_is_the_cloud_role_of_a_ps_job(monkeypatch):
    monkeypatch.setenv("TRAINING_ROLE", "PSERVER")
    monkeypatch.setenv("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:36001,127.0.0.1:36002")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "3")
    monkeypatch.setenv("POD_IP", "127.0.0.1")
    monkeypatch.setenv("PADDLE_PORT", "36002")
    ro = role_maker.GeneralRoleMaker(path="./gloo", init_timeout_seconds=10)
    assert ro.is_server() and ro.server_index() == 1 and ro.worker_num() == 3
    with pytest.raises(TypeError, match="unexpected arguments"):
        role_maker.GeneralRoleMaker(bogus=1)


def test_save_params_into_a_directory_named_with_a_slash(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        fluid.layers.fc(x, size=3)
    exe = fluid.Executor(fluid.CPUPlace())
    target = str(tmp_path / "model") + "/"
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.save_params(exe, target, main_program=main)
        fluid.io.save_params(exe, target, main_program=main)  # over an existing one
        fluid.io.load_params(exe, target, main_program=main)
    assert sorted(os.listdir(tmp_path)) == ["model"]
    assert not [n for n in os.listdir(tmp_path / "model") if ".tmp." in n]


def test_corpus_runner_reports_pass_and_fail(tmp_path):
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "test_ok.py").write_text(
        "import unittest\nimport paddle.fluid as fluid\n\n"
        "class T(unittest.TestCase):\n    def test_scope(self):\n        fluid.Scope()\n")
    (ref / "test_bad.py").write_text(
        "import unittest\nimport paddle\n\n"
        "class T(unittest.TestCase):\n    def test_dygraph(self):\n        paddle.disable_static()\n")
    (ref / "book_mnist.py").write_text(
        "import paddle\nassert len(list(paddle.dataset.mnist.test()())) == 500\n")
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"scripts": [
        {"script": "test_ok.py", "paddle_path": "p/test_ok.py", "how": "unittest"},
        {"script": "test_bad.py", "paddle_path": "p/test_bad.py", "how": "unittest"},
        {"script": "book_mnist.py", "paddle_path": "p/book_mnist.py", "how": "script", "data": ["mnist"]},
        {"script": "test_absent.py", "paddle_path": "p/test_absent.py", "how": "unittest"}]}))
    import subprocess
    env = child_env()
    proc = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "paddle_corpus.py"),
                           "--ref-dir", str(ref), "--manifest", str(manifest),
                           "--pythonpath", env["PYTHONPATH"]],
                          env=env, capture_output=True, text=True, timeout=300)
    lines = [json.loads(ln) for ln in proc.stdout.splitlines()]
    status = {ln["script"]: ln["status"] for ln in lines if "script" in ln}
    assert status == {"test_ok.py": "pass", "test_bad.py": "fail", "book_mnist.py": "pass",
                      "test_absent.py": "absent"}, proc.stdout + proc.stderr
    bad = next(ln for ln in lines if ln.get("script") == "test_bad.py")
    assert "paddle.disable_static" in bad["error"] and bad["tests"] == 1 and bad["errors"] == 1
    assert lines[-1] == {"summary": "paddle_corpus", "passed": 2, "total": 4, "pass_rate": 0.5}
    assert proc.returncode == 1  # under the 90% asked for


def test_vartype_names_dtypes_as_paddle_does():
    from flotilla.fluid import core
    t = fluid.create_lod_tensor(np.array([[1], [2], [3]], np.int64), [[1, 2]], fluid.CPUPlace())
    assert t._dtype() == core.VarDesc.VarType.INT64 and t._dtype() != core.VarDesc.VarType.FP32
    assert str(core.VarDesc.VarType.FP32) == "float32"
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="int64")
        y = fluid.layers.cast(x, dtype=core.VarDesc.VarType.FP32)
    (out,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.array([[1, 2]], np.int64)}, fetch_list=[y])
    assert out.dtype == np.float32 and out.tolist() == [[1.0, 2.0]]


def test_tensor_as_type_keeps_offsets():
    from flotilla.fluid import core
    t = fluid.create_lod_tensor(np.array([[1], [2], [3], [4]], np.int64), [[1, 3]], fluid.CPUPlace())
    f = t._as_type(core.VarDesc.VarType.FP32)
    assert f._dtype() == "float32" and f.recursive_sequence_lengths() == [[1, 3]]
    np.testing.assert_array_equal(np.array(f), np.array([[1], [2], [3], [4]], np.float32))
    assert t._dtype() == "int64"  # the original is unchanged


def test_dlpack_round_trip():
    from flotilla.fluid import core
    t = fluid.create_lod_tensor(np.arange(6, dtype=np.float64).reshape(3, 2), [[1, 2]], fluid.CPUPlace())
    capsule = t._to_dlpack()
    back = core.from_dlpack(capsule)
    assert isinstance(back, core.Tensor) and back._dtype() == "float64"
    np.testing.assert_array_equal(np.array(back), np.arange(6, dtype=np.float64).reshape(3, 2))
    with pytest.raises((TypeError, ValueError, RuntimeError, BufferError)):
        core.from_dlpack(capsule)  # a capsule is consumed once


def test_data_declared_again_is_the_same_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        again = fluid.layers.data(name="x", shape=[2], dtype="float32")
        assert again.name == x.name and list(again.shape) == [-1, 2]
        with pytest.raises(ValueError, match=r"'x' has been created before .*shape \[-1, 3\]"):
            fluid.layers.data(name="x", shape=[3], dtype="float32")
        with pytest.raises(ValueError, match="dtype int64"):
            fluid.layers.data(name="x", shape=[2], dtype="int64")
        y = fluid.layers.fc(x, size=1)
        with pytest.raises(ValueError, match="non-data variable"):
            fluid.layers.data(name=y.name, shape=[1], dtype="float32")
    assert [v.name for v in main.list_vars()].count("x") == 1


def test_strategy_fields_of_later_paddle_releases():
    import warnings as _w
    from flotilla.distributed.fleet import DistributedStrategy
    s = DistributedStrategy()
    s.hybrid_configs = {"dp_degree": 1, "mp_degree": 2, "pp_degree": 4}
    assert s.hybrid_configs["mp_degree"] == 2 and s.hybrid_configs["pp_degree"] == 4
    s.trainer_desc_configs = {"dump_fields_path": "dump", "dump_fields": ["a", "b"], "dump_param": []}
    assert s.trainer_desc_configs["dump_fields_path"] == "dump" and len(s.trainer_desc_configs["dump_fields"]) == 2
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        s.last_comm_group_size_MB = 50
    assert s.last_comm_group_size_MB == 50
    assert any("last_comm_group_size_MB" in str(w.message) for w in caught)  # a hint on the CPU backend
    with pytest.raises(ValueError, match="greater than 0"):
        s.last_comm_group_size_MB = -1
    assert s.last_comm_group_size_MB == 50  # the refused value is not kept
    with pytest.raises(TypeError):
        s.fp16_allreduce = "True"
    # Refused when applied, naming the field and the nearest option.
    with pytest.raises(NotImplementedError, match=r"hybrid_configs.mp_degree=2 .*data parallelism"):
        s._core.validate()


def test_bfloat16_and_mkldnn_are_reported_absent():
    from flotilla.fluid import core
    assert core.supports_bfloat16() is False and core.is_compiled_with_mkldnn() is False


def test_log_loss_value_and_gradient_against_finite_differences():
    # p = sigmoid(w) for a parameter w; one SGD step of rate 1 moves w by
    # -d loss / d w, which must match central differences of the formula.
    w0 = np.array([[2.0], [-1.0], [0.5]])
    zv = np.array([[1.0], [0.0], [0.3]])

    def value(w):
        p = 1 / (1 + np.exp(-w))
        return float(np.mean(-zv * np.log(p + 1e-4) - (1 - zv) * np.log(1 - p + 1e-4)))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = fluid.layers.create_parameter(shape=[3, 1], dtype="float64", name="w",
                                          default_initializer=flotilla.initializer.Constant(0.0))
        z = fluid.layers.data(name="z", shape=[3, 1], dtype="float64", append_batch_size=False)
        loss = fluid.layers.mean(flotilla.nn.functional.log_loss(fluid.layers.sigmoid(w), z, epsilon=1e-4))
        fluid.optimizer.SGD(learning_rate=1.0).minimize(loss)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        scope.find_var("w").get_tensor().set(w0, fluid.CPUPlace())
        (got,) = exe.run(main, feed={"z": zv}, fetch_list=[loss])
        stepped = np.array(scope.find_var("w").get_tensor())
    assert abs(float(got) - value(w0)) < 1e-9  # epsilon is a float32 attribute
    h = 1e-6
    for i in range(3):
        up, dn = w0.copy(), w0.copy()
        up[i] += h
        dn[i] -= h
        assert abs((w0[i, 0] - stepped[i, 0]) - (value(up) - value(dn)) / (2 * h)) < 1e-6


def test_cifar_reads_paddles_archive(tmp_path, monkeypatch):
    from flotilla.dataset import cifar
    monkeypatch.setenv("FLOTILLA_DATA_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"cifar/cifar-10-python.tar.gz.*downloads nothing"):
        cifar.train10()
    cifar.write_local_copy(str(tmp_path / "cifar"), train_size=20, test_size=7)
    train = list(cifar.train10()())
    assert len(train) == 20 and len(list(cifar.test10()())) == 7
    image, label = train[0]
    assert image.shape == (3072,) and image.dtype == np.float32 and 0.0 <= image.min() <= image.max() <= 1.0
    assert isinstance(label, int) and 0 <= label <= 9
    cycled = cifar.test10(cycle=True)()
    assert len([next(cycled) for _ in range(15)]) == 15  # starts over past the 7 samples


def test_inference_transpiler_leaves_the_program_and_warns_once():
    import warnings as _w
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        fluid.layers.fc(x, size=1)
    before = str(main)
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        fluid.InferenceTranspiler().transpile(main, fluid.CPUPlace())
        fluid.InferenceTranspiler().transpile(main, fluid.CPUPlace())
    assert str(main) == before
    assert len([w for w in caught if "InferenceTranspiler" in str(w.message)]) <= 1
    with pytest.raises(TypeError):
        fluid.InferenceTranspiler().transpile("program", fluid.CPUPlace())
    with pytest.raises(NotImplementedError, match="float16_transpile"):
        fluid.InferenceTranspiler().float16_transpile(main, fluid.CPUPlace())


def test_compiled_program_binds_its_scope_and_checks_shared_sources():
    prog = fluid.Program()
    cp = fluid.CompiledProgram(prog)
    scope = fluid.global_scope()
    cp._compile(scope, fluid.CPUPlace())
    cp._compile(scope, fluid.CPUPlace())  # the same scope again is fine
    with pytest.raises(ValueError, match="different scope"):
        cp._compile(fluid.Scope(), fluid.CPUPlace())
    plain = fluid.CompiledProgram(fluid.Program())
    plain._compile(scope, fluid.CPUPlace())
    shared = fluid.CompiledProgram(fluid.Program()).with_data_parallel(share_vars_from=plain)
    with pytest.raises(ValueError, match="not data parallel"):
        shared._compile(scope, fluid.CPUPlace())
    never_run = fluid.CompiledProgram(fluid.Program()).with_data_parallel()
    shared = fluid.CompiledProgram(fluid.Program()).with_data_parallel(share_vars_from=never_run)
    with pytest.raises(ValueError, match="not compiled and executed"):
        shared._compile(scope, fluid.CPUPlace())


def test_program_lists_its_variables_and_parameters():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        fluid.layers.fc(x, size=2)
    names = [v.name for v in main.list_vars()]
    params = [v.name for v in main.all_parameters()]
    assert names[0] == "x" and len(params) == 2 and set(params) <= set(names)
    assert set(main.global_block().vars) == set(names)


def test_manual_program_seed_seeds_both_default_programs():
    from flotilla.paddle_compat import framework_random
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        framework_random._manual_program_seed(123)
    assert main.random_seed == 123 and startup.random_seed == 123


def test_applied_meta_list_names_what_minimize_applied(monkeypatch):
    from flotilla.distributed import fleet
    for var in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS", "TRAINING_ROLE",
                "PADDLE_PSERVERS_IP_PORT_LIST"):
        monkeypatch.delenv(var, raising=False)
    fleet.init(is_collective=True)
    assert fleet._get_applied_meta_list() == [] and fleet._get_applied_graph_list() == []
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        strategy = fleet.DistributedStrategy()
        strategy.gradient_merge = True
        strategy.gradient_merge_configs = {"k_steps": 2}
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), strategy).minimize(loss)
    assert fleet._get_applied_meta_list() == ["GradientMergeOptimizer"]


def test_reader_decorators_as_paddles():
    from flotilla import reader as R

    def ten():
        return iter(range(10))
    assert list(R.map_readers(lambda a, b: a + b, ten, ten)()) == [2 * i for i in range(10)]
    assert list(R.compose(ten, lambda: iter((i, -i) for i in range(10)))())[3] == (3, 3, -3)
    with pytest.raises(R.ComposeNotAligned):
        list(R.compose(R.chain(ten, ten), ten)())
    assert len(list(R.compose(R.chain(ten, ten), ten, check_alignment=False)())) == 10
    assert list(R.shuffle(ten, 0)()) == list(range(10)) and sorted(R.shuffle(ten, 4)()) == list(range(10))
    assert list(R.xmap_readers(lambda x: x * 3, ten, 4, 2, order=True)()) == [3 * i for i in range(10)]
    assert sorted(R.xmap_readers(lambda x: x * 3, ten, 4, 2)()) == [3 * i for i in range(10)]
    assert list(R.fake(ten, 4)()) == [0, 0, 0, 0] and list(R.cache(ten)()) == list(range(10))

    def slow():
        for i in range(5):
            time.sleep(0.05)
            yield i
    b = R.buffered(slow, 5)()
    assert next(b) == 0
    time.sleep(0.4)  # the thread reads the rest meanwhile
    start = time.monotonic()
    assert list(b) == [1, 2, 3, 4] and time.monotonic() - start < 0.1

    def broken():
        yield 1
        raise KeyError("bad sample")
    with pytest.raises(KeyError, match="bad sample"):
        list(R.buffered(broken, 2)())


def test_pipe_and_multiprocess_readers(tmp_path):
    from flotilla import reader as R
    f = tmp_path / "lines.txt"
    f.write_text("a\nbb\nccc\n")
    assert list(R.PipeReader(f"cat {f}", bufsize=2).get_line()) == ["a", "bb", "ccc"]
    parts = [lambda k=k: iter(range(k * 100, k * 100 + 50)) for k in range(3)]
    for use_pipe in (True, False):
        got = sorted(R.multiprocess_reader(parts, use_pipe, 10)())
        assert got == sorted(v for k in range(3) for v in range(k * 100, k * 100 + 50))


def test_saving_a_model_without_variables_warns_as_paddle(tmp_path):
    import warnings as _w
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        data = fluid.layers.data(name="data", shape=[-1, 1], dtype="float32", append_batch_size=False)
        plus = data + 1
        w_main, w_startup = fluid.Program(), fluid.Program()
    exe = fluid.Executor(fluid.CPUPlace())
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        fluid.io.save_inference_model(str(tmp_path / "m"), ["data"], [plus], exe, main_program=main,
                                      model_filename="model", params_filename="params")
    assert any("no variable in your model" in str(w.message) for w in caught)
    assert (tmp_path / "m" / "model").exists()
    with fluid.program_guard(w_main, w_startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        y = fluid.layers.fc(x, size=1)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(w_startup)
        with _w.catch_warnings(record=True) as caught:
            _w.simplefilter("always")
            fluid.io.save_inference_model(str(tmp_path / "w"), ["x"], [y], exe, main_program=w_main)
    assert not any("no variable in your model" in str(w.message) for w in caught)


def test_set_and_get_paddle_flags(monkeypatch):
    import warnings as _w
    from flotilla.distributed.fleet import paddle_flags
    monkeypatch.delenv("FLAGS_eager_delete_tensor_gb", raising=False)
    monkeypatch.setattr(paddle_flags, "_set_values", {})
    assert fluid.get_flags("FLAGS_eager_delete_tensor_gb") == {"FLAGS_eager_delete_tensor_gb": 0.0}
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 1.5})
    assert fluid.get_flags(["FLAGS_eager_delete_tensor_gb"]) == {"FLAGS_eager_delete_tensor_gb": 1.5}
    assert os.environ["FLAGS_eager_delete_tensor_gb"] == "1.5"  # children see it
    assert any("FLAGS_eager_delete_tensor_gb" in str(w.message) for w in caught)  # not honoured: said so
    with pytest.raises(TypeError):
        fluid.set_flags(["FLAGS_check_nan_inf"])
    with pytest.raises(ValueError, match="FLAGS_free_idle_chunk"):
        fluid.set_flags({"FLAGS_free_idle_chunk": True})
    with pytest.raises(TypeError):
        fluid.get_flags(1)
    with pytest.raises(ValueError):
        fluid.get_flags("FLAGS_free_idle_chunk")


def test_inference_over_several_places_of_one_process():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[2, 3], dtype="float32")  # a fixed batch of 2 per place
        y = fluid.layers.fc(x, size=4)
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4, iterable=True)
        other = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4, iterable=False)
    batches = [np.full([2, 3], i, np.float32) for i in range(7)]
    loader.set_batch_generator(lambda: ((b,) for b in batches), places=fluid.cpu_places(3))
    other.set_batch_generator(lambda: ((b,) for b in batches))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        one = fluid.CompiledProgram(main)
        three = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(3))
        steps = list(loader())
        assert len(steps) == 2 and all(len(s) == 3 for s in steps)  # the 7th batch is dropped
        (got,) = exe.run(three, feed=steps[1], fetch_list=[y])
        want = np.concatenate([exe.run(one, feed={"x": b}, fetch_list=[y])[0] for b in batches[3:6]])
        assert got.shape == (6, 4)
        np.testing.assert_array_equal(got, want)
        (split,) = exe.run(three, feed={"x": np.concatenate(batches[3:6])}, fetch_list=[y])
        np.testing.assert_array_equal(split, want)  # a dict feed is shared out along the batch
        with pytest.raises(ValueError, match="cannot share equally"):
            exe.run(three, feed={"x": np.zeros([4, 3], np.float32)}, fetch_list=[y])
        other.start()
        (first,) = exe.run(three, fetch_list=[x])
        (second,) = exe.run(three, fetch_list=[x])
        assert first[:, 0].tolist() == [0, 0, 1, 1, 2, 2] and second[:, 0].tolist() == [3, 3, 4, 4, 5, 5]
        with pytest.raises(flotilla.errors.EOFException):
            exe.run(three, fetch_list=[x])
        other.reset()
    from flotilla.dataloader import keep_data_loader_order
    keep_data_loader_order(False)
    with pytest.raises(TypeError):
        keep_data_loader_order("no")


def _fc_program(size):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.fc(x, size=size)
    return main, startup, y


def test_parallel_executor_runs_a_compiled_program(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, startup, y = _fc_program(2)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        pe = fluid.ParallelExecutor(use_cuda=False, main_program=main, scope=scope)
        assert pe.device_count == 2
        feed = {"x": np.arange(12, dtype=np.float32).reshape(4, 3)}
        (got,) = pe.run(fetch_list=[y.name], feed=feed)
        (want,) = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[y])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="num_trainers"):
        fluid.ParallelExecutor(use_cuda=False, main_program=main, num_trainers=2)


def test_fleet_save_and_load_model_without_servers(tmp_path, monkeypatch):
    from flotilla.distributed import fleet
    for var in ("TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TRAINING_ROLE", "TRAINER")  # Paddle: no server list is still a job without servers
    fleet.init(fleet.PaddleCloudRoleMaker(is_collective=False))
    main, startup, y = _fc_program(1)
    with fluid.program_guard(main, startup):
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            fluid.Executor(fluid.CPUPlace()).run(startup)
            params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}
            fleet.save(str(tmp_path / "inf"), feed=["x"], fetch=[y])
            assert (tmp_path / "inf").is_dir()
            with pytest.raises(ValueError, match="both feed and fetch"):
                fleet.save(str(tmp_path / "bad"), feed=["x"])
            fleet.save(str(tmp_path / "all"))
            for name in params:
                scope.find_var(name).get_tensor().set(np.zeros_like(params[name]), fluid.CPUPlace())
            fleet.load_model(str(tmp_path / "all"), mode=0)
            for name, value in params.items():
                np.testing.assert_array_equal(np.array(scope.find_var(name).get_tensor()), value)
            with pytest.raises(ValueError, match="mode"):
                fleet.load_model(str(tmp_path / "all"), mode=3)


def test_data_feeder_packs_lod_level_three():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        books = fluid.layers.data(name="books", shape=[1], dtype="int64", lod_level=3)
    feeder = fluid.DataFeeder([books], fluid.CPUPlace(), program=main)
    # book 1: chapters [[1, 2], [3]] and [[4]]; book 2: chapter [[5, 6, 7]]
    result = feeder.feed([([[[1, 2], [3]], [[4]]],), ([[[5, 6, 7]]],)])["books"]
    assert result.shape() == [7, 1]
    assert result.recursive_sequence_lengths() == [[2, 1], [2, 1, 1], [2, 1, 1, 3]]
    assert np.array(result).ravel().tolist() == [1, 2, 3, 4, 5, 6, 7]


def _initial_values(build_count, seed=100):
    """The parameters of the last of ``build_count`` fc stacks built under
    one program seed without restarting generated names."""
    values = None
    for _ in range(build_count):
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = seed
        with fluid.program_guard(main, startup):
            x = fluid.layers.data(name="x", shape=[4], dtype="float32")
            fluid.layers.fc(fluid.layers.fc(x, size=3), size=3)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            fluid.Executor(fluid.CPUPlace()).run(startup)
        values = [np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()]
    return values


def test_a_program_seed_reproduces_programs_whatever_their_generated_names():
    first, again = _initial_values(1), _initial_values(2)  # the second build's names are fc_2.w_0, ...
    assert len(first) == 4
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    w1, w2 = first[0], first[2][:3, :3]
    assert not np.array_equal(first[2], first[0][:3]) and not np.array_equal(w1[:3], w2)
    assert not np.array_equal(_initial_values(1, seed=101)[0], first[0])


@pytest.mark.parametrize("env", [
    {"PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:4001"},
    {"PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:4001", "PADDLE_TRAINERS_NUM": "2"},
    {"PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:4001", "PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "TRAINER"},
    {"PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:4001", "PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "PSERVER"},
])
def test_an_incomplete_parameter_server_environment_is_a_value_error(env, monkeypatch):
    for var in ("PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINERS_NUM", "TRAINING_ROLE", "PADDLE_TRAINER_ID",
                "POD_IP", "PADDLE_PORT"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    ro = role_maker.PaddleCloudRoleMaker(is_collective=False)
    with pytest.raises(ValueError, match="is not set"):
        ro._generate_role()


def test_zeros_and_ones_and_what_tensor_arrays_name():
    from flotilla import tensor
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        z = tensor.zeros([2, 3], "int64")
        o = tensor.ones([1], "float32")
    z_val, o_val = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[z, o])
    assert z_val.dtype == np.int64 and z_val.shape == (2, 3) and not z_val.any()
    assert o_val.tolist() == [1.0]
    from flotilla.paddle_compat import nearest
    assert "fetch_list" in nearest("paddle.tensor.array_write") and "scale" in nearest("paddle.increment")
