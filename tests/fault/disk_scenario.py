"""ckpt_disk_full: the checkpoint disk fills up half-way through a save.

The checkpoint directory is a small tmpfs mounted in a private mount
namespace held by a ``cat`` started with ``unshare -m`` (it ends when the
driver closes its stdin, or by pid at teardown); the job runs in that
namespace through ``nsenter``, the driver reads it through
/proc/<holder>/root. Once the job saved a checkpoint, the disk is filled so
that less than half of one checkpoint's size stays free: the next save
runs out of space part-way. It must fail naming the disk error, the job
must stop with ABORT, the older checkpoints must stay loadable and the
failed save's temporary directory must be gone. The filler is removed
before the next run.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from typing import Dict, Optional, Sequence

from fault_job import Launcher
from fault_result import Fault
from fault_scenario import abort_text
from ps_scenarios import GRACE_S, PsScenario, stray_entries

TMPFS_SIZE = "64m"


def tree_bytes(path: str) -> int:
    """Bytes of the regular files under ``path``."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


class DiskFull(PsScenario):
    name = "ckpt_disk_full"
    checkpoint_every = 10
    delay_s = (0.0, 0.5)
    exit_bound_s = GRACE_S + 20  # the next save comes within 10 steps

    def __init__(self, work_dir, rng) -> None:
        super().__init__(work_dir, rng)
        self.holder: Optional[subprocess.Popen] = None
        self.filler = ""
        self.why_not = ""

    @property
    def ckpt_view(self) -> str:
        if self.holder is None:
            return self.ckpt_dir
        return f"/proc/{self.holder.pid}/root{self.ckpt_dir}"

    def prefix(self) -> Sequence[str]:
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--"]

    def setup(self) -> None:
        try:
            self.holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "cat"],
                                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE)
        except OSError as e:
            self.why_not = f"cannot start unshare -m: {e}"
            return
        time.sleep(0.2)
        mount = subprocess.run(["nsenter", "-t", str(self.holder.pid), "-m", "--", "mount", "-t",
                                "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", self.ckpt_dir],
                               capture_output=True, text=True)
        if self.holder.poll() is not None or mount.returncode != 0:
            self.why_not = ("cannot mount a tmpfs in a private mount namespace (unshare -m, "
                            f"mount -t tmpfs): {mount.stderr.strip() or 'unshare exited'}")
            self.teardown()

    def skip(self) -> str:
        return self.why_not

    def teardown(self) -> None:
        if self.holder is not None:
            self.holder.stdin.close()  # the namespace and its tmpfs go with the holder
            try:
                self.holder.wait(5)
            except subprocess.TimeoutExpired:
                self.holder.kill()
                self.holder.wait()
            self.holder = None

    def inject(self, fault: Fault, pids: Dict[str, int], job: Launcher):
        latest = os.path.join(self.ckpt_view, f"step-{max(self.steps())}")
        size = tree_bytes(latest)
        self.filler = os.path.join(self.ckpt_view, "filler")
        leave = max(4096, size // 3)
        filled = self.fill(leave)
        fault.action = f"fill the checkpoint disk #{filled} bytes, {leave} left free, " \
                       f"checkpoint {size} bytes"
        cause = re.compile(r"No space left on device")
        return time.monotonic(), lambda: cause.search(abort_text(job.stderr())) is not None

    def fill(self, leave: int) -> int:
        """Fills the disk until ``leave`` bytes stay free (the job writes
        meanwhile: a fill that meets ENOSPC tries again smaller)."""
        filled = 0
        with open(self.filler, "wb") as f:
            for _ in range(20):
                stat = os.statvfs(self.ckpt_view)
                more = stat.f_bavail * stat.f_frsize - leave
                if more <= 0:
                    break
                try:
                    os.posix_fallocate(f.fileno(), filled, more)
                    filled += more
                except OSError:
                    continue
        return filled

    def steps(self):
        names = os.listdir(self.ckpt_view)
        return [int(n[5:]) for n in names if re.fullmatch(r"step-\d+", n)]

    def undo(self) -> None:
        if self.filler:
            try:
                os.unlink(self.filler)
            except OSError:
                pass
            self.filler = ""

    def check_checkpoints(self, fault: Fault, rank0_pid: int, saved: bool) -> None:
        left = [n for n in stray_entries(self.ckpt_view) if n != "filler"]
        fault.check(not left, f"the failed save left files behind: {left}")
