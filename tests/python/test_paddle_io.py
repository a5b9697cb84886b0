"""Saving and loading as Paddle does: fluid.io's save/load_params,
save/load_persistables and save/load_vars with and without ``filename``,
save_inference_model's Paddle layouts (model_filename, params_filename,
export_for_deployment, program_only), paddle.static's 2.x functions
(save/load_inference_model, normalize_program, serialize_*/deserialize_*,
save/load with .pdparams/.pdopt/.pdmodel, load_program_state /
set_program_state), CompiledProgram as a pass-through, and files written in
Paddle's documented formats (built here byte by byte) loading."""

import os
import pickle
import struct
import warnings

import numpy as np
import pytest

import flotilla
from flotilla import errors, fluid
import flotilla.nn as nn
import flotilla.static as static


@pytest.fixture
def model():
    """A trained two-layer regression (Adam: optimizer state too) in its own
    programs and scope; yields (main, startup, exe, x, pred, feed)."""
    main, startup = flotilla.Program(), flotilla.Program()
    main.random_seed = startup.random_seed = 11
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        x = static.data("x", [None, 4], "float32")
        y = static.data("y", [None, 1], "float32")
        pred = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))(x)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.Adam(0.05).minimize(loss)
    rng = np.random.RandomState(0)
    feed = {"x": rng.uniform(-1, 1, (6, 4)).astype("float32"), "y": rng.uniform(-1, 1, (6, 1)).astype("float32")}
    with flotilla.scope_guard(fluid.core.Scope()):
        exe = flotilla.Executor()
        exe.run(startup)
        for _ in range(3):
            exe.run(main, feed=feed, fetch_list=[loss])
        yield main, startup, exe, x, pred, feed


def _values(program, params_only=False):
    block = program.global_block()
    out = {}
    for n in block.var_names():
        v = block.var(n)
        if v.persistable and (v.is_parameter or not params_only):
            out[n] = np.array(flotilla.global_scope().find_var(n).get_tensor())
    return out


def _scramble(names):
    scope = flotilla.global_scope()
    for n in names:
        t = scope.find_var(n).get_tensor()
        t.set(np.full(np.array(t).shape, 7, np.array(t).dtype))


def _predict(exe, program, feed_x, fetch):
    return exe.run(program, feed={"x": feed_x}, fetch_list=fetch)[0]


# ---- Paddle's documented tensor format, written here independently ----

def _paddle_tensor_bytes(array):
    """One tensor as Paddle's SerializeToStream writes it."""
    types = {np.dtype("float32"): 5, np.dtype("float64"): 6, np.dtype("int32"): 2, np.dtype("int64"): 3}
    desc = bytes([0x08, types[array.dtype]])
    for d in array.shape:
        desc += bytes([0x10]) + _varint(d)
    return (struct.pack("<IQ", 0, 0) + struct.pack("<Ii", 0, len(desc)) + desc +
            np.ascontiguousarray(array).tobytes())


def _varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def test_params_and_persistables_with_and_without_filename(model, tmp_path):
    main, _, exe, _, _, _ = model
    params, everything = _values(main, True), _values(main)
    assert len(everything) > len(params) > 0
    for fn_save, fn_load, expect in ((fluid.io.save_params, fluid.io.load_params, params),
                                     (fluid.io.save_persistables, fluid.io.load_persistables, everything)):
        for filename in (None, "__params__"):
            d = str(tmp_path / f"{fn_save.__name__}_{filename}")
            fn_save(exe, d, main, filename=filename)
            if filename:
                assert os.listdir(d) == [filename]
                size = sum(len(_paddle_tensor_bytes(v)) for v in expect.values())
                assert os.path.getsize(os.path.join(d, filename)) == size  # Paddle's bytes, nothing else
            _scramble(expect)
            fn_load(exe, d, main, filename=filename)
            for n, v in expect.items():
                np.testing.assert_array_equal(np.array(flotilla.global_scope().find_var(n).get_tensor()), v)


def test_combined_file_is_paddles_format_sorted_by_name(model, tmp_path):
    main, _, exe, _, _, _ = model
    params = _values(main, True)
    fluid.io.save_params(exe, str(tmp_path), main, filename="p")
    expected = b"".join(_paddle_tensor_bytes(params[n]) for n in sorted(params))
    assert (tmp_path / "p").read_bytes() == expected


