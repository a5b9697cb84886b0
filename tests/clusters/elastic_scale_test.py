"""Elastic scaling driven by the engine, on network-namespace hosts: three
launchers (one per host, as three pods) train an elastic job (--np 2:3)
against a real etcd. Stopping one launcher with SIGTERM (what Kubernetes does
to a pod it scales away) shrinks the world to 2; starting it again grows it
to 3; ``flotilla launch --scale 2`` shrinks it again with the third launcher
waiting as a standby, ``--scale 3`` brings it back. Through all of it the
other two launchers keep running (same pids): only their ranks restart, from
the newest checkpoint, and the job finishes with every launcher exiting 0."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster_test_util import bin_path, make_secret_file, read_text, skip_unless  # noqa: E402
from netns_hosts import Hosts, can_make_hosts  # noqa: E402

ETCD = "/usr/bin/etcd"
JOB = "scale"
STEPS = 4000


class ElasticScaleTest(unittest.TestCase):
    def setUp(self) -> None:
        self.work = tempfile.mkdtemp(prefix="flotilla-elastic-")
        self.hosts = Hosts(["ehost1", "ehost2", "ehost3"])
        ip = self.hosts.ips[0]
        self.etcd_url = f"http://{ip}:2379"
        self.etcd = self.hosts.start(0, [ETCD, "--data-dir", os.path.join(self.work, "etcd"),
                                         "--listen-client-urls", self.etcd_url,
                                         "--advertise-client-urls", self.etcd_url,
                                         "--listen-peer-urls", "http://127.0.0.1:2380"],
                                     os.path.join(self.work, "etcd.log"))
        deadline = time.time() + 30
        while time.time() < deadline:
            probe = self.hosts.run(0, ["python3", "-c", "import urllib.request as u; "
                                       f"u.urlopen('{self.etcd_url}/health', timeout=1)"])
            if probe.returncode == 0:
                break
            time.sleep(0.2)
        self.launchers = {}
        self.secret = make_secret_file(self.work)

    def tearDown(self) -> None:
        self.hosts.close()
        if not os.environ.get("KEEP"):
            shutil.rmtree(self.work, ignore_errors=True)

    def log(self, host: int) -> str:
        return os.path.join(self.work, f"launcher{host}.log")

    def start(self, host: int) -> subprocess.Popen:
        argv = [bin_path("flotilla"), "launch", "--quiet", "--elastic_server",
                f"etcd://{self.hosts.ips[0]}:2379", "--job_id", JOB, "--np", "2:3",
                "--host", self.hosts.ips[host], "--elastic_timeout", "5",
                "--log_dir", os.path.join(self.work, f"log{host}"),
                bin_path("train_with_fleet"), "--steps", str(STEPS), "--hidden", "64",
                "--labels", "sum", "--checkpoint_dir", os.path.join(self.work, "ckpt"),
                "--checkpoint_every", "50"]
        env = {"PATH": "/usr/bin:/bin", "FLOTILLA_LOG_LEVEL": "info",
               "FLOTILLA_JOB_SECRET_FILE": self.secret}
        self.launchers[host] = self.hosts.start(host, argv, self.log(host), env=env,
                                                hostname=self.hosts.names[host])
        return self.launchers[host]

    def worlds(self, host: int):
        """(generation, nodes) of every world the launcher on ``host`` ran."""
        return [(int(g), int(n)) for g, n in
                re.findall(r"world (\d+) with (\d+) node", read_text(self.log(host)))]

    def wait_world(self, host: int, nodes: int, after: int, timeout: float = 60) -> int:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for gen, n in self.worlds(host):
                if gen > after and n == nodes:
                    return gen
            time.sleep(0.1)
        self.fail(f"no world of {nodes} nodes after generation {after} on host {host}:\n"
                  + read_text(self.log(host))[-3000:])

    def newest_checkpoint(self) -> int:
        steps = [int(m.group(1)) for m in (re.fullmatch(r"step-(\d+)", name) for name in
                                           os.listdir(os.path.join(self.work, "ckpt"))) if m] \
            if os.path.isdir(os.path.join(self.work, "ckpt")) else []
        return max(steps, default=0)

    def wait_checkpoint(self, beyond: int) -> int:
        deadline = time.time() + 60
        while self.newest_checkpoint() <= beyond and time.time() < deadline:
            time.sleep(0.1)
        self.assertGreater(self.newest_checkpoint(), beyond, "no new checkpoint within 60 s")
        return self.newest_checkpoint()

    def scale(self, n: int) -> None:
        r = self.hosts.run(1, [bin_path("flotilla"), "launch", "--elastic_server",
                               f"etcd://{self.hosts.ips[0]}:2379", "--job_id", JOB,
                               "--scale", str(n)])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_engine_adds_and_removes_launchers_and_scale_resizes(self) -> None:
        for host in range(3):
            self.start(host)
        survivors = {h: self.launchers[h].pid for h in (0, 1)}
        gen = self.wait_world(0, 3, -1)
        saved = self.wait_checkpoint(0)
        # The engine removes a pod: SIGTERM to its launcher.
        self.launchers[2].terminate()
        self.assertEqual(self.launchers[2].wait(30), 128 + 15)
        gen = self.wait_world(0, 2, gen)
        saved = self.wait_checkpoint(saved)
        # ... and adds one back.
        self.start(2)
        gen = self.wait_world(0, 3, gen)
        # Paddle's `--scale`: the job's size set by hand, within --np 2:3.
        self.scale(2)
        gen = self.wait_world(0, 2, gen)
        self.assertIsNone(self.launchers[2].poll(), "the stood-down launcher should wait")
        self.scale(3)
        gen = self.wait_world(0, 3, gen)
        for host, pid in survivors.items():
            self.assertEqual(self.launchers[host].pid, pid)
        for host, proc in self.launchers.items():
            self.assertEqual(proc.wait(120), 0, read_text(self.log(host))[-3000:])
        print("worlds seen by host 0:", self.worlds(0), flush=True)
        # Rank 0's log: node 0 is whichever launcher registered first.
        out = "".join(read_text(os.path.join(self.work, f"log{h}", "workerlog.0"))
                      for h in range(3)
                      if os.path.exists(os.path.join(self.work, f"log{h}", "workerlog.0")))
        self.assertIn(f'"steps":{STEPS}', out)
        resumed = [int(s) for s in re.findall(r"resumed at step (\d+)", out)]
        # The last world resumed from a checkpoint at least as new as the
        # one saved before the last wait: the step counter never went back.
        self.assertTrue(resumed, out[-3000:])
        self.assertGreaterEqual(max(resumed), saved, "the step counter went back")


if __name__ == "__main__":
    skip_unless(can_make_hosts() or (None if os.access(ETCD, os.X_OK) else
                                     f"{ETCD} is not installed (Debian etcd-server)"))
    unittest.main(verbosity=2)
