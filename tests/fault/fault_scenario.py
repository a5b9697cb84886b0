"""The frame every scenario shares: start a job, inject one fault, check how
it ended.

A fault ends as required when
  * the launcher (every launcher of the job) exits within the scenario's
    bound — no hang beyond the configured timeouts;
  * its ABORT output names the culprit (role, rank or id, pid/endpoint);
  * no process of the job is left (found by its FLOTILLA_FAULT_TAG), no
    port the job listened on is still listened on, no /dev/shm segment of
    the job is left;
  * the newest checkpoint loads: the next run of the job resumes from
    exactly that step (the scenario's last fault is checked by one more run
    stopped by SIGTERM once it resumed).
"""
from __future__ import annotations

import os
import random
import re
import secrets
import shutil
import time
import uuid
from abc import ABC, abstractmethod
from typing import Callable, List, Optional, Sequence, Set, Tuple

import fault_proc
from fault_job import Launcher, wait_for
from fault_result import Fault


def new_tag() -> str:
    """A job id/tag unique to one run: short and of [a-z0-9] (shm names)."""
    return "flt" + uuid.uuid4().hex[:10]


def make_secret_file(directory: str) -> str:
    """A job secret shared by the launchers of one job (docs/security.md),
    in ``directory``/job.secret, mode 0600."""
    path = os.path.join(directory, "job.secret")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


def checkpoint_steps(ckpt_dir: str) -> List[int]:
    """The complete checkpoints (step-N) in ``ckpt_dir``, oldest first."""
    try:
        names = os.listdir(ckpt_dir)
    except OSError:
        return []
    return sorted(int(n[5:]) for n in names if re.fullmatch(r"step-\d+", n))


def latest_checkpoint(ckpt_dir: str) -> Optional[int]:
    steps = checkpoint_steps(ckpt_dir)
    return steps[-1] if steps else None


class Scenario(ABC):
    """A loop of faults of one kind. Subclasses say how to start the job,
    which faults to inject and what the ABORT output must say."""

    name = "?"
    # The programs of this tree the scenario runs (build/bin): one that is
    # missing fails the loop; only a missing external engine skips.
    programs: Tuple[str, ...] = ()
    # Seconds after the injection within which every launcher must exit.
    exit_bound_s = 20.0

    def __init__(self, work_dir: str, rng: random.Random) -> None:
        self.work_dir = os.path.join(work_dir, self.name)
        shutil.rmtree(self.work_dir, ignore_errors=True)
        os.makedirs(self.work_dir)
        self.rng = rng
        self.faults: List[Fault] = []
        # The last fault, until a later run showed its checkpoint loads.
        self.unverified: Optional[Fault] = None

    # Set up and tear down what the scenario needs (namespaces, etcd, a
    # mount); skip() says why it cannot run here ("" = it can).
    def setup(self) -> None:
        pass

    def teardown(self) -> None:
        pass

    def skip(self) -> str:
        return ""

    @abstractmethod
    def run_fault(self, fault: Fault) -> None:
        """Starts the job, injects one fault and checks its end into
        ``fault`` (problems recorded there). Must leave nothing running."""

    @abstractmethod
    def verify_last(self) -> None:
        """Shows the last fault's checkpoint loads (a run that resumes)."""

    def next_fault(self) -> Fault:
        index = len(self.faults)
        fault = Fault(self.name, index, "?")
        self.faults.append(fault)
        try:
            self.run_fault(fault)
        except Exception as e:  # a driver error fails the fault, not the loop
            fault.fail(f"driver error: {type(e).__name__}: {e}")
        return fault

    def fault_dir(self, fault: Fault) -> str:
        path = os.path.join(self.work_dir, f"fault-{fault.index:03d}")
        os.makedirs(path, exist_ok=True)
        return path

    def resumed(self, fault_for_problems: Optional[Fault], expected: Optional[int],
                text_of: Callable[[], str], timeout: float,
                running: Callable[[], bool] = lambda: True) -> bool:
        """Waits until the job printed "resumed at step <expected>" (or, with
        no checkpoint, its first step) while ``running()``; a wrong step
        fails the fault whose checkpoint it was."""
        pattern = re.compile(r"resumed at step (\d+)")
        if expected is None:
            return wait_for(lambda: "step" in text_of() or not running(), timeout, 0.05) and \
                "step" in text_of()
        wait_for(lambda: pattern.search(text_of()) is not None or not running(), timeout, 0.05)
        found = pattern.search(text_of())
        if found is None:
            if fault_for_problems is not None:
                fault_for_problems.fail(f"the next run did not resume from checkpoint step "
                                        f"{expected} within {timeout:.0f} s")
            return False
        got = int(found.group(1))
        if got != expected and fault_for_problems is not None:
            fault_for_problems.fail(f"the next run resumed at step {got}, not at the last "
                                    f"checkpoint's step {expected}")
        return got == expected


def await_exit(fault: Fault, launchers: Sequence[Launcher], injected_at: float, bound_s: float,
               named: Callable[[], bool]) -> None:
    """Waits for every launcher to exit within ``bound_s`` of the injection,
    recording when ``named()`` first held (the detection time). A launcher
    still running at the bound is a hang: it is killed and recorded."""
    deadline = injected_at + bound_s
    while time.monotonic() < deadline:
        if fault.detect_ms is None and named():
            fault.detect_ms = (time.monotonic() - injected_at) * 1000
        if all(l.exited() is not None for l in launchers):
            fault.exit_ms = (time.monotonic() - injected_at) * 1000
            break
        time.sleep(0.02)
    if fault.detect_ms is None and named():
        fault.detect_ms = (time.monotonic() - injected_at) * 1000
    for l in launchers:
        if l.exited() is None:
            fault.fail(f"hang: launcher pid {l.pid} still running {bound_s:.0f} s after the fault")
            l.kill()


def check_leftovers(fault: Fault, tag: str, ports: Set[int], job_id: str,
                    netns: Sequence[Optional[str]] = (None,), grace_s: float = 2.0) -> None:
    """No process, listening port or shm segment of the job may remain."""
    left = fault_proc.wait_gone(tag, grace_s)
    if left:
        fault.fail("orphans: " + "; ".join(fault_proc.describe(p) for p in sorted(left)))
        fault_proc.kill_all(left)
        fault_proc.wait_gone(tag, 5)
    for ns in netns:
        still = fault_proc.still_listening(ports, ns)
        if still:
            where = f" in {ns}" if ns else ""
            fault.fail(f"ports still listening{where}: {sorted(still)}")
    segments = fault_proc.shm_segments(job_id)
    if segments:
        fault.fail(f"/dev/shm segments left: {segments}")
        for name in segments:
            try:
                os.unlink(os.path.join(fault_proc.SHM_DIR, name))
            except OSError:
                pass


def abort_text(stderr: str) -> str:
    """The launcher's stderr from its first ABORT line on ("" when none)."""
    at = stderr.find("ABORT!!!")
    return "" if at < 0 else stderr[at:]
