"""DataLoader: iterable and non-iterable (EOFException, reset), batch
generators, reader exceptions surfacing with their own traceback and the
reader's name, and the GIL released while the executor runs."""

import threading
import time
import traceback

import numpy as np
import pytest

import flotilla
from flotilla import fluid


def _model():
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    doubled = fluid.layers.scale(x, scale=2.0)
    return x, label, doubled


def sample_batches(n_batches=5, batch=3):
    def reader():
        for b in range(n_batches):
            yield [(np.array([b, i], np.float32), np.array([b * 10 + i], np.int64)) for i in range(batch)]
    return reader


def test_iterable_loader_yields_every_batch_in_order(programs):
    main, _, _ = programs
    x, label, doubled = _model()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, label], capacity=2, iterable=True)
    loader.set_sample_list_generator(sample_batches(), places=fluid.CPUPlace())
    exe = fluid.Executor(fluid.CPUPlace())
    seen = []
    for data in loader():
        out, lab = exe.run(main, feed=data, fetch_list=[doubled, label])
        seen.append(int(lab[0, 0]) // 10)
        np.testing.assert_array_equal(out[:, 0], 2 * seen[-1])
    assert seen == [0, 1, 2, 3, 4]
    assert len(list(loader())) == 5  # a second pass starts afresh


def test_non_iterable_loader_feeds_run_until_eof_and_resets(programs):
    main, _, _ = programs
    x, label, doubled = _model()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, label], capacity=4, iterable=False)
    loader.set_sample_list_generator(sample_batches())
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(2):  # two passes
        loader.start()
        labels = []
        try:
            while True:
                (lab,) = exe.run(main, fetch_list=[label])
                labels.append(int(lab[0, 0]))
        except fluid.core.EOFException:
            loader.reset()
        assert labels == [0, 10, 20, 30, 40]
    with pytest.raises(ValueError, match="start"):
        exe.run(main, fetch_list=[label])  # not started: the program's data variables were not fed


def test_eof_is_the_same_class_under_every_name():
    assert fluid.core.EOFException is flotilla.errors.EOFException


def test_batch_generator_and_sample_generator(programs):
    main, _, _ = programs
    x, label, doubled = _model()
    exe = fluid.Executor(fluid.CPUPlace())

    def batches():
        for b in range(3):
            yield np.full((4, 2), b, np.float32), np.full((4, 1), b, np.int64)
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, label], capacity=2)
    loader.set_batch_generator(batches)
    got = [exe.run(main, feed=d, fetch_list=[doubled])[0][0, 0] for d in loader()]
    assert got == [0, 2, 4]

    def samples():
        for i in range(7):
            yield np.array([i, i], np.float32), np.array([i], np.int64)
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, label], capacity=2)
    loader.set_sample_generator(samples, batch_size=3, drop_last=True)
    sizes = [exe.run(main, feed=d, fetch_list=[label])[0].shape[0] for d in loader()]
    assert sizes == [3, 3]


def broken_disk_reader():
    for b in range(10):
        if b == 2:
            raise OSError(5, "Input/output error")
        yield [(np.zeros(2, np.float32), np.zeros(1, np.int64))]


def test_reader_exception_surfaces_with_its_traceback_and_name(programs):
    main, _, _ = programs
    x, label, doubled = _model()
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, label], capacity=1, iterable=False)
    loader.set_sample_list_generator(broken_disk_reader)
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    runs = 0
    with pytest.raises(OSError) as info:
        while True:
            exe.run(main, fetch_list=[doubled])
            runs += 1
    loader.reset()
    assert runs == 2
    assert info.value.errno == 5 and "Input/output error" in str(info.value)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "broken_disk_reader" in frames  # the reader's own line is in the traceback
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "broken_disk_reader" in notes and "DataLoader" in notes


def test_gil_is_released_while_the_executor_runs(programs):
    main, startup, _ = programs
    x = fluid.layers.data(name="x", shape=[256], dtype="float32")
    h = x
    for _ in range(100):
        h = fluid.layers.fc(input=h, size=256, act="tanh")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": np.random.rand(512, 256).astype(np.float32)}
    exe.run(main, feed=feed, fetch_list=[h])
    stamps = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            stamps.append(time.monotonic())
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.01)
        start = time.monotonic()
        exe.run(main, feed=feed, fetch_list=[h])
        end = time.monotonic()
    finally:
        stop.set()
        spinner.join()
    # Had the run held the GIL, the spinner could not have run Python code
    # between its start and its end.
    margin = (end - start) / 10
    inside = [t for t in stamps if start + margin < t < end - margin]
    assert inside, f"no Python ran during a {end - start:.3f} s exe.run"
