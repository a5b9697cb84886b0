"""Paddle's Dataset API over the C++ io::Dataset: load, shuffle and size
counts across threads and files, the pipe command with a data generator,
and the errors (file:line; pipe exit status and stderr tail)."""

import re
import sys
import textwrap
import types

import numpy as np
import pytest

import flotilla
import flotilla.static
import flotilla.distributed as dist
from flotilla import errors, fluid
from flotilla.distributed import fleet


@pytest.fixture
def slots():
    main, startup = flotilla.Program(), flotilla.Program()
    with flotilla.program_guard(main, startup):
        label = flotilla.static.data("label", [-1, 1], dtype="float32")
    # A sequence variable as set_use_var reads one (variables keep lod_level
    # once tensors carry LoD).
    ids = types.SimpleNamespace(name="ids", dtype="int64", shape=[-1, 1], lod_level=1)
    return [ids, label]


def write_parts(tmp_path, sizes):
    """Files of records "2 <id> <id+1> 1 <id % 2>", ids numbered through all files."""
    paths, first = [], 0
    for f, n in enumerate(sizes):
        path = tmp_path / f"part-{f}"
        path.write_text("".join(f"2 {i} {i + 1} 1 {i % 2}\n" for i in range(first, first + n)))
        paths.append(str(path))
        first += n
    return paths


def ids_of(dataset):
    ids = []
    for b in range(dataset.dataset.batch_count()):
        values, offsets = dataset.dataset.batch(b)["ids"]
        ids.extend(values[offsets[:-1]].tolist())
    return ids


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("sizes", [[5], [3, 0, 7], [4, 4, 4, 4, 1]])
def test_load_shuffle_sizes_across_threads_and_files(tmp_path, slots, threads, sizes):
    ds = dist.InMemoryDataset()
    ds.init(batch_size=4, thread_num=threads, use_var=slots, pipe_command="cat")
    ds.set_filelist(write_parts(tmp_path, sizes))
    ds.load_into_memory()
    total = sum(sizes)
    assert ds.get_memory_data_size() == total
    assert ds.get_shuffle_data_size() == total
    assert ids_of(ds) == list(range(total))
    ds.local_shuffle()
    assert sorted(ids_of(ds)) == list(range(total))
    assert ds.dataset.batch_count() == (total + 3) // 4
    ds.release_memory()
    assert ds.get_memory_data_size() == 0


def test_batch_holds_values_and_offsets(tmp_path, slots):
    ds = dist.InMemoryDataset()
    ds.init(batch_size=2, thread_num=1, use_var=slots)
    ds.set_filelist(write_parts(tmp_path, [3]))
    ds.load_into_memory()
    ids, offsets = ds.dataset.batch(0)["ids"]
    assert ids.dtype == np.int64 and ids.tolist() == [0, 1, 1, 2]
    assert offsets.tolist() == [0, 2, 4]
    label, label_offsets = ds.dataset.batch(1)["label"]
    assert label.dtype == np.float32 and label.tolist() == [0.0] and label_offsets.tolist() == [0, 1]


def test_batches_as_feeds(tmp_path, slots):
    ds = dist.InMemoryDataset()
    ds.init(batch_size=2, use_var=slots)
    ds.set_filelist(write_parts(tmp_path, [3]))
    ds.load_into_memory()
    assert ds.dataset.use_var() == [("ids", "int64", []), ("label", "float32", [-1, 1])]
    tensors, offsets = ds.dataset.feed(1)
    assert np.asarray(tensors["ids"]).tolist() == [[2], [3]]
    assert offsets["ids"].tolist() == [0, 2]
    assert np.asarray(tensors["label"]).shape == (1, 1) and "label" not in offsets


