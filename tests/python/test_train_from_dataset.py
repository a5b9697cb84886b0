"""Executor.train_from_dataset / infer_from_dataset (Paddle's signature) over
io::TrainFromDataset: one thread matches exe.run fed the same batches bit
for bit, two threads converge, fetch_info lines are printed every
print_period batches, and a 1 server + 1 trainer job trains from a
QueueDataset on two threads in every PS mode."""

import json
import re

import numpy as np
import pytest

from flotilla import fluid

from conftest import run_ps_job


def _data(tmp_path, name, records, seed):
    """MultiSlot lines: 0-4 ids (label 1 when one is below 20), 4 floats, label."""
    rng = np.random.RandomState(seed)
    lines = []
    for _ in range(records):
        ids = rng.randint(0, 100, rng.randint(0, 5)).tolist()
        dense = (rng.randint(0, 100, 4) / 100.0).tolist()
        label = int(any(i < 20 for i in ids))
        lines.append(" ".join(map(str, [len(ids)] + ids + [4] + dense + [1, label])))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def model():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        ids = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
        dense = fluid.data(name="dense", shape=[-1, 4], dtype="float32")
        label = fluid.data(name="label", shape=[-1, 1], dtype="float32")
        bag = fluid.layers.sequence_pool(fluid.layers.embedding(ids, size=[100, 8], is_sparse=True), "sum")
        logit = fluid.layers.fc(fluid.layers.concat([bag, dense], axis=1), size=1)
        loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(logit, label))
        fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return main, startup, [ids, dense, label], loss


def _dataset(kind, use_var, files, threads=1, allow_empty=True):
    ds = fluid.DatasetFactory().create_dataset(kind)
    ds.set_use_var(use_var)
    ds.set_batch_size(16)
    ds.set_thread(threads)
    ds.set_filelist(files)
    ds.dataset.set_allow_empty_slots(allow_empty)
    if kind == "InMemoryDataset":
        ds.load_into_memory()
    return ds


def _params(main, scope):
    return {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in main.global_block().all_parameters()}


def test_one_thread_matches_run_fed_the_same_batches(tmp_path, model, capsys):
    main, startup, use_var, loss = model
    ds = _dataset("InMemoryDataset", use_var, [_data(tmp_path, "part-0", 200, 1)])
    exe = fluid.Executor(fluid.CPUPlace())
    by_dataset, by_run = fluid.core.Scope(), fluid.core.Scope()
    exe.run(startup, scope=by_dataset)
    exe.run(startup, scope=by_run)
    capsys.readouterr()
    assert exe.train_from_dataset(program=main, dataset=ds, scope=by_dataset, thread=1, fetch_list=[loss],
                                  fetch_info=["loss"], print_period=1) is None
    printed = capsys.readouterr().out
    dataset_losses = [np.float32(x) for x in re.findall(r"^batch: \d+, loss: (\S+)$", printed, re.M)]
    assert len(dataset_losses) == 13, printed
    run_losses = []
    for b in range(ds.dataset.batch_count()):
        feed, offsets = ds.dataset.feed(b)
        assert feed["ids"].lod() == [offsets["ids"].tolist()]
        run_losses.append(exe.run(main, feed=feed, fetch_list=[loss], scope=by_run)[0].item())
    # The printed values are rounded to 6 digits.
    np.testing.assert_allclose(dataset_losses, run_losses, rtol=1e-5)
    got, want = _params(main, by_dataset), _params(main, by_run)
    assert got.keys() == want.keys() and got
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("kind", ["InMemoryDataset", "QueueDataset"])
def test_two_threads_converge_and_infer_reads_only(tmp_path, model, kind):
    main, startup, use_var, loss = model
    files = [_data(tmp_path, f"part-{f}", 800, 10 + f) for f in range(4)]
    ds = _dataset(kind, use_var, files, threads=2)
    test = _dataset("InMemoryDataset", use_var, [_data(tmp_path, "test", 400, 99)])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    evaluate = main.clone(for_test=True)

    def mean_loss():
        return np.mean([exe.run(evaluate, feed=test.dataset.feed(b)[0], fetch_list=[loss], scope=scope)[0]
                        for b in range(test.dataset.batch_count())])

    before = mean_loss()
    for _ in range(3):
        exe.train_from_dataset(main, ds, scope, thread=0, print_period=1000)
    after = mean_loss()
    assert after < 0.5 * before, (before, after)
    params = _params(main, scope)
    exe.infer_from_dataset(main, test, scope, thread=2, fetch_list=[loss], print_period=1000)
    for name, value in _params(main, scope).items():
        np.testing.assert_array_equal(value, params[name], err_msg=name)


