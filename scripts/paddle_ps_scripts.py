#!/usr/bin/python3
"""Runs Paddle-style fleet PS test scripts on Flotilla, one parameter server
and one trainer per run, started the way Paddle's ``TestFleetBase``
(test_dist_fleet_base.py) starts them:

    <python> <script> --role pserver|trainer --endpoints <ps> --trainer_endpoints <tr>
        --current_id 0 --trainers 1 --mode <mode> --geo_sgd_need_push_nums 5
        --reader <reader> --gloo_path <tmpdir> --test 0

with TestFleetBase's environment (PATH, PYTHONPATH, LD_LIBRARY_PATH,
FLAGS_rpc_deadline, http_proxy, GRAD_CLIP, WITH_DISTRIBUTE, CPU_NUM,
LOG_DIRNAME, LOG_PREFIX) plus Flotilla's Paddle compatibility switch for
children: the switch's child-path shim first on PYTHONPATH and
FLOTILLA_PADDLE_COMPAT=1, so ``import paddle`` in the script and in its
Dataset pipe command (``python reader.py``) serves Flotilla's. The word
``python`` in pipe commands names the interpreter running the job, as in
Paddle's CI image: a directory holding a ``python`` link to it comes first on
the children's PATH. Server and trainer share a job secret file (0600), as
``flotilla launch`` gives its children.

The scripts run from their own directory (Paddle's harness runs from the
unittests folder, and pipe commands such as ``python ctr_dataset_reader.py``
are relative to it). The trainer gets ``--timeout`` seconds (TestFleetBase:
60); the server is ended once the trainer is done. Every process started here
is ended by its process-group id, which is its pid.

Prints one JSON line per (script, mode, reader):
    {"script", "mode", "reader", "result": "pass"|"fail", "trainer_rc",
     "seconds", "loss_lines", "last_loss", "error"}
A run passes, as in TestFleetBase, when the trainer exits 0; ``loss_lines``
counts the trainer's printed loss lines so a run that trains nothing shows.

Usage:
    scripts/paddle_ps_scripts.py --scripts-dir DIR [--scripts a.py b.py]
        [--modes sync async geo] [--readers pyreader dataset]
        [--timeout 60] [--log-dir DIR] [--package-dir build/python]
Exit status: 0 when every run passed, 1 otherwise.
"""

import argparse
import json
import math
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

DEFAULT_SCRIPTS = ("dist_fleet_ctr.py", "dist_fleet_simnet_bow.py", "dist_fleet_sparse_embedding_ctr.py")
DEFAULT_MODES = ("sync", "async", "geo")
DEFAULT_READERS = ("pyreader", "dataset")
GEO_SGD_NEED_PUSH_NUMS = 5  # TestFleetBase.setUp
LOSS_LINE = re.compile(r"(?:loss|cost)\S*\s*[:=]?\s*\[?\s*([-+0-9.eEnaif]+)", re.IGNORECASE)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class RunResult:
    """The outcome of one (script, mode, reader) run."""
    script: str
    mode: str
    reader: str
    result: str
    trainer_rc: Optional[int]
    seconds: float
    loss_lines: int
    last_loss: Optional[float]
    error: str

    def to_json(self) -> str:
        """One JSON line, keys in a fixed order."""
        return json.dumps(self.__dict__)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_link_dir(interpreter: str) -> str:
    """A temporary directory holding ``python`` and ``python3`` links to
    ``interpreter``, to put first on the children's PATH."""
    directory = tempfile.mkdtemp(prefix="flotilla_ps_python_")
    for name in ("python", "python3"):
        os.symlink(interpreter, os.path.join(directory, name))
    return directory


def child_env(package_dir: str, bin_dir: str, log_dir: str, prefix: str,
              extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment TestFleetBase.check_with_place and _run_cluster give
    their children, with Flotilla's package and compat shim on PYTHONPATH."""
    child_path = os.path.join(package_dir, "flotilla", "paddle_compat", "child_path")
    python_path = [child_path, package_dir] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {
        "GRAD_CLIP": "0",
        "WITH_DISTRIBUTE": "ON",
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(python_path),
        "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", ""),
        "FLAGS_rpc_deadline": "5000",
        "http_proxy": "",
        "CPU_NUM": "2",
        "LOG_DIRNAME": log_dir,
        "LOG_PREFIX": prefix,
        "FLOTILLA_PADDLE_COMPAT": "1",
        # The scripts save models to tempfile.mkdtemp() folders: the server
        # may write its tables under the temp directory.
        "FLOTILLA_PS_MODEL_DIR": tempfile.gettempdir(),
        "HOME": os.environ.get("HOME", "/root"),
    }
    env.update(extra or {})
    return env


def role_command(interpreter: str, script: str, role: str, ps_endpoint: str, tr_endpoint: str,
                 mode: str, reader: str, gloo_path: str) -> List[str]:
    """The command line TestFleetBase._run_cluster builds for one role."""
    return [interpreter, script, "--role", role, "--endpoints", ps_endpoint,
            "--trainer_endpoints", tr_endpoint, "--current_id", "0", "--trainers", "1",
            "--mode", mode, "--geo_sgd_need_push_nums", str(GEO_SGD_NEED_PUSH_NUMS),
            "--reader", reader, "--gloo_path", gloo_path, "--test", "0"]