def test_fluid_factory_setters_and_generator_pipe(tmp_path, slots):
    reader = tmp_path / "reader.py"
    reader.write_text(textwrap.dedent("""
        from flotilla.distributed.fleet import MultiSlotDataGenerator
        class Reader(MultiSlotDataGenerator):
            def generate_sample(self, line):
                def it():
                    words = [int(w) for w in line.split()]
                    yield ("ids", words), ("label", [float(len(words))])
                return it
        Reader().run_from_stdin()
    """))
    raw = tmp_path / "raw"
    raw.write_text("1 2 3\n4\n5 6\n")
    ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var(slots)
    ds.set_pipe_command(f"{sys.executable} {reader}")
    ds.set_batch_size(8)
    ds.set_thread(2)
    ds.set_filelist([str(raw), str(raw)])
    ds.preload_into_memory()
    ds.wait_preload_done()
    assert ds.get_memory_data_size() == 6
    ids, offsets = ds.dataset.batch(0)["ids"]
    assert ids.tolist() == [1, 2, 3, 4, 5, 6] * 2
    assert offsets.tolist() == [0, 3, 4, 6, 9, 10, 12]
    assert ds.dataset.batch(0)["label"][0].tolist() == [3, 1, 2] * 2


def test_queue_dataset_streams(tmp_path, slots):
    ds = fleet.QueueDataset()
    ds.init(batch_size=3, thread_num=2, use_var=slots)
    ds.set_filelist(write_parts(tmp_path, [4, 5]))
    seen = []
    ds._batches(lambda batch: seen.append(batch["ids"][1].size - 1))
    assert sorted(seen) == [1, 2, 3, 3]
    with pytest.raises(NotImplementedError, match="use InMemoryDataset for local_shuffle"):
        ds.local_shuffle()
    assert not hasattr(ds, "load_into_memory")
    with pytest.raises(ValueError, match="does not exist"):
        fluid.DatasetFactory().create_dataset("BoxPSDataset")


def test_malformed_line_names_file_and_line(tmp_path, slots):
    bad = tmp_path / "bad"
    bad.write_text("2 1 2 1 0\n2 1 2 x 0\n")
    ds = dist.InMemoryDataset()
    ds.init(use_var=slots, thread_num=2)
    ds.set_filelist(write_parts(tmp_path, [2]) + [str(bad)])
    with pytest.raises(errors.CorruptionError,
                       match=re.escape(f"{bad}:2: expected the value count of slot 1 'label' (float32), found 'x'")):
        ds.load_into_memory()
    assert ds.get_memory_data_size() == 0


def test_failing_pipe_command_names_status_and_stderr(tmp_path, slots):
    ds = dist.InMemoryDataset()
    ds.init(use_var=slots, pipe_command=f"{sys.executable} -c \"import sys; sys.exit('reader broke')\"")
    ds.set_filelist(write_parts(tmp_path, [1]))
    with pytest.raises(errors.UnavailableError, match=r"exited with status 1; its stderr ends:\nreader broke"):
        ds.load_into_memory()


def test_settings_refused_by_name(slots):
    ds = dist.InMemoryDataset()
    with pytest.raises(NotImplementedError, match="HDFS"):
        ds.init(fs_name="afs://x")
    main = flotilla.Program()
    with flotilla.program_guard(main, flotilla.Program()):
        bad = flotilla.static.data("f64", [-1, 1], dtype="float64")
    with pytest.raises(ValueError, match="only supports dtype=float32 and dtype=int64"):
        ds.init(use_var=[bad])
    with pytest.raises(errors.InvalidArgumentError, match="batch size"):
        ds.init(batch_size=0)
    ds.init(batch_size=2, queue_num=4, data_feed_type="MultiSlotInMemoryDataFeed")
    ds._init_distributed_settings(fleet_send_batch_size=1024, parse_ins_id=False)
    with pytest.raises(NotImplementedError, match="parse_ins_id=True"):
        ds.update_settings(batch_size=4, parse_ins_id=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'thread'"):
        ds.init(thread=2)


def test_paddle_names_under_compat_switch(tmp_path):
    from conftest import run_python
    part = write_parts(tmp_path, [3])[0]
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import paddle
        import paddle.fluid as fluid
        paddle.enable_static()
        x = paddle.static.data("ids", [-1, 1], dtype="int64", lod_level=1)
        y = paddle.static.data("label", [-1, 1], dtype="float32")
        a = paddle.distributed.InMemoryDataset()
        a.init(batch_size=2, thread_num=1, use_var=[x, y])
        a.set_filelist([{part!r}])
        a.load_into_memory()
        b = fluid.DatasetFactory().create_dataset("QueueDataset")
        print(a.get_memory_data_size(), type(b).__name__)
    """))
    r = run_python(["-m", "flotilla.paddle_compat", str(script)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "QueueDataset"]
