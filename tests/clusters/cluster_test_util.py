"""What the cluster tests share: where the build is, reference runs of the
training examples under ``flotilla launch``, and reading their results."""
from __future__ import annotations

import json
import math
import os
import secrets
import subprocess
import sys
from typing import Dict, List, Optional

BUILD = os.environ.get("FLOTILLA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
SOURCE = os.environ.get("FLOTILLA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
SKIP_CODE = 77  # ctest's SKIP_RETURN_CODE for these tests


def bin_path(name: str) -> str:
    return os.path.join(BUILD, "bin", name)


def assert_same_loss(test, got: float, ref: float, what: str) -> None:
    """The loss of a 2 hosts x 2 ranks job against the reference launched as
    4 ranks on one host: the hierarchical all-reduce sums two per host and
    then the hosts' sums, the reference four on one host, so float rounding
    may differ in the last bits (relative 1e-6); anything more is a bug."""
    test.assertTrue(math.isclose(got, ref, rel_tol=1e-6), f"{what}: loss {got!r} vs {ref!r}")


# A small, seeded run: every way of starting it must give the same loss.
COLLECTIVE_ARGS = ["--steps", "20", "--hidden", "64", "--warmup", "2", "--seed", "7",
                   "--labels", "sum"]
PS_ARGS = ["--epochs", "5", "--mode", "sync"]


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def cmdline(pid: int) -> str:
    """A process's command line, or "" once it is gone."""
    try:
        return read_text(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
    except OSError:
        return ""


def last_json(text: str) -> Dict:
    """The JSON object on the last line of ``text`` that starts with '{'."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON result line in:\n{text[-2000:]}")


def results(log_dir: str, prefix: str) -> List[Dict]:
    """The JSON result of every ``prefix*`` log in ``log_dir`` that printed one."""
    out = []
    for name in sorted(os.listdir(log_dir)):
        if name.startswith(prefix):
            text = read_text(os.path.join(log_dir, name))
            if any(line.startswith("{") for line in text.splitlines()):
                out.append(last_json(text))
    return out


def make_secret_file(directory: str) -> str:
    """A job secret (docs/security.md) in ``directory``/job.secret, mode 0600,
    as a user makes one for a job of several nodes."""
    path = os.path.join(directory, "job.secret")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


def launch_reference(log_dir: str, options: List[str], program: str, args: List[str]) -> str:
    """Runs ``flotilla launch`` on this machine; returns the log dir."""
    argv = [bin_path("flotilla"), "launch", "--quiet", "--log_dir", log_dir] + options + \
           [bin_path(program)] + args
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"reference run failed: {r.stderr[-2000:]}")
    return log_dir


def skip_unless(why: Optional[str]) -> None:
    """Exits with SKIP_CODE (ctest shows the test as skipped) saying why: a
    missing external engine. A program of this tree that is not built fails
    the test instead (exit 1)."""
    if why:
        print(f"SKIPPED: {why}", flush=True)
        sys.exit(SKIP_CODE)
    for program in ("flotilla", "train_with_fleet", "dist_fit_a_line"):
        if not os.access(bin_path(program), os.X_OK):
            print(f"FAILED: {bin_path(program)} is not built", flush=True)
            sys.exit(1)