def test_files_paddle_writes_load(model, tmp_path):
    """A combined params file, one file per variable and .pdparams/.pdopt
    pickles, as Paddle 2.x writes them, load into the program."""
    main, _, exe, _, pred, feed = model
    params, everything = _values(main, True), _values(main)
    want = _predict(exe, main.clone(for_test=True)._prune([pred.name]), feed["x"], [pred])
    (tmp_path / "combined").mkdir()
    (tmp_path / "combined" / "params").write_bytes(b"".join(_paddle_tensor_bytes(params[n]) for n in sorted(params)))
    (tmp_path / "split").mkdir()
    for n, v in params.items():
        (tmp_path / "split" / n).write_bytes(_paddle_tensor_bytes(v))
    for name in ("model.pdparams", "model.pdopt"):
        part = params if name.endswith("pdparams") else {k: v for k, v in everything.items() if k not in params}
        with open(tmp_path / name, "wb") as f:
            pickle.dump(part, f, protocol=2)
    loaders = [lambda: fluid.io.load_params(exe, str(tmp_path / "combined"), main, filename="params"),
               lambda: fluid.io.load_params(exe, str(tmp_path / "split"), main),
               lambda: static.load(main, str(tmp_path / "model"), exe),
               lambda: static.set_program_state(main, static.load_program_state(str(tmp_path / "model"))),
               lambda: static.set_program_state(main, static.load_program_state(str(tmp_path / "split")))]
    for load in loaders:
        _scramble(params)
        load()
        np.testing.assert_array_equal(_predict(exe, main.clone(for_test=True)._prune([pred.name]), feed["x"], [pred]), want)


def test_damaged_paddle_files_are_refused_by_name(model, tmp_path):
    main, _, exe, _, _, _ = model
    fluid.io.save_params(exe, str(tmp_path), main, filename="p")
    data = (tmp_path / "p").read_bytes()
    (tmp_path / "p").write_bytes(data[:-3])
    with pytest.raises(errors.CorruptionError, match="parameter file .*p' is truncated"):
        fluid.io.load_params(exe, str(tmp_path), main, filename="p")
    (tmp_path / "p").write_bytes(data + b"x")
    with pytest.raises(errors.CorruptionError, match="after its"):
        fluid.io.load_params(exe, str(tmp_path), main, filename="p")
    with pytest.raises(errors.NotFoundError, match="missing"):
        fluid.io.load_params(exe, str(tmp_path), main, filename="absent")
    wrong = {n: np.zeros((2, 2), "float32") for n in _values(main, True)}
    (tmp_path / "w").write_bytes(b"".join(_paddle_tensor_bytes(wrong[n]) for n in sorted(wrong)))
    with pytest.raises(errors.InvalidArgumentError, match="but the program expects"):
        fluid.io.load_params(exe, str(tmp_path), main, filename="w")


def test_save_inference_model_layouts(model, tmp_path):
    main, _, exe, x, pred, feed = model
    want = _predict(exe, main.clone(for_test=True)._prune([pred.name]), feed["x"], [pred])
    d = tmp_path / "m"
    d.mkdir()
    (d / "keep").write_text("kept")
    layouts = [("__model__", "__params__"), ("model", None), (None, None)]
    for model_filename, params_filename in layouts[:2]:
        assert fluid.io.save_inference_model(str(d), ["x"], [pred], exe, main, model_filename=model_filename,
                                             params_filename=params_filename) == [pred.name]
    assert sorted(os.listdir(d)) == ["__model__", "__params__", "keep", "linear_0.b_0", "linear_0.w_0",
                                     "linear_1.b_0", "linear_1.w_0", "model"]
    fluid.io.save_inference_model(str(tmp_path / "plain"), ["x"], [pred], exe, main)
    for dirname, (model_filename, params_filename) in ((d, layouts[0]), (d, layouts[1]), (tmp_path / "plain",
                                                                                             layouts[2])):
        with flotilla.scope_guard(fluid.core.Scope()):
            program, feeds, fetches = fluid.io.load_inference_model(str(dirname), exe, model_filename,
                                                                    params_filename)
            assert feeds == ["x"] and [v.name for v in fetches] == [pred.name]
            np.testing.assert_array_equal(_predict(exe, program, feed["x"], fetches), want)
    # the whole program, targets empty, and the program alone
    fluid.io.save_inference_model(str(tmp_path / "whole"), [], [], exe, main, export_for_deployment=False)
    assert "__model__.main_program" in os.listdir(tmp_path / "whole")
    whole = static.deserialize_program((tmp_path / "whole" / "__model__.main_program").read_bytes())
    assert whole.global_block().ops == main.global_block().ops
    fluid.io.save_inference_model(str(tmp_path / "only"), ["x"], [pred], exe, main, model_filename="m",
                                  program_only=True)
    assert sorted(os.listdir(tmp_path / "only")) == ["m"]


