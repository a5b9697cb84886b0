"""Feeds and fetches across the binding: every dtype, conversions, zero-copy
feeds, fetched arrays that own their memory, and the errors of bad feeds."""

import gc
import weakref

import numpy as np
import pytest

import flotilla
from flotilla import errors, fluid

DTYPES = ["float32", "float64", "int32", "int64"]


def _exe():
    return fluid.Executor(fluid.CPUPlace())


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_feeds_and_fetches(programs, dtype):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[3], dtype=dtype)
    as_f64 = fluid.layers.cast(x, "float64")
    value = (np.arange(12).reshape(4, 3) * 3 - 5).astype(dtype)
    got_x, got_f64 = _exe().run(main, feed={"x": value}, fetch_list=[x, as_f64])
    assert got_x.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got_x, value)
    assert got_f64.dtype == np.float64
    np.testing.assert_array_equal(got_f64, value.astype(np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cast_to_every_dtype(programs, dtype):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[2], dtype="float64")
    y = fluid.layers.cast(x, dtype)
    value = np.array([[1.0, -2.0], [3.0, 40.0]])
    (got,) = _exe().run(main, feed={"x": value}, fetch_list=[y])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, value.astype(dtype))


def test_lists_and_non_contiguous_arrays_are_converted_once(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    y = fluid.layers.scale(x, scale=2.0)
    exe = _exe()
    (from_list,) = exe.run(main, feed={"x": [[1, 2], [3, 4]]}, fetch_list=[y])
    np.testing.assert_array_equal(from_list, [[2, 4], [6, 8]])
    wide = np.arange(12, dtype=np.float32).reshape(3, 4)
    strided = wide[:, ::2]  # not contiguous
    (from_view,) = exe.run(main, feed={"x": strided}, fetch_list=[y])
    np.testing.assert_array_equal(from_view, strided * 2)


def test_fetched_arrays_own_their_memory(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    y = fluid.layers.scale(x, scale=3.0)
    exe = _exe()
    (first,) = exe.run(main, feed={"x": np.ones((2, 2), np.float32)}, fetch_list=[y])
    (second,) = exe.run(main, feed={"x": np.full((2, 2), 5, np.float32)}, fetch_list=[y])
    np.testing.assert_array_equal(first, np.full((2, 2), 3))  # not overwritten by the second run
    np.testing.assert_array_equal(second, np.full((2, 2), 15))
    first[0, 0] = 42  # writable, and private
    (third,) = exe.run(main, feed={"x": np.ones((2, 2), np.float32)}, fetch_list=[y])
    assert third[0, 0] == 3


def test_feed_is_zero_copy_and_never_written(programs):
    main, _, scope = programs
    x = fluid.layers.data(name="x", shape=[4], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    pred = fluid.layers.fc(input=x, size=1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = _exe()
    exe.run(flotilla.default_startup_program())
    xs = np.random.RandomState(0).rand(8, 4).astype(np.float32)
    ys = np.ones((8, 1), np.float32)
    before = xs.copy()
    exe.run(main, feed={"x": xs, "y": ys}, fetch_list=[loss])
    fed = exe._exe._local_scope(main, scope).find_var("x").get_tensor()
    assert fed._data_ptr() == xs.ctypes.data  # the executor reads the array itself
    np.testing.assert_array_equal(xs, before)  # and never writes it


def test_fed_array_is_released_after_the_next_run(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    y = fluid.layers.scale(x, scale=1.0)
    exe = _exe()
    first = np.ones((2, 2), np.float32)
    alive = weakref.ref(first)
    exe.run(main, feed={"x": first}, fetch_list=[y])
    del first
    gc.collect()
    assert alive() is not None  # the executor still holds the last feed
    exe.run(main, feed={"x": np.zeros((2, 2), np.float32)}, fetch_list=[y])
    gc.collect()
    assert alive() is None


def test_float64_fed_to_float32_is_converted_once(programs):
    main, _, scope = programs
    x = fluid.layers.data(name="pixels", shape=[3], dtype="float32")
    out = fluid.layers.scale(x, scale=2.0)
    exe = _exe()
    wide = np.full((5, 3), 1.0 + 2.0 ** -30, np.float64)  # rounds to 1.0 in float32
    (got,) = exe.run(main, feed={"pixels": wide}, fetch_list=[out])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full((5, 3), 2.0, np.float32))
    fed = exe._exe._local_scope(main, scope).find_var("pixels").get_tensor()
    assert fed._dtype() == "float32" and fed._data_ptr() != wide.ctypes.data  # a float32 copy
    right = np.ones((5, 3), np.float32)
    exe.run(main, feed={"pixels": right}, fetch_list=[out])
    assert fed._data_ptr() == right.ctypes.data  # the right dtype stays zero-copy


def test_wrong_dtype_names_the_variable_and_both_dtypes_and_shapes(programs):
    main, _, _ = programs
    fluid.layers.data(name="pixels", shape=[3], dtype="int64")
    out = fluid.layers.scale(main.global_block().var("pixels"), scale=1.0)
    with pytest.raises(ValueError) as info:
        _exe().run(main, feed={"pixels": np.ones((5, 3), np.float32)}, fetch_list=[out])
    message = str(info.value)
    assert isinstance(info.value, errors.InvalidArgumentError)
    for part in ("pixels", "float32", "int64", "[5, 3]", "[-1, 3]"):
        assert part in message, message
    fluid.layers.data(name="narrow", shape=[3], dtype="float64")
    back = fluid.layers.scale(main.global_block().var("narrow"), scale=1.0)
    with pytest.raises(errors.InvalidArgumentError, match="'narrow' has dtype float32.*declares float64"):
        _exe().run(main, feed={"narrow": np.ones((5, 3), np.float32)}, fetch_list=[back])


def test_wrong_shape_names_the_variable_and_both_shapes(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="features", shape=[13], dtype="float32")
    out = fluid.layers.scale(x, scale=1.0)
    with pytest.raises(errors.InvalidArgumentError) as info:
        _exe().run(main, feed={"features": np.ones((4, 12), np.float32)}, fetch_list=[out])
    message = str(info.value)
    for part in ("features", "[4, 12]", "[-1, 13]"):
        assert part in message, message


def test_missing_feed_and_unknown_fetch_are_named(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="a", shape=[1], dtype="float32")
    out = fluid.layers.scale(x, scale=1.0)
    with pytest.raises(errors.InvalidArgumentError, match="'a'"):
        _exe().run(main, feed={}, fetch_list=[out])
    with pytest.raises(errors.NotFoundError, match="nope"):
        _exe().run(main, feed={"a": np.ones((1, 1), np.float32)}, fetch_list=["nope"])
    with pytest.raises(LookupError):
        _exe().run(main, feed={"a": np.ones((1, 1), np.float32)}, fetch_list=["nope"])


def test_unsupported_dtype_is_refused_by_name(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="flags", shape=[2], dtype="float32")
    out = fluid.layers.scale(x, scale=1.0)
    with pytest.raises(errors.InvalidArgumentError, match="flags.*bool"):
        _exe().run(main, feed={"flags": np.ones((1, 2), bool)}, fetch_list=[out])


def test_global_scope_tensor_get_and_set(programs):
    main, startup, _ = programs
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    pred = fluid.layers.fc(input=x, size=2, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
    exe = _exe()
    exe.run(startup)
    tensor = fluid.global_scope().find_var("w").get_tensor()
    assert tensor.shape() == [3, 2]
    weights = np.arange(6, dtype=np.float32).reshape(3, 2)
    tensor.set(weights, fluid.CPUPlace())
    np.testing.assert_array_equal(np.array(tensor), weights)
    (got,) = exe.run(main, feed={"x": np.ones((1, 3), np.float32)}, fetch_list=[pred])
    np.testing.assert_allclose(got, np.ones((1, 3)) @ weights)
    assert fluid.global_scope().find_var("not_there") is None
