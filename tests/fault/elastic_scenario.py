"""elastic_kill: an elastic job (etcd-backed, --np 2:3) of three launchers on
loopback (--host 127.0.0.1-3) training train_with_fleet with checkpoints.
Each fault SIGKILLs the launcher of a random node; the survivors must name
the lost node ("node i (host) left the job"), restart in a world of two
from the newest checkpoint (rank 0 prints "resumed at step N", N no older
than the newest checkpoint before the loss), and the killed launcher's
processes, ports and shared-memory segments must be gone (the segments at
the latest when a launcher starts again on that host). The node is then
started again and the job must scale back out to three. One fault in three
SIGKILLs a trainer instead: that is no lost node, so every launcher must
stop the job, the trainer's node naming it in its ABORT output; the job
is then started again and must resume from the newest checkpoint.

etcd is Debian's /usr/bin/etcd on free loopback ports, started and ended
(by pid) by the scenario, as tests/elastic_test_util.cc does.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from typing import Dict, List, Optional

import fault_proc
from fault_job import Launcher, bin_path, last_step, process_pids, read_text, wait_for
from fault_result import Fault
from fault_scenario import (Scenario, abort_text, await_exit, check_leftovers, latest_checkpoint,
                            make_secret_file, new_tag)

ETCD = "/usr/bin/etcd"
TTL_S = 3
GRACE_S = 1
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
RESUMED = re.compile(r"resumed at step (\d+) cost=\S+ ranks=(\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One start of a launcher on one host."""

    def __init__(self, launcher: Launcher, tag: str, log_dir: str) -> None:
        self.launcher, self.tag, self.log_dir = launcher, tag, log_dir


