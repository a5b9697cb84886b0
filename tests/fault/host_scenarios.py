"""Parameter-server jobs across two hosts made of network namespaces
(tests/clusters/netns_hosts.py: each host its own 10.x address, joined
through a bridge in a "switch" namespace). Node 0 (host A) runs server 0
and trainer 0 and the rendezvous store, node 1 (host B) server 1 and
trainer 1; each node its own ``flotilla launch``, both with one job secret.

  launcher_kill  kill -9 the launcher of a random node: its processes die
                 with it; the other node's launcher must stop the job
                 naming the lost node (its heartbeat or its store)
  link_drop      a random host's link to the switch goes down: both
                 launchers must stop within the node timeout (+ the stall
                 watch and grace period), each naming the other node; the
                 link comes back up before the next run
"""
from __future__ import annotations

import os
import re
import signal
import sys
import time
from typing import List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clusters"))

import fault_proc  # noqa: E402
from fault_job import Launcher, bin_path, last_step, read_text, wait_for  # noqa: E402
from fault_result import Fault  # noqa: E402
from fault_scenario import (Scenario, await_exit, check_leftovers,  # noqa: E402
                            latest_checkpoint, make_secret_file, new_tag)
from ps_scenarios import MODEL_ARGS  # noqa: E402

NODE_TIMEOUT_S = 3
STALL_S = 3
GRACE_S = 2


class _SharedHosts:
    """One pair of hosts for every two-host scenario of the driver
    (netns_hosts names them by the driver's pid); made by the first
    scenario's setup, deleted by the last one's teardown."""

    hosts = None
    users = 0

    @classmethod
    def acquire(cls):
        import netns_hosts
        if cls.hosts is None:
            cls.hosts = netns_hosts.Hosts(["flta", "fltb"])
        cls.users += 1
        return cls.hosts

    @classmethod
    def release(cls) -> None:
        cls.users -= 1
        if cls.users == 0 and cls.hosts is not None:
            cls.hosts.close()
            cls.hosts = None


def stop_text(stderr: str) -> str:
    """A launcher's stderr from where it began to stop the job."""
    marks = [i for i in (stderr.find("ABORT!!!"), stderr.find("stopping the job"),
                         stderr.find("The job was stopped")) if i >= 0]
    return stderr[min(marks):] if marks else ""


