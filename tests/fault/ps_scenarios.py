"""Parameter-server jobs on one node: wide_and_deep with 2 servers and 2
workers under one ``flotilla launch``, checkpointing every few steps
(servers' tables included), restarted after every fault from the newest
checkpoint.

  ps_kill_<mode>  kill -9 a random trainer or server (sync, async, GEO)
  ps_sigstop      SIGSTOP a random trainer or server; the stall watch
                  (--stall_timeout) must stop the job and name it
  ckpt_disk_full  the checkpoint directory is a small tmpfs (mounted in a
                  private mount namespace); it is filled so that the next
                  save runs out of space half-way; the save must fail
                  naming the disk error and leave the older checkpoints
                  (and no temporary directory)
"""
from __future__ import annotations

import os
import re
import signal
import time
from typing import Dict, List, Sequence, Tuple

import fault_proc
from fault_job import Launcher, bin_path, last_step, process_pids, read_text, wait_for
from fault_result import Fault
from fault_scenario import (Scenario, abort_text, await_exit, check_leftovers, latest_checkpoint,
                            new_tag)

GRACE_S = 2
STALL_S = 3

# Small and fast: the point is many steps and checkpoints, not the model.
MODEL_ARGS = ["--train_samples", "100000000", "--test_samples", "200", "--batch_size", "32",
              "--hidden_size", "16", "--hidden_layers", "1", "--embedding_dim", "4",
              "--vocab_per_slot", "5000", "--log_every", "1"]


def stray_entries(ckpt_dir: str) -> List[str]:
    """Entries of ``ckpt_dir`` that are not complete checkpoints."""
    return [n for n in sorted(os.listdir(ckpt_dir))
            if not (re.fullmatch(r"step-\d+", n) and
                    os.path.exists(os.path.join(ckpt_dir, n, "STATE.json")))]


