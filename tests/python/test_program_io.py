"""Models and checkpoints are interchangeable between Python and C++: what
Python saves, the C++ API loads (tests/python/model_tool.cc), and back."""

import json
import subprocess

import numpy as np
import pytest

import flotilla
from flotilla import fluid

from conftest import build_path


def tool(command: str, directory) -> dict:
    done = subprocess.run([build_path("tests", "py_model_tool"), command, str(directory)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def fixed_input(n: int) -> np.ndarray:
    """The tool's fixed input: 4 rows, x[i][j] = 0.1 i + 0.01 j."""
    i, j = np.meshgrid(np.arange(4), np.arange(n), indexing="ij")
    return (0.1 * i + 0.01 * j).astype(np.float32)


def fit_a_line(main, startup):
    """Seed 000's network, as model_tool.cc builds it."""
    main.random_seed = 7
    startup.random_seed = 7
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=y_predict, label=y))
    fluid.optimizer.SGD(learning_rate=0.001).minimize(loss)
    return x, y, y_predict, loss


def train_a_little(exe, main, loss, steps=5):
    rng = np.random.RandomState(3)
    for _ in range(steps):
        exe.run(main, feed={"x": rng.rand(8, 13).astype(np.float32), "y": rng.rand(8, 1).astype(np.float32)},
                fetch_list=[loss])


def trained_fit_a_line(main, startup, steps=5):
    """fit_a_line initialised and trained a few steps: (exe, y_predict, loss)."""
    _, _, y_predict, loss = fit_a_line(main, startup)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    train_a_little(exe, main, loss, steps)
    return exe, y_predict, loss


def test_inference_model_saved_in_python_runs_in_cpp(programs, tmp_path):
    main, startup, _ = programs
    exe, y_predict, _ = trained_fit_a_line(main, startup)
    fluid.io.save_inference_model(str(tmp_path / "model"), ["x"], [y_predict], exe, main)
    test_program = main.clone(for_test=True)._prune([y_predict.name])
    (mine,) = exe.run(test_program, feed={"x": fixed_input(13)}, fetch_list=[y_predict])
    theirs = tool("infer", tmp_path / "model")["fetch"][0]
    np.testing.assert_allclose(np.array(theirs).reshape(mine.shape), mine, rtol=1e-6)


def test_inference_model_saved_in_cpp_runs_in_python(programs, tmp_path):
    theirs = tool("save_model", tmp_path / "model")["fetch"][0]
    exe = fluid.Executor(fluid.CPUPlace())
    program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "model"), exe)
    assert feeds == ["x"]
    (mine,) = exe.run(program, feed={"x": fixed_input(13)}, fetch_list=fetches)
    np.testing.assert_allclose(mine.ravel(), theirs, rtol=1e-6)


def test_persistables_saved_in_python_load_in_cpp(programs, tmp_path):
    main, startup, _ = programs
    exe, _, _ = trained_fit_a_line(main, startup)
    fluid.io.save_persistables(exe, str(tmp_path / "ckpt"), main)
    loaded = tool("load_params", tmp_path / "ckpt")["params"]
    assert "fc_0.w_0" in loaded and "fc_0.b_0" in loaded
    for name, values in loaded.items():
        mine = np.array(fluid.global_scope().find_var(name).get_tensor())
        np.testing.assert_array_equal(mine.ravel(), np.array(values, np.float32))


def test_persistables_saved_in_cpp_load_in_python(programs, tmp_path):
    main, startup, _ = programs
    fit_a_line(main, startup)
    saved = tool("save_params", tmp_path / "ckpt")["params"]
    exe = fluid.Executor(fluid.CPUPlace())
    fluid.io.load_persistables(exe, str(tmp_path / "ckpt"), main)
    for name, values in saved.items():
        mine = np.array(fluid.global_scope().find_var(name).get_tensor())
        np.testing.assert_array_equal(mine.ravel(), np.array(values, np.float32))


def test_persistables_round_trip_resumes_training_exactly(programs, tmp_path):
    main, startup, _ = programs
    exe, _, loss = trained_fit_a_line(main, startup, steps=3)
    fluid.io.save_persistables(exe, str(tmp_path / "ckpt"), main)
    feed = {"x": np.full((2, 13), 0.5, np.float32), "y": np.ones((2, 1), np.float32)}
    expected = [exe.run(main, feed=feed, fetch_list=[loss])[0] for _ in range(3)]
    with flotilla.scope_guard(flotilla._core.Scope()):
        fluid.io.load_persistables(exe, str(tmp_path / "ckpt"), main)
        resumed = [exe.run(main, feed=feed, fetch_list=[loss])[0] for _ in range(3)]
    np.testing.assert_array_equal(np.array(expected), np.array(resumed))


def test_program_serializes_and_parses(programs):
    main, startup, _ = programs
    fit_a_line(main, startup)
    copy = flotilla.Program.parse_from_string(main.serialize())
    assert str(copy) == str(main)
    assert "sgd" in main.global_block().ops and "sgd" not in main.clone(for_test=True).global_block().ops