def test_fetch_handler_sees_the_parameters(tmp_path, model):
    main, startup, use_var, loss = model
    ds = _dataset("InMemoryDataset", use_var, [_data(tmp_path, "part-0", 200, 1)])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    w = main.global_block().all_parameters()[0]
    seen = []

    class Handler(fluid.executor.FetchHandler):
        def handler(self, res_dict):
            seen.append(res_dict)

    exe.train_from_dataset(main, ds, scope, thread=1, fetch_handler=Handler(var_dict={"w": w, "none": "nothing"},
                                                                            period_secs=0.001))
    assert seen and seen[-1]["none"] is None
    np.testing.assert_array_equal(seen[-1]["w"], np.array(scope.find_var(w.name).get_tensor()))


def test_arguments_checked(tmp_path, model):
    main, startup, use_var, loss = model
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(RuntimeError, match="dataset is needed"):
        exe.train_from_dataset(main, None)
    ds = _dataset("InMemoryDataset", use_var, [_data(tmp_path, "part-0", 20, 1)])
    with pytest.raises(ValueError, match="2 fetch_info label"):
        exe.train_from_dataset(main, ds, fetch_list=[loss], fetch_info=["a", "b"])


def test_malformed_line_and_dying_generator_reach_train_from_dataset(tmp_path, model):
    main, startup, use_var, loss = model
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.core.Scope()
    exe.run(startup, scope=scope)
    bad = tmp_path / "bad"
    bad.write_text("1 5 4 0.1 0.2 0.3 0.4 1 1\n1 7 4 0.1 0.2 0.3\n")
    ds = _dataset("QueueDataset", use_var, [str(bad)], threads=2)
    with pytest.raises(Exception, match=re.escape(f"{bad}:2:")):
        exe.train_from_dataset(main, ds, scope)
    ds = _dataset("QueueDataset", use_var, [_data(tmp_path, "good", 100, 2)], threads=2)
    ds.set_pipe_command("head -n 20; echo 'generator: out of data' >&2; exit 4")
    with pytest.raises(Exception, match="exited with status 4(.|\n)*generator: out of data"):
        exe.train_from_dataset(main, ds, scope)


@pytest.mark.parametrize("mode", ["sync", "async", "geo"])
def test_parameter_server_trains_from_a_queue_dataset_on_two_threads(tmp_path, mode):
    """1 server + 1 trainer: lod_ps_train.py's model trained by
    train_from_dataset on two threads from MultiSlot files; the test loss
    falls and the fetch lines are printed."""
    text = run_ps_job(tmp_path, "lod_ps_train.py", mode, "dataset")[0]
    passes = [float(x) for x in re.findall(r"^PASS \d+ ([-\d.e]+)$", text, re.M)]
    assert len(passes) == 4, text[-3000:]
    assert passes[-1] < 0.8 * passes[0], passes
    assert re.search(r"^batch: \d+, loss: ", text, re.M), text[-3000:]


def test_global_shuffle_across_two_trainers(tmp_path):
    """1 server + 2 trainers: each loads its own samples, global_shuffle
    exchanges them (every record on exactly one trainer, some moved), the
    sizes with fleet are the sums, and both train from what they hold."""
    logs = run_ps_job(tmp_path, "lod_ps_train.py", "async", "shuffle", workers=2)
    got = [json.loads(re.search(r"^SHUFFLED (.*)$", text, re.M).group(1)) for text in logs]
    assert [g["loaded"] for g in got] == [800, 800]
    assert sum(g["held"] for g in got) == 1600 and all(g["total"] == 1600 for g in got)
    assert all(0 < g["held"] < 1600 for g in got), [g["held"] for g in got]
    # slot 1 ids of both workers' samples (seeds 7 and 8), as the script draws them
    rng_ids = []
    for seed in (7, 8):
        rng = np.random.RandomState(seed)
        for _ in range(800):
            rng.randint(0, 1000, rng.randint(0, 5))
            rng_ids.extend(rng.randint(0, 1000, rng.randint(1, 4)).tolist())
    assert sorted(got[0]["ids"] + got[1]["ids"]) == sorted(rng_ids)
    for text in logs:
        passes = [float(x) for x in re.findall(r"^PASS \d+ ([-\d.e]+)$", text, re.M)]
        assert len(passes) == 4 and passes[-1] < passes[0], passes