class ElasticKill(Scenario):
    name = "elastic_kill"
    programs = ("flotilla", "train_with_fleet")
    exit_bound_s = TTL_S + GRACE_S + 10  # loss → named (and, for a trainer, stopped)

    def __init__(self, work_dir, rng) -> None:
        super().__init__(work_dir, rng)
        self.ckpt_dir = os.path.join(self.work_dir, "ckpt")
        self.etcd: Optional[subprocess.Popen] = None
        self.endpoint = ""
        self.job = new_tag()
        self.secret = ""
        self.nodes: Dict[str, Node] = {}
        self.starts = 0
        self.why_not = ""

    def skip(self) -> str:
        if not os.access(ETCD, os.X_OK):
            return f"{ETCD} is not installed (Debian package etcd-server)"
        return self.why_not

    def setup(self) -> None:
        if not os.access(ETCD, os.X_OK):
            return
        client, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        data = os.path.join(self.work_dir, "etcd")
        with open(os.path.join(self.work_dir, "etcd.log"), "wb") as log:
            self.etcd = subprocess.Popen(
                [ETCD, "--data-dir", data, "--listen-client-urls", client_url,
                 "--advertise-client-urls", client_url, "--listen-peer-urls", peer_url,
                 "--name", "f", "--initial-advertise-peer-urls", peer_url,
                 "--initial-cluster", f"f={peer_url}", "--log-level", "error"],
                stdout=log, stderr=log)
        self.endpoint = f"127.0.0.1:{client}"
        self.secret = make_secret_file(self.work_dir)
        if not wait_for(self._etcd_answers, 30, 0.1):
            self.why_not = f"etcd did not come up on {self.endpoint}"

    def _etcd_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/version", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def teardown(self) -> None:
        for node in list(self.nodes.values()):
            self._stop(node)
        self.nodes.clear()
        if self.etcd is not None:
            self.etcd.terminate()
            try:
                self.etcd.wait(10)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()
            self.etcd = None

    def _stop(self, node: Node) -> None:
        node.launcher.signal(signal.SIGTERM)
        if node.launcher.wait(GRACE_S + 10) is None:
            node.launcher.kill()
        fault_proc.kill_all(fault_proc.wait_gone(node.tag, 5))

    def start(self, host: str) -> Node:
        tag = new_tag()
        self.starts += 1
        out_dir = os.path.join(self.work_dir, f"{host}.{self.starts}")
        log_dir = os.path.join(out_dir, "log")
        argv = [bin_path("flotilla"), "launch", "--log_dir", log_dir,
                "--grace_period", str(GRACE_S), "--elastic_server", f"etcd://{self.endpoint}",
                "--job_id", self.job, "--np", "2:3", "--host", host,
                bin_path("train_with_fleet"), "--steps", "100000000", "--hidden", "32",
                "--batch_size", "64", "--lr", "0.05", "--labels", "sum",
                "--fetch_frequency", "1", "--checkpoint_dir", self.ckpt_dir,
                "--checkpoint_every", "25"]
        node = Node(Launcher(argv, out_dir, tag, (), {
            "FLOTILLA_ELASTIC_TTL": str(TTL_S), "FLOTILLA_ELASTIC_TIMEOUT": "5",
            "OPENBLAS_NUM_THREADS": "1", "FLOTILLA_JOB_SECRET_FILE": self.secret}), tag, log_dir)
        self.nodes[host] = node
        return node

    def rank0_text(self) -> str:
        """Every rank-0 log of every launcher start (appended, never cut)."""
        starts = [e for e in os.listdir(self.work_dir) if re.fullmatch(r"[0-9.]+\.\d+", e)]
        starts.sort(key=lambda e: int(e.rsplit(".", 1)[1]))  # in start order: counts stay put
        return "".join(read_text(os.path.join(self.work_dir, e, "log", "workerlog.0"))
                       for e in starts)

    def resumes(self) -> List[tuple]:
        return [(int(m.group(1)), int(m.group(2))) for m in RESUMED.finditer(self.rank0_text())]

    def wait_resumed(self, seen: int, ranks: int, timeout: float) -> Optional[int]:
        """The step of the first resume after the first ``seen`` with ``ranks``."""
        found: List[int] = []

        def done() -> bool:
            found[:] = [s for s, r in self.resumes()[seen:] if r == ranks]
            return bool(found)

        return found[0] if wait_for(done, timeout, 0.1) else None

    def ensure_running(self, fault: Fault) -> bool:
        """Starts the three launchers when the job is not running (first,
        or after a fault that stopped it): a job with a checkpoint must
        resume from exactly the newest one (shown for the fault that
        stopped it), a new one must save one."""
        if self.nodes and all(n.launcher.exited() is None for n in self.nodes.values()):
            return True
        for node in list(self.nodes.values()):
            self._stop(node)
        self.nodes.clear()
        self.job = new_tag()  # the stopped job's keys stay behind in etcd; start afresh
        expected, seen = latest_checkpoint(self.ckpt_dir), len(self.resumes())
        for host in HOSTS:
            self.start(host)
        if expected is None:
            if wait_for(lambda: latest_checkpoint(self.ckpt_dir) is not None, 90, 0.1):
                return True
            fault.fail("the elastic job saved no checkpoint within 90 s: " +
                       self.nodes[HOSTS[0]].launcher.stderr()[-2000:])
            return False
        step = self.wait_resumed(seen, 3, 90)
        owner = self.unverified or fault
        if step is None:
            owner.fail(f"the restarted job did not resume from step {expected} within 90 s: " +
                       self.nodes[HOSTS[0]].launcher.stderr()[-2000:])
            return False
        owner.check(step == expected, f"the restarted job resumed at step {step}, not at the "
                                      f"newest checkpoint's step {expected}")
        self.unverified = None
        return True

    def run_fault(self, fault: Fault) -> None:
        if not self.ensure_running(fault):
            return
        time.sleep(self.rng.uniform(1.0, 3.0))
        if self.rng.random() < 1 / 3:
            self.kill_trainer(fault)
        else:
            self.kill_launcher(fault)

    def kill_trainer(self, fault: Fault) -> None:
        """kill -9 of one trainer: not a lost node, so the job stops (every
        launcher), its node's ABORT naming the trainer; the next fault's
        start resumes it from the newest checkpoint."""
        host = self.rng.choice(HOSTS)
        node = self.nodes[host]
        pids = process_pids(node.log_dir)
        if not pids:
            fault.fail(f"no processes in {node.log_dir}/job_status.json")
            return
        label = self.rng.choice(sorted(pids))
        pid = pids[label]
        fault.action = f"kill -9 elastic trainer #{label} on {host} pid {pid}"
        nodes = list(self.nodes.values())
        ports = fault_proc.listening_ports_of(set().union(*(fault_proc.tagged_pids(n.tag)
                                                            for n in nodes)))
        reached = last_step(self.rank0_text())
        said = len(node.launcher.stderr())
        os.kill(pid, signal.SIGKILL)
        injected = time.monotonic()
        cause = re.compile(rf"  {label} \(pid {pid}, [^)]*\) killed by signal SIGKILL")
        named = lambda: cause.search(abort_text(node.launcher.stderr()[said:])) is not None
        await_exit(fault, [n.launcher for n in nodes], injected, self.exit_bound_s, named)
        fault.check(named(), f"{host}'s launcher did not name {label}:\n"
                             f"{node.launcher.stderr()[said:][-3000:]}")
        for n in nodes:
            fault.check(n.launcher.exited() not in (None, 0),
                        f"launcher pid {n.launcher.pid} exited {n.launcher.exited()}")
            check_leftovers(fault, n.tag, ports, self.job)
        self.nodes.clear()
        ckpt = latest_checkpoint(self.ckpt_dir)
        if ckpt is not None:
            fault.steps_lost = max(0, reached - ckpt)
        self.unverified = fault

    def kill_launcher(self, fault: Fault) -> None:
        """kill -9 of one node's launcher: the survivors go on without it,
        then with it again."""
        host = self.rng.choice(HOSTS)
        victim = self.nodes[host]
        survivors = [n for h, n in self.nodes.items() if h != host]
        fault.action = f"kill -9 elastic launcher #{host} pid {victim.launcher.pid}"
        ports = fault_proc.listening_ports_of(fault_proc.tagged_pids(victim.tag))
        before = latest_checkpoint(self.ckpt_dir)
        seen = len(self.resumes())
        said = {id(n): len(n.launcher.stderr()) for n in survivors}  # only what comes after
        os.kill(victim.launcher.pid, signal.SIGKILL)
        injected = time.monotonic()
        reached = last_step(self.rank0_text())
        victim.launcher.proc.wait()
        left_message = f"({host}) left the job"
        if wait_for(lambda: any(left_message in n.launcher.stderr()[said[id(n)]:]
                                for n in survivors),
                    self.exit_bound_s, 0.02):
            fault.detect_ms = (time.monotonic() - injected) * 1000
        else:
            fault.fail(f"no survivor named the lost node {host} within {self.exit_bound_s} s")
        left = fault_proc.wait_gone(victim.tag, 3)
        if left:
            fault.fail("orphans of the killed launcher: " +
                       "; ".join(fault_proc.describe(p) for p in sorted(left)))
            fault_proc.kill_all(left)
        still = fault_proc.still_listening(ports)
        fault.check(not still, f"ports of the killed node still listening: {sorted(still)}")
        step = self.wait_resumed(seen, 2, 40)
        if step is None:
            fault.fail("the survivors did not resume in a world of 2 within 40 s: " +
                       survivors[0].launcher.stderr()[-2000:])
        elif before is not None:
            fault.check(step >= before, f"the survivors resumed at step {step}, older than the "
                                        f"newest checkpoint {before} before the loss")
            fault.steps_lost = max(0, reached - step)
        for n in survivors:
            fault.check(n.launcher.exited() is None,
                        f"a surviving launcher exited {n.launcher.exited()}: "
                        f"{n.launcher.stderr()[-2000:]}")
        seen = len(self.resumes())
        self.start(host)
        if self.wait_resumed(seen, 3, 40) is None:
            fault.fail(f"the job did not scale back out to 3 within 40 s of {host}'s restart")
        stale = [s for s in fault_proc.shm_segments(self.job) if f".{victim.launcher.pid}." in s]
        fault.check(not stale, f"/dev/shm segments of the killed launcher left: {stale}")

    def verify_last(self) -> None:
        """A lost launcher's checkpoint was loaded by the survivors' resume,
        a stopped job's by a restart; the job is then stopped by SIGTERM
        and must leave nothing behind."""
        if not self.faults:
            return
        fault = self.faults[-1]
        if not self.ensure_running(fault):
            return
        for node in list(self.nodes.values()):
            node.launcher.signal(signal.SIGTERM)
        for node in list(self.nodes.values()):
            fault.check(node.launcher.wait(GRACE_S + 15) is not None,
                        f"launcher pid {node.launcher.pid} did not stop on SIGTERM")
            left = fault_proc.wait_gone(node.tag, 3)
            fault.check(not left, f"processes left after SIGTERM: {sorted(left)}")
        segments = fault_proc.shm_segments(self.job)
        fault.check(not segments, f"/dev/shm segments left after the job: {segments}")
        for node in list(self.nodes.values()):
            self._stop(node)
        self.nodes.clear()