def end_process(proc: "subprocess.Popen[bytes]") -> None:
    """Ends ``proc`` and everything in its process group (it leads one: it
    was started with ``start_new_session``), then reaps it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # pipe commands left in the group
    except ProcessLookupError:
        pass
    proc.wait()


def scan_losses(text: str) -> List[float]:
    """The loss values a trainer printed (``loss: x``, ``cost: [x]``...)."""
    values = []
    for match in LOSS_LINE.finditer(text):
        try:
            values.append(float(match.group(1)))
        except ValueError:
            continue
    return values


def last_error(text: str) -> str:
    """The last line of a Python traceback in ``text``, or its last line."""
    lines = [line for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b", line):
            return line.strip()[:400]
    return lines[-1].strip()[:400] if lines else ""


def run_one(scripts_dir: str, script: str, mode: str, reader: str, package_dir: str, bin_dir: str,
            log_dir: str, timeout: float, extra_env: Optional[Dict[str, str]] = None) -> RunResult:
    """Starts one server and one trainer for ``script`` and waits for the
    trainer, as TestFleetBase._run_cluster does."""
    interpreter = sys.executable
    ps_endpoint = f"127.0.0.1:{free_port()}"
    tr_endpoint = f"127.0.0.1:{free_port()}"
    gloo_path = tempfile.mkdtemp(prefix="flotilla_ps_gloo_")
    prefix = f"{os.path.splitext(script)[0]}_{mode}_{reader}"
    env = child_env(package_dir, bin_dir, log_dir, prefix, extra_env)
    logs = {role: (os.path.join(log_dir, f"{prefix}_{role}_stdout.log"),
                   os.path.join(log_dir, f"{prefix}_{role}_stderr.log")) for role in ("ps0", "tr0")}
    procs: Dict[str, "subprocess.Popen[bytes]"] = {}
    start = time.monotonic()
    trainer_rc: Optional[int] = None
    timed_out = False
    try:
        for role, name in (("pserver", "ps0"), ("trainer", "tr0")):
            out_path, err_path = logs[name]
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                procs[name] = subprocess.Popen(
                    role_command(interpreter, script, role, ps_endpoint, tr_endpoint, mode, reader, gloo_path),
                    cwd=scripts_dir, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                    start_new_session=True)
        try:
            trainer_rc = procs["tr0"].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        for proc in procs.values():
            end_process(proc)
        for name in os.listdir(gloo_path):
            os.remove(os.path.join(gloo_path, name))
        os.rmdir(gloo_path)
    seconds = round(time.monotonic() - start, 1)
    with open(logs["tr0"][0], errors="replace") as f:
        out_text = f.read()
    with open(logs["tr0"][1], errors="replace") as f:
        err_text = f.read()
    losses = scan_losses(out_text + "\n" + err_text)
    finite = [v for v in losses if math.isfinite(v)]
    error = ""
    if timed_out:
        error = f"trainer still running after {timeout:g}s; last: {last_error(err_text)}"
    elif trainer_rc != 0:
        error = last_error(err_text) or last_error(out_text)
    return RunResult(script=script, mode=mode, reader=reader,
                     result="pass" if trainer_rc == 0 else "fail", trainer_rc=trainer_rc,
                     seconds=seconds, loss_lines=len(losses),
                     last_loss=finite[-1] if finite else None, error=error)


def main(argv: Sequence[str]) -> int:
    """Runs every (script, mode, reader) asked for; prints a JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scripts-dir", required=True, help="folder holding the scripts and test_dist_fleet_base.py")
    parser.add_argument("--scripts", nargs="+", default=list(DEFAULT_SCRIPTS))
    parser.add_argument("--modes", nargs="+", default=list(DEFAULT_MODES), choices=DEFAULT_MODES)
    parser.add_argument("--readers", nargs="+", default=list(DEFAULT_READERS), choices=DEFAULT_READERS)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a trainer may run (TestFleetBase: 60)")
    parser.add_argument("--log-dir", default=None, help="where the children's stdout/stderr go (default: a temp dir)")
    parser.add_argument("--package-dir", default=os.path.join(REPO_ROOT, "build", "python"),
                        help="the folder holding Flotilla's Python package")
    parser.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE", help="more environment for the children")
    args = parser.parse_args(argv)
    scripts_dir = os.path.abspath(args.scripts_dir)
    log_dir = os.path.abspath(args.log_dir or tempfile.mkdtemp(prefix="flotilla_ps_logs_"))
    os.makedirs(log_dir, exist_ok=True)
    extra = dict(item.split("=", 1) for item in args.env)
    bin_dir = python_link_dir(sys.executable)
    secret_path = os.path.join(bin_dir, "job_secret")
    with open(os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(secrets.token_hex(32))
    extra.setdefault("FLOTILLA_JOB_SECRET_FILE", secret_path)
    failed = 0
    try:
        for script in args.scripts:
            for mode in args.modes:
                for reader in args.readers:
                    result = run_one(scripts_dir, script, mode, reader, os.path.abspath(args.package_dir),
                                     bin_dir, log_dir, args.timeout, extra)
                    failed += result.result != "pass"
                    print(result.to_json(), flush=True)
    finally:
        for name in os.listdir(bin_dir):
            os.remove(os.path.join(bin_dir, name))
        os.rmdir(bin_dir)
    print(f"logs: {log_dir}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
