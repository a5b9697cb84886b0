"""A real Slurm cluster on network-namespace hosts, made and ended by a test.

One ``munged`` (its socket is a file, shared by every namespace), one
``slurmctld`` on the first host and one ``slurmd`` per host, each with its own
NodeName/NodeAddr and hostname. Everything lives in a temporary directory
(configuration, state, spool, logs) and every daemon is ended by pid.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Sequence

from netns_hosts import Hosts, can_make_hosts

DAEMONS = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch"]


def can_run_slurm() -> Optional[str]:
    """None when a Slurm cluster can be made here, else why not."""
    why = can_make_hosts()
    if why:
        return why
    missing = [d for d in DAEMONS if not os.access(d, os.X_OK)]
    if missing:
        return (f"Slurm or munge is not installed ({', '.join(missing)} missing); "
                "scripts/install-deps.sh installs slurm-wlm and munge")
    return None


class SlurmCluster:
    """``nodes`` hosts (fnode01, fnode02, ...) with ``cpus`` CPUs each."""

    def __init__(self, nodes: int = 2, cpus: int = 2) -> None:
        self.dir = tempfile.mkdtemp(prefix="flotilla-slurm-")
        os.chmod(self.dir, 0o755)
        self.names = [f"fnode{i + 1:02d}" for i in range(nodes)]
        self.hosts = Hosts(self.names)
        self.conf = os.path.join(self.dir, "slurm.conf")
        try:
            self._start(cpus)
        except Exception:
            self.close()
            raise

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def _write_conf(self, cpus: int) -> None:
        d = self.dir
        nodes = "\n".join(f"NodeName={n} NodeAddr={ip} CPUs={cpus} State=UNKNOWN"
                          for n, ip in zip(self.names, self.hosts.ips))
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=flt{self.hosts.tag}
SlurmctldHost={self.names[0]}({self.hosts.ips[0]})
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=600
{nodes}
PartitionName=flt Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # Slurm 22.05 initialises a cgroup plugin even without cgroup
        # enforcement; name the hierarchy this machine mounts.
        with open(self.path("cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n")

    def _start(self, cpus: int) -> None:
        for sub in ["ctld"] + [f"spool/{n}" for n in self.names]:
            os.makedirs(self.path(sub))
        self._write_conf(cpus)
        key = self.path("munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.munged = subprocess.Popen(
            ["/usr/sbin/munged", "-F", "-f", f"--socket={self.path('munge.sock')}",
             f"--key-file={key}", f"--pid-file={self.path('munged.pid')}",
             f"--log-file={self.path('munged.log')}", f"--seed-file={self.path('munged.seed')}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait(lambda: os.path.exists(self.path("munge.sock")), 10, "munged's socket")
        self.ctld = self.hosts.start(0, ["/usr/sbin/slurmctld", "-D", "-i", "-f", self.conf],
                                     self.path("slurmctld.out"), hostname=self.names[0])
        self.slurmds = [self.hosts.start(i, ["/usr/sbin/slurmd", "-D", "-f", self.conf],
                                         self.path(f"slurmd-{n}.out"), hostname=n)
                        for i, n in enumerate(self.names)]
        self._wait(self._all_idle, 30, "every node idle in sinfo")

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            for p in [getattr(self, "munged", None), getattr(self, "ctld", None)] + \
                     getattr(self, "slurmds", []):
                if p is not None and p.poll() is not None:
                    raise RuntimeError(f"a Slurm daemon exited ({p.args}): see {self.dir}")
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}; logs in {self.dir}")

    def _all_idle(self) -> bool:
        r = self.command(["sinfo", "-h", "-o", "%T %D"], check=False)
        return r.returncode == 0 and r.stdout.split() == ["idle", str(len(self.names))]

    def env(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = dict(os.environ)
        env["SLURM_CONF"] = self.conf
        env.update(extra or {})
        return env

    def command(self, argv: Sequence[str], extra_env: Optional[Dict[str, str]] = None,
                check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """A Slurm client command (sinfo, sbatch, srun, ...) run on the first host."""
        r = self.hosts.run(0, argv, env=self.env(extra_env), timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {r.stdout}{r.stderr}")
        return r

    def sbatch(self, argv: Sequence[str], extra_env: Optional[Dict[str, str]] = None) -> str:
        """Submits a batch job; returns its id."""
        out = self.command(["sbatch", "--parsable"] + list(argv), extra_env).stdout.strip()
        return out.split(";")[0]

    def job(self, job_id: str) -> Dict[str, str]:
        """``scontrol show job`` as a dict."""
        out = self.command(["scontrol", "show", "job", job_id, "-o"]).stdout
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def wait_job(self, job_id: str, timeout: float = 120) -> Dict[str, str]:
        """Waits until the job has ended; returns its record."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            record = self.job(job_id)
            if record.get("JobState") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                return record
            time.sleep(0.2)
        raise RuntimeError(f"job {job_id} still running after {timeout} s")

    def daemon_pids(self) -> List[int]:
        """The daemons and slurmctld's own helper (slurmscriptd)."""
        daemons = [p.pid for p in [self.ctld] + self.slurmds]
        for pid in self.hosts.pids():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == self.ctld.pid:
                daemons.append(pid)
        return daemons

    def close(self) -> None:
        """Stops the daemons by pid (slurmds, slurmctld, munged), ends what is
        left in the hosts and removes the directory."""
        for p in getattr(self, "slurmds", []) + [getattr(self, "ctld", None)]:
            if p is not None:
                self.hosts.stop(p)
        self.hosts.close()
        munged = getattr(self, "munged", None)
        if munged is not None and munged.poll() is None:
            munged.terminate()
            try:
                munged.wait(5)
            except subprocess.TimeoutExpired:
                munged.kill()
                munged.wait()
        if os.environ.get("FLOTILLA_KEEP_SLURM_DIR") is None:
            shutil.rmtree(self.dir, ignore_errors=True)