class TwoHostScenario(Scenario):
    """The two-host PS job, restarted after every fault."""

    programs = ("flotilla", "wide_and_deep")

    exit_bound_s = NODE_TIMEOUT_S + STALL_S + GRACE_S + 15

    def __init__(self, work_dir, rng) -> None:
        super().__init__(work_dir, rng)
        self.ckpt_dir = os.path.join(self.work_dir, "ckpt")
        os.makedirs(self.ckpt_dir)
        self.hosts = None
        self.why_not = ""
        self.secret = ""

    def setup(self) -> None:
        import netns_hosts
        self.why_not = netns_hosts.can_make_hosts() or ""
        if self.why_not:
            return
        try:
            self.hosts = _SharedHosts.acquire()
        except Exception as e:  # noqa: BLE001 - any failure means "cannot here"
            self.why_not = f"cannot make network namespaces joined by veth: {e}"
            return
        self.secret = make_secret_file(self.work_dir)

    def skip(self) -> str:
        return self.why_not

    def teardown(self) -> None:
        if self.hosts is not None:
            _SharedHosts.release()
            self.hosts = None

    def start(self, out_dir: str, tag: str) -> List[Launcher]:
        ips = self.hosts.ips
        launchers = []
        for node in (1, 0):
            node_dir = os.path.join(out_dir, f"node{node}")
            argv = [bin_path("flotilla"), "launch", "--quiet", "--log_dir",
                    os.path.join(node_dir, "log"), "--job_id", tag,
                    "--servers", f"{ips[0]},{ips[1]}", "--workers", f"{ips[0]},{ips[1]}",
                    "--node_timeout", str(NODE_TIMEOUT_S), "--grace_period", str(GRACE_S),
                    "--stall_timeout", str(STALL_S), bin_path("wide_and_deep"), "--mode", "sync",
                    *MODEL_ARGS, "--checkpoint_dir", self.ckpt_dir, "--checkpoint_every", "20"]
            launchers.append(Launcher(argv, node_dir, tag, ["ip", "netns", "exec",
                                                            self.hosts.netns[node]],
                                      {"OPENBLAS_NUM_THREADS": "1",
                                       "FLOTILLA_JOB_SECRET_FILE": self.secret,
                                       "FLOTILLA_PS_MODEL_DIR": self.ckpt_dir}))
        return launchers[::-1]  # by node

    def run_fault(self, fault: Fault) -> None:
        out_dir, tag = self.fault_dir(fault), new_tag()
        worker0 = lambda: read_text(os.path.join(out_dir, "node0", "log", "workerlog.0"))
        before = latest_checkpoint(self.ckpt_dir)
        nodes = self.start(out_dir, tag)
        ports = set()
        try:
            if not self.resumed(self.unverified, before, worker0, 90,
                                lambda: all(n.exited() is None for n in nodes)):
                fault.fail("the job did not start training within 90 s: " +
                           " | ".join(n.stderr()[-1500:] for n in nodes))
                return
            self.unverified = None
            if not wait_for(lambda: latest_checkpoint(self.ckpt_dir) is not None or
                            any(n.exited() is not None for n in nodes), 60, 0.1) or \
                    any(n.exited() is not None for n in nodes):
                fault.fail("no checkpoint within 60 s: " +
                           " | ".join(n.stderr()[-1500:] for n in nodes))
                return
            time.sleep(self.rng.uniform(0.5, 3.0))
            ports = fault_proc.listening_ports_of(fault_proc.tagged_pids(tag), self.hosts.netns[0])
            ports |= fault_proc.listening_ports_of(fault_proc.tagged_pids(tag), self.hosts.netns[1])
            self.inject_and_wait(fault, nodes)
        finally:
            for n in nodes:
                if n.exited() is None:
                    n.kill()
            self.undo()
        check_leftovers(fault, tag, ports, tag, self.hosts.netns)
        ckpt = latest_checkpoint(self.ckpt_dir)
        if ckpt is not None:
            fault.steps_lost = max(0, last_step(worker0()) - ckpt)
        self.unverified = fault

    def inject_and_wait(self, fault: Fault, nodes: List[Launcher]) -> None:
        raise NotImplementedError

    def undo(self) -> None:
        pass

    def names_node(self, launcher: Launcher, node: int) -> bool:
        """Whether ``launcher`` said it stopped because of ``node``."""
        ip = re.escape(self.hosts.ips[node])
        said = stop_text(launcher.stderr())
        return re.search(rf"node {node} \({ip}\)|{ip}:\d+", said) is not None

    def verify_last(self) -> None:
        if self.unverified is None:
            return
        fault = self.unverified
        out_dir, tag = os.path.join(self.work_dir, "verify"), new_tag()
        worker0 = lambda: read_text(os.path.join(out_dir, "node0", "log", "workerlog.0"))
        nodes = self.start(out_dir, tag)
        try:
            self.resumed(fault, latest_checkpoint(self.ckpt_dir), worker0, 90,
                         lambda: all(n.exited() is None for n in nodes))
            for n in nodes:
                n.signal(signal.SIGTERM)
            for n in nodes:
                fault.check(n.wait(GRACE_S + 10) is not None,
                            f"the verifying launcher pid {n.pid} did not stop on SIGTERM")
        finally:
            for n in nodes:
                if n.exited() is None:
                    n.kill()
        check_leftovers(fault, tag, set(), tag, self.hosts.netns)
        self.unverified = None


class LauncherKill(TwoHostScenario):
    name = "launcher_kill"

    def inject_and_wait(self, fault: Fault, nodes: List[Launcher]) -> None:
        victim = self.rng.randrange(2)
        survivor = nodes[1 - victim]
        fault.action = f"kill -9 launcher #node {victim} pid {nodes[victim].pid}"
        os.kill(nodes[victim].pid, signal.SIGKILL)
        injected = time.monotonic()
        named = lambda: self.names_node(survivor, victim)
        await_exit(fault, nodes, injected, self.exit_bound_s, named)
        fault.check(named(), f"node {1 - victim}'s launcher did not name node {victim}:\n"
                             f"{survivor.stderr()[-3000:]}")
        fault.check(survivor.exited() not in (None, 0),
                    f"node {1 - victim}'s launcher exited {survivor.exited()}")


class LinkDrop(TwoHostScenario):
    name = "link_drop"

    def __init__(self, work_dir, rng) -> None:
        super().__init__(work_dir, rng)
        self.down: Optional[str] = None

    def inject_and_wait(self, fault: Fault, nodes: List[Launcher]) -> None:
        host = self.rng.randrange(2)
        self.down = f"fs{host}_{self.hosts.tag}"  # the switch's end of host's veth
        fault.action = f"drop a link #host {host}'s veth {self.down}"
        import netns_hosts
        netns_hosts.sh("ip", "-n", self.hosts.switch, "link", "set", self.down, "down")
        injected = time.monotonic()
        named = lambda: self.names_node(nodes[0], 1) and self.names_node(nodes[1], 0)
        await_exit(fault, nodes, injected, self.exit_bound_s, named)
        for node in (0, 1):
            fault.check(self.names_node(nodes[node], 1 - node),
                        f"node {node}'s launcher did not name node {1 - node}:\n"
                        f"{nodes[node].stderr()[-3000:]}")
            fault.check(nodes[node].exited() not in (None, 0),
                        f"node {node}'s launcher exited {nodes[node].exited()}")

    def undo(self) -> None:
        if self.down:
            import netns_hosts
            netns_hosts.sh("ip", "-n", self.hosts.switch, "link", "set", self.down, "up")
            self.down = None
