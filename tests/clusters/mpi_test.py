"""Open MPI's ``mpirun -np 4`` across two network-namespace hosts starts
train_with_fleet with no launcher: the ranks come from OMPI_COMM_WORLD_*,
the master from ``-x MASTER_ADDR -x MASTER_PORT``, and the job trains to
exactly the loss of ``flotilla launch --nproc_per_node 4``; so does
``mpirun -np 2 flotilla launch --nproc_per_node 2`` (one launcher per host). mpirun reaches
the second host through a launch agent (``--mca plm_rsh_agent``) that runs
its daemon with ``ip netns exec`` instead of ssh."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster_test_util import (COLLECTIVE_ARGS, assert_same_loss, bin_path, last_json, launch_reference,  # noqa: E402
                               make_secret_file, read_text, skip_unless)
from netns_hosts import Hosts, can_make_hosts  # noqa: E402

AGENT = """#!/bin/sh
# mpirun's launch agent: runs the daemon's command line on a namespace host,
# under that host's name, where ssh would log in.
host="$1"; shift
case "$host" in
{cases}
  *) echo "no namespace host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $host; $*"
"""


class MpiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.work = tempfile.mkdtemp(prefix="flotilla-mpi-")
        cls.names = ["mhosta", "mhostb"]
        cls.hosts = Hosts(cls.names)
        cls.agent = os.path.join(cls.work, "agent.sh")
        with open(cls.agent, "w") as f:
            f.write(AGENT.format(cases="\n".join(
                f"  {n}) ns={ns} ;;" for n, ns in zip(cls.names, cls.hosts.netns))))
        os.chmod(cls.agent, 0o755)
        cls.secret = make_secret_file(cls.work)
        cls.ref = last_json(read_text(os.path.join(launch_reference(
            os.path.join(cls.work, "ref"), ["--nproc_per_node", "4"], "train_with_fleet",
            COLLECTIVE_ARGS), "workerlog.0")))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.hosts.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def mpirun(self, np: int, slots: int, program) -> str:
        argv = ["mpirun", "--allow-run-as-root", "-np", str(np), "--host",
                f"mhosta:{slots},mhostb:{slots}", "--mca", "plm_rsh_agent", self.agent,
                "--mca", "oob_tcp_if_include", self.hosts.subnet + "0/24",
                "-x", "MASTER_ADDR=mhosta", "-x", "MASTER_PORT=29533",
                "-x", f"FLOTILLA_JOB_SECRET_FILE={self.secret}"] + program
        run = self.hosts.run(0, argv, timeout=120, hostname="mhosta")
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        return run.stdout + run.stderr

    def test_mpirun_4_ranks_across_two_hosts(self) -> None:
        out = self.mpirun(4, 2, [bin_path("train_with_fleet")] + COLLECTIVE_ARGS)
        got = last_json(out)
        self.assertEqual(got["ranks"], 4)
        assert_same_loss(self, got["loss"], self.ref["loss"], "mpirun and flotilla launch disagree")
        self.assertIn("hierarchical backend", out, "the ranks should see two hosts")

    def test_mpirun_one_launcher_per_host(self) -> None:
        log_dir = os.path.join(self.work, "launchers")
        out = self.mpirun(2, 1, [bin_path("flotilla"), "launch", "--nproc_per_node", "2",
                                 "--log_dir", log_dir, bin_path("train_with_fleet")] +
                          COLLECTIVE_ARGS)
        self.assertIn("one node of 2 (OMPI_COMM_WORLD_SIZE)", out)
        got = last_json(read_text(os.path.join(log_dir, "workerlog.0")))
        self.assertEqual(got["ranks"], 4)
        assert_same_loss(self, got["loss"], self.ref["loss"], "one launcher per host and flotilla launch disagree")


if __name__ == "__main__":
    skip_unless(can_make_hosts() or (None if shutil.which("mpirun") else
                                     "mpirun (openmpi-bin) is not installed"))
    unittest.main(verbosity=2)