def test_save_inference_model_refusals_name_the_argument(model, tmp_path):
    main, _, exe, x, pred, _ = model
    with pytest.raises(TypeError, match="dirname must be a directory path .*got NoneType None"):
        fluid.io.save_inference_model(None, ["x"], [pred], exe, main)
    with pytest.raises(ValueError, match="'target_vars' should be a list of Variable"):
        fluid.io.save_inference_model(str(tmp_path), ["x"], ["not a variable"], exe, main)
    with pytest.raises(ValueError, match="'feed_var_names' should be a list of str"):
        fluid.io.save_inference_model(str(tmp_path), [x], [pred], exe, main)
    with pytest.raises(ValueError, match="target_vars is empty"):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [], exe, main)
    with pytest.raises(ValueError, match="'fetch_vars' should be a Variable or a list of Variable"):
        static.save_inference_model(str(tmp_path / "p"), [x], [], exe, program=main)
    with pytest.raises(ValueError, match="is an existing directory"):
        static.save_inference_model(str(tmp_path), [x], [pred], exe, program=main)
    with pytest.raises(ValueError, match="should not be a directory"):
        static.save_inference_model(str(tmp_path) + "/", [x], [pred], exe, program=main)
    with pytest.raises(ValueError, match="should be the bytes"):
        static.load_inference_model(None, exe, model_filename="illegal", params_filename="illegal")
    with pytest.raises(ValueError, match="The path of params cannot be None"):
        fluid.io.load_inference_model(None, exe, b"model", None)
    with pytest.raises(ValueError, match="There is no directory named"):
        fluid.io.load_inference_model(str(tmp_path / "absent"), exe)
    with pytest.raises(TypeError, match="'feed_vars' should be a Variable"):
        static.normalize_program(main, "x", [pred])


def test_static_inference_model_serialize_and_normalize(model, tmp_path):
    main, _, exe, x, pred, feed = model
    want = _predict(exe, main.clone(for_test=True)._prune([pred.name]), feed["x"], [pred])
    prefix = str(tmp_path / "sub" / "infer")
    static.save_inference_model(prefix, [x], [pred], exe, program=main)
    assert sorted(os.listdir(tmp_path / "sub")) == ["infer.pdiparams", "infer.pdmodel"]
    normalized = static.normalize_program(main, [x], [pred])
    assert normalized.global_block().ops == ["mul", "elementwise_add", "relu", "mul", "elementwise_add"]
    program_bytes = static.serialize_program([x], [pred], program=main)
    params_bytes = static.serialize_persistables([x], [pred], exe, program=main)
    assert program_bytes == (tmp_path / "sub" / "infer.pdmodel").read_bytes()
    assert params_bytes == (tmp_path / "sub" / "infer.pdiparams").read_bytes()
    static.save_to_file(str(tmp_path / "blob"), params_bytes)
    assert static.load_from_file(str(tmp_path / "blob")) == params_bytes
    with pytest.raises(ValueError, match="'content' type should be bytes"):
        static.save_to_file(str(tmp_path / "blob"), "text")
    with flotilla.scope_guard(fluid.core.Scope()):
        program, feeds, fetches = static.load_inference_model(prefix, exe)
        np.testing.assert_array_equal(_predict(exe, program, feed["x"], fetches), want)
    with flotilla.scope_guard(fluid.core.Scope()):
        program = static.deserialize_program(program_bytes)
        static.deserialize_persistables(program, params_bytes, exe)
        np.testing.assert_array_equal(_predict(exe, program, feed["x"], [pred.name]), want)
    pruned_params = fluid.io.save_persistables(exe, None, main._prune_with_input(["x"], [pred]))
    assert pruned_params == params_bytes
    for load in (lambda: static.load_inference_model(None, exe, model_filename=program_bytes,
                                                     params_filename=params_bytes),
                 lambda: fluid.io.load_inference_model(None, exe, program_bytes, pruned_params)):
        with flotilla.scope_guard(fluid.core.Scope()):
            program, feeds, fetches = load()
            assert feeds == ["x"] and [v.name for v in fetches] == [pred.name]
            np.testing.assert_array_equal(_predict(exe, program, feed["x"], fetches), want)
        with pytest.raises(errors.CorruptionError, match="truncated"):
            static.deserialize_persistables(program, params_bytes[:-1], exe)


