"""The HTTP servers and listeners under a hostile local user (issue 32,
findings 3, 5 and 6): probes answered while slow and idle clients hang on,
every listener of a PS, heter and collective job on loopback by default, and
the dashboard's state and logs behind its token."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import pathlib
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import sys
import urllib.request

import pytest

from jobs import BUILD, FLOTILLA, Job, fetch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fault"))
import fault_proc  # noqa: E402

SLOW_CLIENTS = 10
IDLE_CLIENTS = 100
PROBE_BUDGET_S = 0.100


class Dashboard:
    """`flotilla dashboard LOG_DIR --port 0 [--open]`, stopped by its pid."""

    def __init__(self, log_dir: pathlib.Path, *options: str) -> None:
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([str(FLOTILLA), "dashboard", str(log_dir), "--port", "0",
                                      *options], stderr=self.err)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.err.seek(0)
            m = re.search(rb"http://([0-9.]+):(\d+)/", self.err.read())
            if m:
                self.host, self.port = m.group(1).decode(), int(m.group(2))
                return
            assert self.proc.poll() is None, "flotilla dashboard ended"
            time.sleep(0.05)
        raise AssertionError("flotilla dashboard printed no address")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def probe(host: str, port: int, path: str = "/healthz", timeout: float = 2.0) -> tuple[str, float]:
    """(status line or why not, seconds) of one GET on a fresh connection."""
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := s.recv(4096):
                data += chunk
    except OSError as e:
        return f"no answer ({e})", time.monotonic() - start
    return data.split(b"\r\n", 1)[0].decode(), time.monotonic() - start


def test_healthz_answered_while_slow_and_idle_clients_hang_on(tmp_path: pathlib.Path) -> None:
    (tmp_path / "log").mkdir()
    dash = Dashboard(tmp_path / "log")
    slow, idle = [], []
    try:
        for _ in range(IDLE_CLIENTS):
            idle.append(socket.create_connection((dash.host, dash.port)))
        for _ in range(SLOW_CLIENTS):
            slow.append(socket.create_connection((dash.host, dash.port)))
        request = b"GET /metrics HTTP/1.1\r\nHost: slow\r\n\r\n"
        latencies, start = [], time.monotonic()
        for i in range(10):  # one byte per slow client, then a probe, every 0.3 s
            for s in slow:
                try:
                    s.send(request[i:i + 1])
                except OSError:
                    pass
            status, seconds = probe(dash.host, dash.port)
            latencies.append(seconds)
            print(json.dumps({"probe": i, "status": status, "ms": round(seconds * 1000, 1)}))
            assert status == "HTTP/1.1 200 OK", status
            time.sleep(0.3)
        print(json.dumps({"slow_clients": SLOW_CLIENTS, "idle_clients": IDLE_CLIENTS,
                          "healthz_max_ms": round(max(latencies) * 1000, 1)}))
        assert max(latencies) < PROBE_BUDGET_S
        # The server gives up on them: each slow client is closed once its
        # request deadline (5 s from connecting) has passed.
        for s in slow:
            s.settimeout(max(0.1, 8 - (time.monotonic() - start)))
            try:
                while s.recv(4096):
                    pass
                closed = True
            except socket.timeout:
                closed = False
            except OSError:
                closed = True
            assert closed, "a slow client was still connected 8 s after it started"
        status, text = fetch(dash.url + "/metrics")
        assert status == 200
        assert re.search(r'flotilla_http_refusals_total\{reason="request_timeout"\} ([0-9.]+)', text)
    finally:
        for s in slow + idle:
            s.close()
        dash.stop()


def secret_token(purpose: str = "flotilla dashboard") -> str:
    secret = os.environ["FLOTILLA_JOB_SECRET"].encode()
    return hmac.new(secret, purpose.encode(), hashlib.sha256).hexdigest()


def get(url: str, headers: dict | None = None) -> tuple[int, str, dict]:
    """(status, body, headers) without following redirects."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