class PsScenario(Scenario):
    """wide_and_deep 2×2 under one launcher, restarted after every fault."""

    programs = ("flotilla", "wide_and_deep")
    mode = "sync"
    checkpoint_every = 20
    delay_s: Tuple[float, float] = (0.5, 3.0)  # training time before the fault

    def __init__(self, work_dir, rng) -> None:
        super().__init__(work_dir, rng)
        self.ckpt_dir = os.path.join(self.work_dir, "ckpt")  # as the job sees it
        os.makedirs(self.ckpt_dir, exist_ok=True)

    # Where the driver reads the checkpoints (differs under another mount
    # namespace), and what the launcher runs under.
    @property
    def ckpt_view(self) -> str:
        return self.ckpt_dir

    def prefix(self) -> Sequence[str]:
        return ()

    def launcher_argv(self, log_dir: str, job_id: str) -> List[str]:
        return [bin_path("flotilla"), "launch", "--quiet", "--log_dir", log_dir, "--job_id", job_id,
                "--server_num", "2", "--worker_num", "2", "--grace_period", str(GRACE_S),
                "--stall_timeout", str(STALL_S), bin_path("wide_and_deep"), "--mode", self.mode,
                "--k_steps", "5", *MODEL_ARGS, "--checkpoint_dir", self.ckpt_dir,
                "--checkpoint_every", str(self.checkpoint_every)]

    def start(self, out_dir: str, tag: str) -> Launcher:
        return Launcher(self.launcher_argv(os.path.join(out_dir, "log"), tag), out_dir, tag,
                        self.prefix(), {"OPENBLAS_NUM_THREADS": "1",
                                        "FLOTILLA_PS_MODEL_DIR": self.ckpt_dir})

    def run_fault(self, fault: Fault) -> None:
        out_dir, tag = self.fault_dir(fault), new_tag()
        log_dir = os.path.join(out_dir, "log")
        worker0 = lambda: read_text(os.path.join(log_dir, "workerlog.0"))
        before = latest_checkpoint(self.ckpt_view)
        job = self.start(out_dir, tag)
        ports: set = set()
        pids: Dict[str, int] = {}
        try:
            if not self.resumed(self.unverified, before, worker0, 90,
                                lambda: job.exited() is None):
                fault.fail(f"the job did not start training within 90 s: {job.stderr()[-2000:]}")
                return
            self.unverified = None
            if not wait_for(lambda: latest_checkpoint(self.ckpt_view) is not None or
                            job.exited() is not None, 60, 0.1) or job.exited() is not None:
                fault.fail(f"no checkpoint within 60 s: {job.stderr()[-3000:]}")
                return
            time.sleep(self.rng.uniform(*self.delay_s))
            pids = process_pids(log_dir)
            if len(pids) != 4 or job.exited() is not None:
                fault.fail(f"the job is not running its 4 processes: {pids} "
                           f"{job.stderr()[-2000:]}")
                return
            ports = fault_proc.listening_ports_of(fault_proc.tagged_pids(tag))
            injected_at, named = self.inject(fault, pids, job)
            await_exit(fault, [job], injected_at, self.exit_bound_s, named)
            fault.check(named(), f"the ABORT output does not name {fault.action}'s culprit:\n"
                                 f"{abort_text(job.stderr())[-3000:] or job.stderr()[-3000:]}")
            code = job.exited()
            fault.check(code not in (None, 0), f"the launcher exited {code} after {fault.action}")
        finally:
            if job.exited() is None:
                job.kill()
            self.undo()
        check_leftovers(fault, tag, ports, tag)
        ckpt = latest_checkpoint(self.ckpt_view)
        self.check_checkpoints(fault, pids.get("rank 0", 0), (ckpt or -1) > (before or -1))
        if ckpt is not None:
            fault.steps_lost = max(0, last_step(worker0()) - ckpt)
        self.unverified = fault

    def inject(self, fault: Fault, pids: Dict[str, int], job: Launcher):
        """Injects the fault into one of ``pids`` (label → pid); returns the
        time it did and a predicate: the launcher's output names it."""
        label = self.rng.choice(sorted(pids))
        pid = pids[label]
        fault.action = f"kill -9 {label.split()[0]}"
        fault.action += f" #{label} pid {pid}"
        os.kill(pid, signal.SIGKILL)
        cause = re.compile(rf"  {label} \(pid {pid}, [^)]*\) killed by signal SIGKILL")
        return time.monotonic(), lambda: cause.search(abort_text(job.stderr())) is not None

    def undo(self) -> None:
        """Reverts what the fault changed outside the job (a filled disk)."""

    def check_checkpoints(self, fault: Fault, rank0_pid: int, saved: bool) -> None:
        """Nothing but complete checkpoints in the directory, except what
        this run's rank 0 (``rank0_pid``), killed mid-save, left — and, when
        this run never saved (``saved`` false), what earlier runs left: the
        first save removes those."""
        if not saved:
            return
        stray = [n for n in stray_entries(self.ckpt_view) if f".{rank0_pid}" not in n]
        fault.check(not stray, f"leftovers of earlier saves in the checkpoint directory: {stray}")

    def verify_last(self) -> None:
        """One more run must resume from the newest checkpoint; it is then
        stopped by SIGTERM and must leave nothing behind."""
        if self.unverified is None:
            return
        fault = self.unverified
        out_dir, tag = os.path.join(self.work_dir, "verify"), new_tag()
        worker0 = lambda: read_text(os.path.join(out_dir, "log", "workerlog.0"))
        job = self.start(out_dir, tag)
        try:
            self.resumed(fault, latest_checkpoint(self.ckpt_view), worker0, 90,
                         lambda: job.exited() is None)
            job.signal(signal.SIGTERM)
            fault.check(job.wait(GRACE_S + 10) is not None,
                        "the verifying run did not stop on SIGTERM")
        finally:
            if job.exited() is None:
                job.kill()
        check_leftovers(fault, tag, set(), tag)
        self.unverified = None


class PsKill(PsScenario):
    """kill -9 of a random trainer or server."""

    def __init__(self, mode: str, work_dir, rng) -> None:
        self.name = f"ps_kill_{mode}"
        self.mode = mode
        super().__init__(work_dir, rng)
        self.exit_bound_s = GRACE_S + 10


class PsStop(PsScenario):
    """SIGSTOP of a random trainer or server: the stall watch names it."""

    name = "ps_sigstop"
    exit_bound_s = STALL_S + GRACE_S + 10

    def inject(self, fault: Fault, pids: Dict[str, int], job: Launcher):
        label = self.rng.choice(sorted(pids))
        role, index = label.split()
        pid = pids[label]
        fault.action = f"SIGSTOP {role} #{label} pid {pid}"
        os.kill(pid, signal.SIGSTOP)  # check_leftovers SIGKILLs it if the launcher did not
        who = rf"p?server {index}\b" if role == "server" else rf"(rank|trainer|worker) {index}\b"
        cause = re.compile(rf"{who}[^\n]*(stopped|SIGSTOP)")
        return time.monotonic(), lambda: ("stalled" in abort_text(job.stderr()) and
                                          cause.search(abort_text(job.stderr())) is not None)