def test_static_save_load_pdparams_pdopt_pdmodel(model, tmp_path):
    main, _, exe, _, _, _ = model
    everything, params = _values(main), _values(main, True)
    prefix = str(tmp_path / "ckpt" / "model")
    static.save(main, prefix)
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["model.pdmodel", "model.pdopt", "model.pdparams"]
    with open(prefix + ".pdparams", "rb") as f:
        saved = pickle.load(f)
    assert sorted(saved) == sorted(params)
    assert all(isinstance(v, np.ndarray) for v in saved.values())
    assert static.deserialize_program((tmp_path / "ckpt" / "model.pdmodel").read_bytes()).global_block().ops == \
        main.global_block().ops
    _scramble(everything)
    static.load(main, prefix + ".pdparams", exe)
    assert all(np.array_equal(v, _values(main)[n]) for n, v in everything.items())
    state = static.load_program_state(prefix)
    assert sorted(state) == sorted(everything)
    _scramble(everything)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        static.set_program_state(main, {**state, "stray": np.zeros(1)})
    assert any("stray" in str(w.message) for w in caught)
    assert all(np.array_equal(v, _values(main)[n]) for n, v in everything.items())
    with pytest.raises(ValueError, match="has shape"):
        static.set_program_state(main, {next(iter(params)): np.zeros((9, 9), "float32")})
    with pytest.raises(ValueError, match="MUST be format of dirname/filename"):
        static.save(main, str(tmp_path) + "/")
    with pytest.raises(ValueError, match="protocol"):
        static.save(main, prefix, protocol=1)
    os.remove(prefix + ".pdopt")
    with pytest.raises(ValueError, match="Optimizer file .* not exits"):
        static.load(main, prefix, exe)
    # a directory of save_persistables loads through static.load too
    fluid.io.save_persistables(exe, str(tmp_path / "dir"), main)
    _scramble(everything)
    static.load(main, str(tmp_path / "dir"), exe)
    assert all(np.array_equal(v, _values(main)[n]) for n, v in everything.items())
    with pytest.raises(ValueError, match="executor is required"):
        static.load(main, str(tmp_path / "dir"))


def test_compiled_program_with_data_parallel_is_a_pass_through(model):
    main, _, exe, x, pred, feed = model
    from flotilla.fluid import compiler
    compiled = compiler.CompiledProgram(main.clone(for_test=True)._prune([pred.name])).with_data_parallel(loss_name=pred.name)
    assert static.CompiledProgram is compiler.CompiledProgram
    want = _predict(exe, main.clone(for_test=True)._prune([pred.name]), feed["x"], [pred])
    np.testing.assert_array_equal(exe.run(compiled, feed={"x": feed["x"]}, fetch_list=[pred])[0], want)
    # Several places of one process: a program that trains is refused when run.
    training = compiler.CompiledProgram(main).with_data_parallel(places=flotilla.cpu_places(2))
    with pytest.raises(NotImplementedError, match="one process per place"):
        exe.run(training, feed=feed, fetch_list=[pred])


def test_paddle_save_and_load_of_a_state_dict_and_a_program(model, tmp_path):
    """paddle.save(layer.state_dict(), path) / paddle.load in static mode."""
    from flotilla.paddle_compat import paddle_root as paddle
    main, startup, exe, _, _, _ = model
    with flotilla.program_guard(flotilla.Program(), flotilla.Program()), flotilla.unique_name_guard():
        layer = nn.Linear(3, 2)
        flotilla.Executor().run(flotilla.default_startup_program())
    path = str(tmp_path / "sub" / "linear.pdparams")
    paddle.save(layer.state_dict(), path)
    loaded = paddle.load(path)
    assert sorted(loaded) == ["bias", "weight"] and loaded["weight"].shape == (3, 2)
    loaded["weight"] += 1
    layer.set_state_dict(loaded)
    got = np.array(flotilla.global_scope().find_var(layer.weight.name).get_tensor())
    np.testing.assert_array_equal(got, loaded["weight"])
    paddle.save(main, str(tmp_path / "main.pdmodel"))
    assert paddle.load(str(tmp_path / "main.pdmodel")).global_block().ops == main.global_block().ops
    with pytest.raises(ValueError, match="dirname/filename"):
        paddle.save({}, str(tmp_path))
