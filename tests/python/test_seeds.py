"""The seeds' Python scripts, as written, on Flotilla: under the Paddle
compatibility switch (``python3 -m flotilla.paddle_compat``), under
``flotilla launch --paddle_compat`` and through the seeds' own launch
commands (``-m paddle.distributed.launch``, ``-m
paddle.distributed.launch_ps``), each job real processes on loopback."""

import math
import os
import re
import subprocess
import sys
from typing import Dict, List

import pytest

from conftest import build_path, child_env

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
LAUNCHER = build_path("bin", "flotilla")


def run(args: List[str], cwd: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """Runs a command with the in-tree package importable; fails the test
    with its output when it fails."""
    env = child_env({"FLOTILLA_BIN": LAUNCHER, "FLOTILLA_PYTHON": sys.executable})
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def compat(script: str, *args: str) -> List[str]:
    return [sys.executable, "-m", "flotilla.paddle_compat", os.path.join(SEEDS, script), *args]


def costs(text: str, pattern: str) -> Dict[int, float]:
    """{step: cost} of the lines the seed's script prints."""
    found = {int(m.group(1)): float(m.group(2)) for m in re.finditer(pattern, text)}
    assert found, f"no line matches {pattern!r} in:\n{text[-2000:]}"
    return found


def log(tmp: str, name: str, log_dir: str = "log") -> str:
    with open(os.path.join(tmp, log_dir, name)) as f:
        return f.read()


STEP = r"step(\d+) cost=([-\d.e]+|nan|inf)"
WORKER_STEP = r"worker_index: \d+, step(\d+) cost = ([-\d.e]+|nan|inf)"


def check_binary_costs(found: Dict[int, float], steps: int) -> None:
    """Cross-entropy of 2 classes on random labels: every step printed, every
    cost finite, and the last ones averaging ln 2 (what can be learnt)."""
    assert sorted(found) == list(range(steps)), sorted(found)[:5]
    values = [found[s] for s in sorted(found)]
    assert all(math.isfinite(c) for c in values), values
    tail = values[-max(10, steps // 5):]
    assert abs(sum(tail) / len(tail) - math.log(2)) < 0.05, tail


def test_seed001_train_with_fleet_alone_saves_into_the_working_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = run(compat("seed001_train_with_fleet.py"), str(tmp_path))
    check_binary_costs(costs(proc.stdout, STEP), 100)
    assert "CUDAPlace(0) runs on the CPU" in proc.stderr
    # fleet.save_persistables(exe, "./") adds its files and keeps the others.
    assert (tmp_path / "MANIFEST").exists() and (tmp_path / "fc_0.w_0.tensor").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".flotilla-save-")]


def test_seed001_train_with_fleet_two_ranks_under_flotilla_launch(tmp_path):
    run([LAUNCHER, "launch", "--nproc_per_node", "2", "--paddle_compat",
         os.path.join(SEEDS, "seed001_train_with_fleet.py")], str(tmp_path))
    for rank in (0, 1):
        check_binary_costs(costs(log(str(tmp_path), f"workerlog.{rank}"), STEP), 100)
    assert (tmp_path / "MANIFEST").exists()


def test_seed001_tuned_through_paddle_distributed_launch(tmp_path):
    run([sys.executable, "-m", "flotilla.paddle_compat", "-m", "paddle.distributed.launch", "--selected_gpus=0,1",
         "--log_dir", "mylog", os.path.join(SEEDS, "seed001_tuned.py")], str(tmp_path))
    for rank in (0, 1):
        found = costs(log(str(tmp_path), f"workerlog.{rank}", "mylog"), STEP)
        check_binary_costs({step // 2: cost for step, cost in found.items()}, 50)  # fetch_frequency = 2
        assert sorted(found) == list(range(0, 100, 2))


def test_seed003_local_trainer(tmp_path):
    proc = run(compat("local_trainer.py"), str(tmp_path))
    check_binary_costs(costs(proc.stdout, STEP), 1001)


def test_seed003_parameter_server_two_servers_two_workers_through_launch_ps(tmp_path):
    proc = run([sys.executable, "-m", "flotilla.paddle_compat", "-m", "paddle.distributed.launch_ps",
                "--worker_num", "2", "--server_num", "2", os.path.join(SEEDS, "distributed_train.py")],
               str(tmp_path))
    for rank in (0, 1):
        check_binary_costs(costs(log(str(tmp_path), f"workerlog.{rank}"), WORKER_STEP), 1001)
    assert "all 2 trainers finished" in proc.stdout + proc.stderr


def test_seed003_collective_under_flotilla_launch(tmp_path):
    run([LAUNCHER, "launch", "--nproc_per_node", "2", "--paddle_compat",
         os.path.join(SEEDS, "collective_train.py")], str(tmp_path))
    for rank in (0, 1):
        check_binary_costs(costs(log(str(tmp_path), f"workerlog.{rank}"), WORKER_STEP), 1001)


def test_seed000_transpiler_two_pservers_two_trainers_started_by_hand(tmp_path):
    """Seed 000's four commands, one process each, as the seed starts them:
    the pservers on 127.0.0.1 and 127.0.0.2 (both loopback) at one port."""
    port = str(20000 + os.getpid() % 20000)
    common = {"PADDLE_PSERVER_IPS": "127.0.0.1,127.0.0.2", "PADDLE_TRAINERS": "2", "PADDLE_PSERVER_PORT": port}
    roles = [{"PADDLE_TRAINING_ROLE": "PSERVER", "PADDLE_CURRENT_IP": ip} for ip in ("127.0.0.1", "127.0.0.2")]
    roles += [{"PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": str(i)} for i in (0, 1)]
    procs = []
    try:
        for i, role in enumerate(roles):
            out = open(tmp_path / f"p{i}.log", "w")
            procs.append(subprocess.Popen(compat("seed000_dist_train.py"), cwd=str(tmp_path), stdout=out,
                                          stderr=subprocess.STDOUT, env=child_env({**common, **role})))
        for p in procs:
            p.wait(timeout=180)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    logs = [(tmp_path / f"p{i}.log").read_text() for i in range(4)]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], "\n".join(l[-1500:] for l in logs)
    for trainer in logs[2:]:
        found = [(int(e), float(v)) for e, v in re.findall(r"Epoch: (\d+), Batch: \d+, loss: ([-\d.e]+)", trainer)]
        assert len(found) == 30 * 5, len(found)
        first = [v for e, v in found if e == 0]
        last = [v for e, v in found if e == 29]
        # Linear regression on the housing prices: from hundreds to tens.
        assert sum(last) / len(last) < sum(first) / len(first) / 5, (first, last)
    for server in logs[:2]:
        assert "every trainer finished" in server


@pytest.mark.parametrize("mode,launcher", [("sync", "paddle"), ("async", "paddle"), ("geo", "paddle"),
                                           ("sync", "flotilla")])
def test_seed004_wide_and_deep_one_server_two_workers(tmp_path, mode, launcher):
    """Seed 004's Paddle 2.x script: DataLoader without a feed until
    paddle.core.EOFException, fleet.init_server/run_server, init_worker/
    stop_worker, under the seed's launch command and under flotilla launch."""
    script = [os.path.join(SEEDS, "wide_and_deep", "train.py"), "--mode", mode]
    if launcher == "paddle":
        command = [sys.executable, "-m", "flotilla.paddle_compat", "-m", "paddle.distributed.launch"]
    else:
        command = [LAUNCHER, "launch", "--paddle_compat"]
    proc = run(command + ["--server_num=1", "--worker_num=2"] + script, str(tmp_path))
    assert "all 2 trainers finished" in proc.stdout + proc.stderr
    for rank in (0, 1):
        lines = re.findall(r"TRAIN ---> pass: 0 loss: ([-\d.e]+) auc: ([-\d.e]+)", log(str(tmp_path),
                                                                                     f"workerlog.{rank}"))
        assert len(lines) == 800 // 4, len(lines)  # every batch of the reader, then EOFException
        for loss, auc in lines:
            assert math.isfinite(float(loss)) and 0.0 <= float(auc) <= 1.0, (loss, auc)


def test_seed004_model_in_geo_mode_with_the_next_batch_prefetched(tmp_path):
    """fleet.prefetch_sparse (not in the seed: Flotilla's own) with seed
    004's model in a GEO job of 1 server and 2 workers: training converges
    with each next batch's 52 tables' rows pulled while the current batch
    trains, and a feed without the lookups' ids is refused naming one."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "geo_prefetch_train.py")
    run([LAUNCHER, "launch", "--paddle_compat", "--server_num=1", "--worker_num=2", script], str(tmp_path))
    for rank in (0, 1):
        text = log(str(tmp_path), f"workerlog.{rank}")
        losses = [float(m) for m in re.findall(r"^STEP \d+ ([-\d.e]+)$", text, re.M)]
        assert len(losses) == 100, text[-2000:]  # 800 samples in batches of 8
        assert all(math.isfinite(x) for x in losses), losses
        assert sum(losses[-20:]) < sum(losses[:20]), losses
        assert re.search(r"^REFUSED .*'C\d+'", text, re.M), text[-2000:]
