"""Flotilla under a real Slurm cluster made by the test (slurm_cluster.py):
the sbatch examples of examples/slurm/ train to the same results as
``flotilla launch``, scancel stops every rank and leaves a loadable
checkpoint, and ``srun -n 4`` starts ranks with no launcher."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster_test_util import (COLLECTIVE_ARGS, PS_ARGS, SOURCE, assert_same_loss, bin_path, cmdline,  # noqa: E402
                               last_json, launch_reference, read_text, results, skip_unless)
from slurm_cluster import SlurmCluster, can_run_slurm  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "examples", "slurm")


def checkpoints(directory: str):
    """Steps of the complete checkpoints (a save cut short leaves only a
    temporary directory, step-N.tmp.PID, which loading ignores)."""
    return sorted(int(m.group(1)) for m in (re.fullmatch(r"step-(\d+)", os.path.basename(p))
                                            for p in glob.glob(os.path.join(directory, "step-*")))
                  if m)


class SlurmTest(unittest.TestCase):
    cluster: SlurmCluster

    @classmethod
    def setUpClass(cls) -> None:
        started = time.time()
        cls.cluster = SlurmCluster(nodes=2, cpus=2)
        print(f"slurm cluster up in {time.time() - started:.1f} s", flush=True)
        cls.work = tempfile.mkdtemp(prefix="flotilla-slurm-jobs-")
        cls.env = {"PATH": os.path.abspath(os.path.dirname(bin_path("flotilla"))) + ":/usr/bin:/bin"}
        cls.collective_ref = last_json(read_text(os.path.join(launch_reference(
            os.path.join(cls.work, "ref-collective"), ["--nproc_per_node", "4"],
            "train_with_fleet", COLLECTIVE_ARGS), "workerlog.0")))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.cluster.close()
        subprocess.run(["rm", "-rf", cls.work])

    def submit(self, script: str, args, name: str) -> dict:
        """sbatch one of examples/slurm/ in its own directory; waits for it."""
        workdir = os.path.join(self.work, name)
        os.makedirs(workdir)
        job = self.cluster.sbatch([f"--chdir={workdir}", f"--output={workdir}/out.txt",
                                   os.path.join(EXAMPLES, script)] + args, self.env)
        record = self.cluster.wait_job(job)
        record["workdir"] = workdir
        record["log"] = os.path.join(workdir, f"log-{job}")
        return record

    def output(self, record: dict) -> str:
        return read_text(os.path.join(record["workdir"], "out.txt"))

    def test_collective_job_of_2_nodes_by_2_ranks(self) -> None:
        ref = self.collective_ref
        record = self.submit("collective.sbatch", [bin_path("train_with_fleet")] + COLLECTIVE_ARGS,
                             "collective")
        self.assertEqual(record["JobState"], "COMPLETED", self.output(record))
        self.assertEqual(record["NodeList"], "fnode[01-02]")
        endpoints = read_text(os.path.join(record["log"], "endpoints.log"))
        self.assertIn(self.cluster.hosts.ips[0], endpoints)
        self.assertIn(self.cluster.hosts.ips[1], endpoints)
        got = last_json(read_text(os.path.join(record["log"], "workerlog.0")))
        self.assertEqual(got["ranks"], 4)
        assert_same_loss(self, got["loss"], ref["loss"], "sbatch and flotilla launch disagree")

    def test_ps_job_of_2_servers_and_2_workers(self) -> None:
        ref = results(launch_reference(os.path.join(self.work, "ref-ps"),
                                       ["--server_num", "2", "--worker_num", "2"],
                                       "dist_fit_a_line", PS_ARGS), "workerlog")
        record = self.submit("ps.sbatch", [bin_path("dist_fit_a_line")] + PS_ARGS, "ps")
        self.assertEqual(record["JobState"], "COMPLETED", self.output(record))
        servers = read_text(os.path.join(record["log"], "endpoints.log")).split(
            "PADDLE_PSERVERS_IP_PORT_LIST:\n")[1].split()
        self.assertEqual([s.split(":")[0] for s in servers], self.cluster.hosts.ips)
        got = results(record["log"], "workerlog")
        self.assertEqual(len(got), 2)
        for worker, expected in zip(got, ref):
            self.assertEqual(worker["test_mse"], expected["test_mse"])
            self.assertEqual(worker["train_mse"], expected["train_mse"])

    def test_srun_tasks_without_a_launcher(self) -> None:
        ref = self.collective_ref
        record = self.submit("tasks.sbatch", [bin_path("train_with_fleet")] + COLLECTIVE_ARGS,
                             "tasks")
        out = self.output(record)
        self.assertEqual(record["JobState"], "COMPLETED", out)
        got = last_json(out)
        self.assertEqual(got["ranks"], 4)
        assert_same_loss(self, got["loss"], ref["loss"], "srun -n 4 and flotilla launch disagree")
        explain = self.cluster.command(["srun", "-N", "2", "-n", "4", "-l", bin_path("flotilla"),
                                        "env", "--explain"], self.env).stdout
        task3 = "\n".join(line[3:] for line in explain.splitlines() if line.startswith("3: "))
        print("srun -N 2 -n 4 flotilla env --explain (task 3):\n" + task3, flush=True)
        self.assertIn("SLURM_PROCID (Slurm)", task3)
        self.assertIn("fnode01,fnode02", task3)

    def test_scancel_stops_every_rank_and_the_checkpoint_loads(self) -> None:
        ckpt = os.path.join(self.work, "ckpt")
        args = [bin_path("train_with_fleet"), "--steps", "1000000", "--hidden", "64", "--seed",
                "7", "--labels", "sum", "--checkpoint_dir", ckpt, "--checkpoint_every", "20"]
        workdir = os.path.join(self.work, "cancel")
        os.makedirs(workdir)
        job = self.cluster.sbatch([f"--chdir={workdir}", f"--output={workdir}/out.txt",
                                   os.path.join(EXAMPLES, "collective.sbatch")] + args, self.env)
        deadline = time.time() + 60
        while len(checkpoints(ckpt)) < 2 and time.time() < deadline:
            time.sleep(0.1)
        self.assertGreaterEqual(len(checkpoints(ckpt)), 2, "no checkpoint within 60 s")
        self.cluster.command(["scancel", job])
        started = time.time()
        record = self.cluster.wait_job(job, timeout=60)
        print(f"scancel: job {job} {record['JobState']} after {time.time() - started:.1f} s",
              flush=True)
        self.assertEqual(record["JobState"], "CANCELLED")
        # Nothing of the job is left: every process in the hosts is a daemon.
        deadline = time.time() + 20
        while time.time() < deadline:
            left = set(self.cluster.hosts.pids()) - set(self.cluster.daemon_pids())
            if not left:
                break
            time.sleep(0.2)
        self.assertEqual(left, set(), [cmdline(p) for p in left])
        newest = checkpoints(ckpt)[-1]
        load = subprocess.run([bin_path("train_with_fleet"), "--hidden", "64", "--seed", "7",
                               "--labels", "sum", "--checkpoint_dir", ckpt, "--steps",
                               str(newest + 1)], capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin"})
        self.assertEqual(load.returncode, 0, load.stderr)
        self.assertIn(f"resumed at step {newest}", load.stdout)


if __name__ == "__main__":
    skip_unless(can_run_slurm())
    unittest.main(verbosity=2)