@pytest.fixture
def shared_log_dir():
    """A log dir other users could enter, with rank 0's log private (umask
    077) and rank 1's world-readable."""
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        log = pathlib.Path(d)
        log.chmod(0o755)
        for rank, mode in ((0, 0o600), (1, 0o644)):
            path = log / f"workerlog.{rank}"
            path.write_text(f"flotilla launch: rank {rank} /usr/bin/train --secret-flag\n")
            path.chmod(mode)
        status = {"processes": [
            {"label": f"rank {r}", "role": "trainer", "id": r, "pid": 0, "state": "exited",
             "status": "exit code 0", "log": str(log / f"workerlog.{r}")} for r in (0, 1)]}
        (log / "job_status.json").write_text(json.dumps(status))
        yield log


def test_dashboard_state_and_logs_need_the_token(shared_log_dir: pathlib.Path) -> None:
    dash = Dashboard(shared_log_dir)
    try:
        token = secret_token()
        results = {
            "state_without_token": get(dash.url + "/api/state")[0],
            "log_without_token": get(dash.url + "/log/rank0")[0],
            "state_wrong_token": get(dash.url + "/api/state",
                                     {"Authorization": "Bearer " + "0" * 64})[0],
            "state_bearer": get(dash.url + "/api/state", {"Authorization": "Bearer " + token})[0],
            "log_cookie": get(dash.url + "/log/rank0",
                              {"Cookie": "flotilla_dashboard=" + token})[0],
            "page": get(dash.url + "/")[0],
        }
        login = get(dash.url + "/login?token=" + token)
        results["login"] = login[0]
        print(json.dumps(results))
        assert results == {"state_without_token": 401, "log_without_token": 401,
                           "state_wrong_token": 401, "state_bearer": 200, "log_cookie": 200,
                           "page": 200, "login": 303}
        assert "flotilla_dashboard=" + token in login[2].get("Set-Cookie", "")
        assert get(dash.url + "/login?token=" + "1" * 64)[0] == 401
    finally:
        dash.stop()


def test_open_dashboard_serves_only_world_readable_logs(shared_log_dir: pathlib.Path) -> None:
    dash = Dashboard(shared_log_dir, "--open")
    try:
        status, body, _ = get(dash.url + "/api/state")
        tails = {p["label"]: p["log_tail"] for p in json.loads(body)["processes"]}
        results = {"state": status, "private_log": get(dash.url + "/log/rank0")[0],
                   "readable_log": get(dash.url + "/log/rank1")[0],
                   "private_log_with_token": get(
                       dash.url + "/log/rank0",
                       {"Authorization": "Bearer " + secret_token()})[0]}
        print(json.dumps({**results, "tails": tails}))
        assert results == {"state": 200, "private_log": 403, "readable_log": 200,
                           "private_log_with_token": 200}
        assert tails["rank 0"] == [] and tails["rank 1"]
    finally:
        dash.stop()


# Listeners: every LISTEN socket of the launcher and each process it started.

def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].removeprefix("::ffff:")  # v4-mapped on a v6 socket
    return host.startswith("127.") or host == "::1"


def job_listeners(job: Job, expected: int) -> dict:
    """{label: [host:port]} once `expected` processes serve /metrics and
    training went on; the launcher as "launcher"."""
    def ready():
        urls = list((job.log / "metrics").glob("*.url"))
        procs = job.processes()
        return len(urls) >= expected and len(procs) >= expected and all(
            p["state"] == "running" for p in procs)
    job.wait_for(f"{expected} processes serving /metrics", ready, 120)
    time.sleep(1)  # a moment for every server (gloo pairs, heter service) to listen
    found = {"launcher": fault_proc.listening_addresses_of(job.proc.pid)}
    for p in job.processes():
        found[p["label"]] = fault_proc.listening_addresses_of(p["pid"])
    assert job.proc.poll() is None and all(p["state"] == "running" for p in job.processes()), \
        "the job ended while its listeners were listed: make it train longer"
    return found


