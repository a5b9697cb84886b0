"""A ``flotilla launch`` started by the fault driver, and what it printed.

The launcher runs in a session of its own with ``FLOTILLA_FAULT_TAG`` in its
environment (fault_proc.py finds its processes by it), its stdout and stderr
in files under the fault's directory. ``prefix`` runs it through another
command (``ip netns exec NS``, ``nsenter -t PID -m``).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from typing import Dict, List, Optional, Sequence

import fault_proc

BUILD = os.environ.get("FLOTILLA_BUILD_DIR",
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../build"))


def bin_path(name: str) -> str:
    """build/bin/<name>."""
    return os.path.join(BUILD, "bin", name)


def read_text(path: str) -> str:
    """The file's text, or "" when it does not exist (yet)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class Launcher:
    """One launcher process with its output files."""

    def __init__(self, argv: Sequence[str], out_dir: str, tag: str,
                 prefix: Sequence[str] = (), env: Optional[Dict[str, str]] = None) -> None:
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        self.stdout_path = os.path.join(out_dir, "launcher.out")
        self.stderr_path = os.path.join(out_dir, "launcher.err")
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env[fault_proc.TAG_VARIABLE] = tag
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(list(prefix) + list(argv), stdout=out, stderr=err,
                                         env=full_env, start_new_session=True)
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stdout(self) -> str:
        return read_text(self.stdout_path)

    def stderr(self) -> str:
        return read_text(self.stderr_path)

    def exited(self) -> Optional[int]:
        """The exit code (128 + signal when killed), or None while running."""
        code = self.proc.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code

    def wait(self, timeout: float) -> Optional[int]:
        """The exit code once it exited within ``timeout`` s, else None."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.exited()

    def signal(self, sig: int) -> None:
        """Sends ``sig`` to the launcher process itself."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILLs and reaps it (cleanup)."""
        self.signal(signal.SIGKILL)
        self.proc.wait()


def wait_for(predicate, timeout: float, interval: float = 0.02) -> bool:
    """Polls ``predicate`` until true or ``timeout`` s passed."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def process_pids(log_dir: str) -> Dict[str, int]:
    """Label ("rank 0", "server 1") → pid, from the launcher's job_status.json."""
    try:
        status = json.loads(read_text(os.path.join(log_dir, "job_status.json")))
    except ValueError:
        return {}
    return {p["label"]: int(p["pid"]) for p in status.get("processes", []) if p.get("pid")}


_STEP = re.compile(r"\bstep[ =]?(\d+)\b")


def last_step(text: str) -> int:
    """The highest "step N" a training log printed (-1 when none)."""
    steps = [int(m.group(1)) for m in _STEP.finditer(text)]
    return max(steps, default=-1)


def worker_logs(log_dir: str) -> List[str]:
    """Every workerlog.* in ``log_dir``."""
    try:
        names = sorted(n for n in os.listdir(log_dir) if n.startswith("workerlog."))
    except OSError:
        return []
    return [os.path.join(log_dir, n) for n in names]
