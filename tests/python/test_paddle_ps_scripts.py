"""scripts/paddle_ps_scripts.py runs a fleet PS script as Paddle's
TestFleetBase does (one server, one trainer, its command line and
environment, under the Paddle compatibility switch) and reports one JSON
line per run. Driven here with Flotilla's own small CTR script
(ps_script_ctr.py), not Paddle's. Also the sparse_embedding entry
attributes Paddle's PS scripts pass."""

import json
import os
import subprocess
import sys

from conftest import PYTHON_DIR, SOURCE_DIR

RUNNER = os.path.join(SOURCE_DIR, "scripts", "paddle_ps_scripts.py")
SCRIPTS_DIR = os.path.dirname(os.path.abspath(__file__))


def run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """The runner over tests/python with its logs in tmp_path."""
    return subprocess.run([sys.executable, RUNNER, "--scripts-dir", SCRIPTS_DIR, "--package-dir", PYTHON_DIR,
                           "--log-dir", str(tmp_path), "--timeout", "120", *args],
                          capture_output=True, text=True, timeout=300)


def test_a_ps_script_trains_in_async_mode_through_the_runner(tmp_path):
    done = run(tmp_path, "--scripts", "ps_script_ctr.py", "--modes", "async", "--readers", "pyreader")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, done.stdout + done.stderr
    result = lines[0]
    assert (result["script"], result["mode"], result["reader"]) == ("ps_script_ctr.py", "async", "pyreader")
    assert result["result"] == "pass", result
    assert done.returncode == 0
    assert result["loss_lines"] == 50  # 800 samples in batches of 16
    with open(tmp_path / "ps_script_ctr_async_pyreader_tr0_stdout.log") as f:
        losses = [float(line.split()[-1]) for line in f if line.startswith("TRAIN loss:")]
    assert len(losses) == 50
    assert sum(losses[-10:]) < sum(losses[:10]), losses  # it learns


def test_a_failing_script_is_reported_with_its_error(tmp_path):
    script = tmp_path / "broken_ps_script.py"
    script.write_text("import paddle\nraise RuntimeError('broken on purpose')\n")
    done = subprocess.run([sys.executable, RUNNER, "--scripts-dir", str(tmp_path), "--package-dir", PYTHON_DIR,
                           "--log-dir", str(tmp_path / "logs"), "--scripts", script.name, "--modes", "sync",
                           "--readers", "pyreader"], capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout.splitlines()[0])
    assert done.returncode == 1
    assert result["result"] == "fail" and result["trainer_rc"] == 1
    assert result["error"] == "RuntimeError: broken on purpose"


def test_a_ps_script_trains_from_a_dataset_in_geo_mode(tmp_path):
    # train_from_dataset over a QueueDataset whose pipe command runs a
    # MultiSlotDataGenerator over scripts/make_ctr_data.py's files.
    done = run(tmp_path, "--scripts", "ps_script_ctr.py", "--modes", "geo", "--readers", "dataset")
    result = json.loads(done.stdout.splitlines()[0])
    assert result["result"] == "pass", result
    assert result["loss_lines"] > 0 and 0 < result["last_loss"] < 1, result


def test_sparse_embedding_takes_a_show_click_entry_and_refuses_admission_entries(programs):
    import pytest

    from flotilla import fluid
    from flotilla.distributed import CountFilterEntry, ProbabilityEntry, ShowClickEntry

    ids = fluid.layers.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1, append_batch_size=False)
    entry = ShowClickEntry("show", "click")
    assert entry._to_attr() == "show_click_entry:show:click"
    emb = fluid.contrib.layers.sparse_embedding(input=ids, size=[10, 4], entry=entry,
                                                param_attr=fluid.ParamAttr(name="table"))
    assert tuple(emb.shape)[-1] == 4
    for refused in (ProbabilityEntry(0.5), CountFilterEntry(3)):
        with pytest.raises(NotImplementedError, match=type(refused).__name__):
            fluid.contrib.layers.sparse_embedding(input=ids, size=[10, 4], entry=refused)
    with pytest.raises(ValueError):
        ProbabilityEntry(1.5)