@pytest.mark.parametrize("kind,options,program", [
    ("collective", ["--devices", "0,1"],
     ["train_with_fleet", "--steps", "100000", "--hidden", "64"]),
    ("ps", ["--server_num", "1", "--worker_num", "2"],
     ["wide_and_deep", "--train_samples", "20000000", "--hidden_size", "32"]),
    ("ps-heter", ["--server_num", "1", "--worker_num", "2", "--heter_worker_num", "1"],
     ["wide_and_deep", "--mode", "async", "--train_samples", "20000000", "--hidden_size", "32"]),
])
def test_every_listener_of_a_job_is_on_loopback(tmp_path: pathlib.Path, kind: str,
                                                options: list[str], program: list[str]) -> None:
    expected = 2 if kind == "collective" else 3 if kind == "ps" else 4
    job = Job(tmp_path, ["--metrics_port", "0", *options],
              [str(BUILD / "bin" / program[0]), *program[1:]])
    try:
        found = job_listeners(job, expected)
    finally:
        job.stop()
    for label, addresses in found.items():
        print(json.dumps({"job": kind, "process": label, "listens": addresses}))
    exposed = {label: [a for a in addresses if not is_loopback(a)]
               for label, addresses in found.items()}
    assert not any(exposed.values()), f"{kind} job listens off loopback: {exposed}"
    assert all(found.values()), f"a process listens nowhere (not serving /metrics?): {found}"


def make_pki(d: pathlib.Path) -> dict:
    """A CA and a certificate it signed for 127.0.0.1 (as tests/tls_test.cc makes)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run = lambda *a: subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)
    run("req", "-x509", *ec, "-days", "1", "-subj", "/CN=test CA", "-keyout", "ca.key",
        "-out", "ca.pem")
    run("req", *ec, "-subj", "/CN=localhost", "-keyout", "node.key", "-out", "node.csr")
    (d / "node.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                "extendedKeyUsage=serverAuth,clientAuth\n"
                                "basicConstraints=CA:FALSE\n")
    run("x509", "-req", "-days", "1", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-extfile", "node.ext", "-out", "node.pem")
    return {"ca": d / "ca.pem", "cert": d / "node.pem", "key": d / "node.key"}


@pytest.mark.skipif(not os.path.exists("/usr/bin/openssl"), reason="no /usr/bin/openssl")
def test_metrics_off_loopback_in_a_tls_job_are_https(tmp_path: pathlib.Path) -> None:
    pki = make_pki(tmp_path)
    job = Job(tmp_path, ["--metrics_port", "0", "--metrics_host", "0.0.0.0",
                         "--tls_cert", str(pki["cert"]), "--tls_key", str(pki["key"]),
                         "--tls_ca", str(pki["ca"]), "--devices", "0,1"],
              [str(BUILD / "bin" / "train_with_fleet"), "--steps", "100000", "--hidden", "64"])
    try:
        port = int(job.wait_for("the launcher's metrics address", lambda: (
            m := re.search(r"metrics on https://0\.0\.0\.0:(\d+)/", job.stderr())) and m.group(1)))
        url_file = job.log / "metrics" / "rank0.url"
        rank0 = job.wait_for("rank 0's metrics address",
                             lambda: url_file.exists() and url_file.read_text().strip())
        context = ssl.create_default_context(cafile=str(pki["ca"]))
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context,
                                    timeout=10) as r:
            launcher = (r.status, r.read().decode().strip())
        plain, _ = probe("127.0.0.1", port)
        rank0_port = int(rank0.rsplit(":", 1)[1])
        with urllib.request.urlopen(f"https://127.0.0.1:{rank0_port}/metrics", context=context,
                                    timeout=10) as r:
            rank = r.status
        print(json.dumps({"launcher_https_healthz": launcher, "launcher_plain_http": plain,
                          "rank0_url": rank0, "rank0_https_metrics": rank}))
        assert launcher == (200, "ok")
        assert not plain.startswith("HTTP/1.1 200"), plain
        assert rank0.startswith("https://") and rank == 200
    finally:
        job.stop()
