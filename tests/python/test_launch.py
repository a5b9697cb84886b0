"""`flotilla launch train.py` and `python3 -m flotilla.distributed.launch`:
Python training scripts as real multi-process jobs on loopback, their
results compared with one process's (examples/python/dist_fit.py), the
interpreter choice and the errors for bad commands."""

import json
import os
import socket
import stat
import subprocess
import sys
from typing import List

import numpy as np
import pytest

from conftest import SOURCE_DIR, build_path, child_env

LAUNCHER = build_path("bin", "flotilla")
DIST_FIT = os.path.join(SOURCE_DIR, "examples", "python", "dist_fit.py")


def run(args: List[str], cwd: str, check: bool = True, env=None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Runs a command with the in-tree package importable (``env`` added)."""
    proc = subprocess.run(args, cwd=cwd, env=child_env(env), capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"{args} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def losses(path: str, ranks: int) -> np.ndarray:
    """[step, row] losses of a job: every trainer's rows side by side."""
    if ranks == 1:
        with open(path) as f:
            return np.array(json.load(f)["losses"])
    parts = []
    for rank in range(ranks):
        with open(f"{path}.rank{rank}") as f:
            parts.append(np.array(json.load(f)["losses"]))
    return np.concatenate(parts, axis=1)


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> np.ndarray:
    """dist_fit.py's per-row losses in one process, no launcher."""
    tmp = tmp_path_factory.mktemp("single")
    run([sys.executable, DIST_FIT, "--out", "single.json"], str(tmp))
    return losses(str(tmp / "single.json"), 1)


def test_collective_two_ranks_match_one_process(tmp_path, single):
    run([LAUNCHER, "launch", "--nproc_per_node", "2", DIST_FIT, "--out", "dp.json"], str(tmp_path))
    np.testing.assert_allclose(losses(str(tmp_path / "dp.json"), 2), single, rtol=1e-4, atol=1e-5)


def test_parameter_server_sync_two_servers_two_workers_match_one_process(tmp_path, single):
    run([LAUNCHER, "launch", "--server_num", "2", "--worker_num", "2", DIST_FIT, "--ps", "sync",
         "--out", "ps.json"], str(tmp_path))
    np.testing.assert_allclose(losses(str(tmp_path / "ps.json"), 2), single, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["async", "geo"])
def test_parameter_server_async_and_geo_train(tmp_path, single, mode):
    run([sys.executable, "-m", "flotilla.distributed.launch_ps", "--server_num", "1", "--worker_num", "2",
         DIST_FIT, "--ps", mode, "--steps", "10", "--out", "ps.json"], str(tmp_path),
        env={"FLOTILLA_BIN": LAUNCHER})
    got = losses(str(tmp_path / "ps.json"), 2)
    assert got.shape == single.shape and np.isfinite(got).all()
    # The first step of every trainer sees the initial parameters.
    np.testing.assert_allclose(got[0], single[0], rtol=1e-4, atol=1e-5)


def test_python_module_launcher_takes_the_same_flags(tmp_path, single):
    run([sys.executable, "-m", "flotilla.distributed.launch", "--nproc_per_node", "2", "--log_dir", "mylog",
         DIST_FIT, "--out", "dp.json"], str(tmp_path), env={"FLOTILLA_BIN": LAUNCHER})
    np.testing.assert_allclose(losses(str(tmp_path / "dp.json"), 2), single, rtol=1e-4, atol=1e-5)
    assert (tmp_path / "mylog" / "workerlog.1").exists()


def test_python_option_picks_the_interpreter(tmp_path):
    marker = tmp_path / "ran"
    wrapper = tmp_path / "py.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {marker}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    script = tmp_path / "hello.py"
    script.write_text("import flotilla, os\nprint('hello from', os.environ['PADDLE_TRAINER_ID'], flotilla.__name__)\n")
    proc = run([LAUNCHER, "launch", "--nproc_per_node", "2", "--python", str(wrapper), str(script)], str(tmp_path))
    assert "hello from 0 flotilla" in proc.stdout
    assert marker.read_text().count("hello.py") == 2


def test_bad_commands_are_refused_with_what_was_expected(tmp_path):
    proc = run([LAUNCHER, "launch", str(tmp_path / "missing.py")], str(tmp_path), check=False)
    assert proc.returncode != 0 and "missing.py' does not exist" in proc.stderr
    proc = run([LAUNCHER, "launch", "--paddle_compat", "/bin/true"], str(tmp_path), check=False)
    assert proc.returncode != 0 and "--paddle_compat runs a Python script" in proc.stderr


def test_fleet_util_all_reduce_and_all_gather_between_ranks(tmp_path):
    script = tmp_path / "util.py"
    script.write_text(
        "import numpy as np\n"
        "from flotilla.distributed import fleet\n"
        "fleet.init(is_collective=True)\n"
        "r = fleet.worker_index()\n"
        "s = fleet.util.all_reduce(np.array([1.0, r], np.float64), mode='sum')\n"
        "m = fleet.util.all_reduce([r * 3], mode='max')\n"
        "g = fleet.util.all_gather(r + 10)\n"
        "fleet.util.barrier()\n"
        "print('util', r, s.tolist(), m.tolist(), g)\n")
    run([LAUNCHER, "launch", "--nproc_per_node", "3", str(script)], str(tmp_path))
    for rank in range(3):
        with open(tmp_path / "log" / f"workerlog.{rank}") as f:
            assert f"util {rank} [3.0, 3.0] [6] [10, 11, 12]" in f.read()


def test_installed_package_and_launcher_run_a_job(tmp_path):
    """`make install` (cmake --install, staged with DESTDIR): the launcher
    and the package run a 2-rank Python job with no build tree involved."""
    dest = tmp_path / "dest"
    subprocess.run(["cmake", "--install", build_path(), "--prefix", "/usr/local"], check=True, capture_output=True,
                   env=dict(os.environ, DESTDIR=str(dest)), timeout=120)
    site = dest / "usr" / "local" / "lib" / "python3" / "dist-packages"
    launcher = dest / "usr" / "local" / "bin" / "flotilla"
    assert (site / "flotilla" / "__init__.py").exists() and launcher.exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run([str(launcher), "launch", "--nproc_per_node", "2", DIST_FIT, "--out", "dp.json",
                           "--steps", "2"], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "log" / "workerlog.1") as f:
        assert "rank 1 step 1" in f.read()
    # The workers imported the installed package, not a build tree's.
    script = tmp_path / "where.py"
    script.write_text("import flotilla\nprint('package at', flotilla.__file__)\n")
    proc = subprocess.run([str(launcher), "launch", str(script)], cwd=str(tmp_path), env=env, capture_output=True,
                          text=True, timeout=60)
    assert f"package at {site}/flotilla/__init__.py" in proc.stdout, proc.stdout + proc.stderr
    # Paddle's fleetrun command is installed beside the launcher and finds it on PATH.
    fleetrun = dest / "usr" / "local" / "bin" / "fleetrun"
    env["PATH"] = f"{launcher.parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([str(fleetrun), "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--paddle_compat" in proc.stdout, proc.stdout + proc.stderr


def test_collective_job_with_only_paddle_launcher_variables(tmp_path, single):
    """Paddle's own launcher sets PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM,
    PADDLE_TRAINER_ENDPOINTS and PADDLE_CURRENT_ENDPOINT only: the trainers
    meet at the first endpoint, where trainer 0 hosts the store."""
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    endpoints = [f"127.0.0.1:{p}" for p in ports]
    procs = []
    try:
        for rank in range(2):
            env = dict(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM="2",
                       PADDLE_TRAINER_ENDPOINTS=",".join(endpoints), PADDLE_CURRENT_ENDPOINT=endpoints[rank])
            procs.append(subprocess.Popen([sys.executable, DIST_FIT, "--out", "dp.json"], cwd=str(tmp_path),
                                          env=child_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
        outputs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-2000:] for o in outputs)
    np.testing.assert_allclose(losses(str(tmp_path / "dp.json"), 2), single, rtol=1e-4, atol=1e-5)
