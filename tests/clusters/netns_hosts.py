"""Hosts made of network namespaces, for tests of cluster engines.

Each host is a network namespace joined to the others through a bridge in a
"switch" namespace, with its own 10.x address, its own /etc/hosts (``ip netns
exec`` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts) and, for processes
started with a hostname, its own UTS namespace, so ``gethostname()`` and name
resolution answer as on a real cluster. Names carry the test's pid, so runs by
other people never collide. Every process a test starts is tracked by pid and
ended by :meth:`Hosts.close`, which also ends whatever still runs inside the
namespaces (``ip netns pids``) and deletes them.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import Dict, List, Optional, Sequence


def sh(*argv: str) -> subprocess.CompletedProcess:
    """Runs a command, raising with its output when it fails."""
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr}")
    return result


def can_make_hosts() -> Optional[str]:
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "needs ip (iproute2) and unshare (util-linux)"
    return None


class Hosts:
    """``n`` hosts named ``names`` (in /etc/hosts of every host, with
    ``aliases`` mapping extra names to a host index)."""

    def __init__(self, names: Sequence[str], aliases: Optional[Dict[str, int]] = None) -> None:
        self.tag = str(os.getpid() % 100000)
        self.subnet = f"10.214.{os.getpid() % 250}."
        self.names = list(names)
        self.switch = f"fltsw{self.tag}"
        self.netns = [f"flth{i}_{self.tag}" for i in range(len(names))]
        self.ips = [f"{self.subnet}{i + 1}" for i in range(len(names))]
        self.procs: List[subprocess.Popen] = []
        self._made: List[str] = []
        try:
            self._make(aliases or {})
        except Exception:
            self.close()
            raise

    def _make(self, aliases: Dict[str, int]) -> None:
        sh("ip", "netns", "add", self.switch)
        self._made.append(self.switch)
        sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        entries = ["127.0.0.1 localhost"]
        entries += [f"{ip} {name}" for ip, name in zip(self.ips, self.names)]
        entries += [f"{self.ips[i]} {alias}" for alias, i in aliases.items()]
        for i, ns in enumerate(self.netns):
            sh("ip", "netns", "add", ns)
            self._made.append(ns)
            here, there = f"fh{i}_{self.tag}", f"fs{i}_{self.tag}"
            sh("ip", "link", "add", here, "netns", ns, "type", "veth", "peer", "name", there,
               "netns", self.switch)
            sh("ip", "-n", self.switch, "link", "set", there, "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{self.ips[i]}/24", "dev", here)
            sh("ip", "-n", ns, "link", "set", here, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            os.makedirs(f"/etc/netns/{ns}", exist_ok=True)
            with open(f"/etc/netns/{ns}/hosts", "w") as f:
                f.write("\n".join(entries) + "\n")

    def argv(self, host: int, argv: Sequence[str], hostname: Optional[str] = None) -> List[str]:
        """``argv`` run on ``host`` (as ``hostname`` in a UTS namespace of its own)."""
        prefix = ["ip", "netns", "exec", self.netns[host]]
        if hostname is None:
            return prefix + list(argv)
        return prefix + ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                         hostname] + list(argv)

    def start(self, host: int, argv: Sequence[str], log: str, hostname: Optional[str] = None,
              env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
        """Starts ``argv`` on ``host`` with output to ``log``; tracked by pid."""
        with open(log, "ab") as out:
            proc = subprocess.Popen(self.argv(host, argv, hostname), stdout=out,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def run(self, host: int, argv: Sequence[str], env: Optional[Dict[str, str]] = None,
            timeout: float = 60, hostname: Optional[str] = None) -> subprocess.CompletedProcess:
        """Runs ``argv`` on ``host`` to completion."""
        return subprocess.run(self.argv(host, argv, hostname), capture_output=True, text=True,
                              env=env, timeout=timeout)

    def pids(self) -> List[int]:
        """Every process running inside the hosts' namespaces."""
        out: List[int] = []
        for ns in self.netns:
            result = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            out += [int(p) for p in result.stdout.split()]
        return out

    def stop(self, proc: subprocess.Popen, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; reaps it."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def close(self) -> None:
        """Ends every tracked process and anything left in the namespaces,
        then deletes the namespaces and their /etc/netns entries."""
        for proc in reversed(self.procs):
            self.stop(proc)
        for _ in range(50):
            left = self.pids() if self._made else []
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        for ns in self._made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        self._made = []
