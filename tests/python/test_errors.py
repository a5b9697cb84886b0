"""C++ errors become Python exceptions with the same message: ValueError for
bad arguments, RuntimeError subclasses of flotilla.errors for the rest —
never an abort of the interpreter."""

import numpy as np
import pytest

from flotilla import _core, errors, fluid

MAPPING = [
    ("InvalidArgument", errors.InvalidArgumentError, ValueError),
    ("NotFound", errors.NotFoundError, LookupError),
    ("AlreadyExists", errors.AlreadyExistsError, RuntimeError),
    ("Unavailable", errors.UnavailableError, RuntimeError),
    ("DeadlineExceeded", errors.DeadlineExceededError, RuntimeError),
    ("Corruption", errors.CorruptionError, RuntimeError),
    ("Unimplemented", errors.UnimplementedError, NotImplementedError),
    ("Internal", errors.InternalError, RuntimeError),
]


@pytest.mark.parametrize("kind,cls,builtin", MAPPING)
def test_each_error_kind_maps_to_its_class(kind, cls, builtin):
    with pytest.raises(cls) as info:
        _core._raise(kind, f"the {kind} message")
    assert str(info.value) == f"{kind}: the {kind} message"  # what() of the C++ error, unchanged
    assert isinstance(info.value, errors.Error)
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value, builtin)


def test_real_errors_keep_the_core_message(programs):
    main, _, _ = programs
    with pytest.raises(errors.NotFoundError) as info:
        main.global_block().var("no_such_var")
    assert "no_such_var" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError, match="dtype"):
        fluid.layers.data(name="x", shape=[2], dtype="complex64")


def test_corrupt_checkpoint_is_an_error_not_a_crash(programs, tmp_path):
    main, startup, _ = programs
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    fluid.layers.fc(input=x, size=1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fluid.io.save_persistables(exe, str(tmp_path / "ckpt"), main)
    for f in (tmp_path / "ckpt").iterdir():
        if f.name != "MANIFEST":
            data = bytearray(f.read_bytes())
            data[-5] ^= 0xFF
            f.write_bytes(bytes(data))
    with pytest.raises(errors.CorruptionError):
        fluid.io.load_persistables(exe, str(tmp_path / "ckpt"), main)
    with pytest.raises(errors.NotFoundError):
        fluid.io.load_persistables(exe, str(tmp_path / "absent"), main)


def test_unknown_optimizer_argument_is_refused_by_name(programs):
    with pytest.raises(NotImplementedError, match="grad_clip"):
        fluid.optimizer.SGD(learning_rate=0.1, grad_clip=object())


def test_executor_errors_leave_the_interpreter_usable(programs):
    main, _, _ = programs
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    y = fluid.layers.scale(x, scale=2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(3):
        with pytest.raises(ValueError):
            exe.run(main, feed={"x": np.ones((1, 3), np.float32)}, fetch_list=[y])
    (ok,) = exe.run(main, feed={"x": np.ones((1, 2), np.float32)}, fetch_list=[y])
    np.testing.assert_array_equal(ok, [[2, 2]])
