"""Helpers for the observability tests: a `flotilla launch` job in the
background, its processes found through the log dir, and its cleanup by pid."""
from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

BUILD = pathlib.Path(os.environ.get("FLOTILLA_BUILD_DIR", "build")).resolve()
FLOTILLA = BUILD / "bin" / "flotilla"


class Job:
    """`flotilla launch OPTIONS PROGRAM` running in `tmp`; stopped by stop()."""

    def __init__(self, tmp: pathlib.Path, options: list[str], program: list[str]) -> None:
        self.tmp = tmp
        self.log = tmp / "log"
        self.stderr_path = tmp / "launcher.err"
        cmd = [str(FLOTILLA), "launch", "--log_dir", str(self.log), "--quiet", *options, *program]
        with open(self.stderr_path, "w") as err, open(tmp / "launcher.out", "w") as out:
            self.proc = subprocess.Popen(cmd, cwd=tmp, stdout=out, stderr=err)

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def wait_for(self, what: str, check, timeout: float = 120.0):
        """Polls check() until it returns something true; fails naming `what`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            if self.proc.poll() is not None and not check():
                raise AssertionError(f"the job ended before {what}:\n{self.stderr()[-3000:]}")
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}:\n{self.stderr()[-3000:]}")

    def url(self, kind: str) -> str:
        """The launcher's dashboard or metrics address, from its stderr."""
        def find():
            m = re.search(rf"{kind} on (http://[0-9.]+:\d+)/", self.stderr())
            return m.group(1) if m else None
        return self.wait_for(f"the launcher's {kind} address", find, 60)

    def login_url(self) -> str:
        """The dashboard's login URL (it carries the token), from the launcher's stderr."""
        def find():
            m = re.search(r"log in: (http://[0-9.]+:\d+/login\?token=[0-9a-f]+)", self.stderr())
            return m.group(1) if m else None
        return self.wait_for("the dashboard's login URL", find, 60)

    def processes(self) -> list[dict]:
        try:
            return json.loads((self.log / "job_status.json").read_text())["processes"]
        except (OSError, ValueError, KeyError):
            return []

    def pid(self, label: str) -> int:
        return self.wait_for(f"the pid of {label}",
                             lambda: next((p["pid"] for p in self.processes()
                                           if p["label"] == label), None))

    def stop(self) -> None:
        """Stops the launcher, then kills by pid whatever it left."""
        pids = [p["pid"] for p in self.processes()]
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def fetch(url: str) -> tuple[int, str]:
    """(status, body) of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
