#!/usr/bin/python3
"""Floods the store of a real `flotilla launch` with unauthenticated clients.

Starts `flotilla launch ... sleep` with a known job secret, measures the
launcher's RSS idle, runs the floods of issue 32 against its store while an
authenticated client keeps using it, and prints one JSON line per flood:

  hello_flood    connections that ask for challenges without reading them
  idle           connections that send nothing
  byte_at_a_time one connection sending one byte every 200 ms
  partial_frame  connections each holding a 64 KiB partial frame
  all            every flood above at once

Each line carries the RSS idle and the peak under the flood (MB), how many
flood connections the store closed and how fast, the authenticated
client's slowest request, and the launcher's flotilla_auth_refusals_total
by reason. Used as a bench (full numbers, the default) and by
tests/security/test_store_flood.py (smaller numbers, asserted).

  scripts/store_flood.py --flotilla build/bin/flotilla [--connections 1000]
"""
import argparse
import hashlib
import hmac
import json
import os
import re
import select
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SECRET = "store-flood-secret-0123456789abcdef"
CHALLENGE, HELLO, SET, GET = 8, 1, 2, 3
OK = 0


def frame(body):
    return struct.pack("<I", len(body)) + body


def blob(b):
    return struct.pack("<I", len(b)) + b


def challenge_request(client_nonce):
    # A server of the old protocol ignores the client nonce.
    return frame(bytes([CHALLENGE]) + blob(client_nonce))


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def recv_reply(sock):
    (n,) = struct.unpack("<I", recv_exact(sock, 4))
    return recv_exact(sock, n)


class StoreClient:
    """An authenticated client speaking the wire protocol (wire.h).

    old_protocol: the proof of stores before mutual authentication (over
    the server's nonce only), for measuring them."""

    def __init__(self, port, old_protocol, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:  # the launcher may not be listening yet
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        client_nonce = os.urandom(32)
        self.sock.sendall(challenge_request(client_nonce))
        reply = recv_reply(self.sock)
        assert reply[0] == OK, reply
        (n,) = struct.unpack("<I", reply[1:5])
        nonce = reply[5:5 + n]
        message = b"flotilla-store-hello" + nonce + (b"" if old_protocol else client_nonce)
        proof = hmac.new(SECRET.encode(), message, hashlib.sha256).digest()
        self.sock.sendall(frame(bytes([HELLO]) + blob(proof)))
        reply = recv_reply(self.sock)
        if reply[0] != OK:
            raise ConnectionError("refused")
        if not old_protocol:  # the store proves the secret too
            (n,) = struct.unpack("<I", reply[1:5])
            expected = hmac.new(SECRET.encode(), b"flotilla-store-server" + nonce + client_nonce,
                                hashlib.sha256).digest()
            if not hmac.compare_digest(reply[5:5 + n], expected):
                raise ConnectionError("the store did not prove the secret")

    def set(self, key, value):
        self.sock.sendall(frame(bytes([SET]) + blob(key.encode()) + blob(value)))
        assert recv_reply(self.sock)[0] == OK

    def get(self, key):
        self.sock.sendall(frame(bytes([GET]) + blob(key.encode()) + struct.pack("<q", 5000)))
        reply = recv_reply(self.sock)
        assert reply[0] == OK
        return reply[5:]

    def close(self):
        self.sock.close()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class Launcher:
    """`flotilla launch sleep` hosting the store at a known port."""

    def __init__(self, flotilla, seconds=600):
        self.dir = tempfile.TemporaryDirectory(prefix="store_flood_")
        self.port = free_port()
        env = dict(os.environ, FLOTILLA_JOB_SECRET=SECRET)
        env.pop("FLOTILLA_JOB_SECRET_FILE", None)
        self.proc = subprocess.Popen(
            [flotilla, "launch", "--log_dir", os.path.join(self.dir.name, "log"),
             "--master_port", str(self.port), "--metrics_port", "0", "--quiet",
             "sleep", str(seconds)],
            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.stderr = []
        self.metrics_url = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.stderr.append(line)
                m = re.search(r"metrics on (http://[\d.]+:\d+)/", line)
                if m:
                    self.metrics_url = m.group(1)
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(30)

    def metrics(self):
        with urllib.request.urlopen(self.metrics_url + "/metrics", timeout=10) as r:
            return r.read().decode()

    def refusals(self):
        """flotilla_auth_refusals_total of the store, by reason."""
        out = {}
        for line in self.metrics().splitlines():
            m = re.match(r'flotilla_auth_refusals_total\{([^}]*)\} (\S+)', line)
            if not m or 'service="store"' not in m.group(1):
                continue
            reason = re.search(r'reason="([^"]*)"', m.group(1))
            out[reason.group(1) if reason else "any"] = float(m.group(2))
        return out

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.dir.cleanup()


def connect_many(port, n):
    socks = []
    for _ in range(n):
        try:
            s = socket.socket()
            s.setblocking(True)
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            s.setblocking(False)
            socks.append(s)
        except OSError:
            break
    return socks


def closed(sock):
    """True when the server closed `sock`; reads nothing (a flood that does
    not read its replies must not start reading them here)."""
    p = select.poll()
    p.register(sock, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    return bool(p.poll(0))


class Flood:
    """Flood connections, with what each sent and when the server closed it."""

    def __init__(self, name, socks):
        self.name = name
        self.socks = socks
        self.started = time.monotonic()
        self.closed_at = {}

    def poll(self):
        now = time.monotonic()
        for i, s in enumerate(self.socks):
            if i not in self.closed_at and closed(s):
                self.closed_at[i] = now - self.started

    def send_all(self, data):
        for i, s in enumerate(self.socks):
            if i in self.closed_at:
                continue
            try:
                s.send(data)
            except BlockingIOError:
                pass
            except OSError:
                self.closed_at[i] = time.monotonic() - self.started

    def close(self):
        for s in self.socks:
            s.close()

    def summary(self):
        times = sorted(self.closed_at.values())
        return {
            "connections": len(self.socks),
            "closed": len(times),
            "closed_within_s": round(times[-1], 2) if times else None,
        }


def hello_flood(port, n, megabytes):
    """Connections asking for challenges over and over, never reading."""
    flood = Flood("hello_flood", connect_many(port, n))
    # In small pieces, as a client waiting for each answer would send them:
    # the store reads each piece on its own.
    # 5-byte requests, each answered by a 41-byte challenge before (the
    # probe of issue 32).
    request = frame(bytes([CHALLENGE])) * 800
    budget = megabytes * (1 << 20)
    sent = 0
    while sent < budget and len(flood.closed_at) < len(flood.socks):
        flood.send_all(request)
        sent += len(request) * (len(flood.socks) - len(flood.closed_at))
        time.sleep(0.005)
    flood.poll()
    return flood


def idle_flood(port, n):
    return Flood("idle", connect_many(port, n))


def partial_frame_flood(port, n):
    """Connections each announcing a 64 KiB frame and sending all but a byte."""
    flood = Flood("partial_frame", connect_many(port, n))
    flood.send_all(struct.pack("<I", 64 << 10) + b"x" * ((64 << 10) - 1))
    return flood


class Trickle(threading.Thread):
    """One connection sending a challenge request one byte at a time."""

    def __init__(self, port, seconds):
        super().__init__(daemon=True)
        self.flood = Flood("byte_at_a_time", connect_many(port, 1))
        self.seconds = seconds

    def run(self):
        data = challenge_request(b"c" * 32) * 1000
        for b in data:
            if time.monotonic() - self.flood.started > self.seconds:
                return
            self.flood.send_all(bytes([b]))
            self.flood.poll()
            if self.flood.closed_at:
                return
            time.sleep(0.2)


def old_protocol(port):
    """True when the store at `port` speaks the protocol before mutual
    authentication (it refuses today's proof; costs it one refusal)."""
    try:
        StoreClient(port, False).close()
        return False
    except ConnectionError:
        StoreClient(port, True).close()
        return True


def run_flood(launcher, name, args, old):
    """Runs one flood (or all) for args.seconds; returns its JSON record."""
    port = launcher.port
    client = StoreClient(port, old)
    client.set("warm", b"x")
    gc_settle()
    rss_idle = rss_mb(launcher.proc.pid)
    before = launcher.refusals()
    floods = []
    trickle = None
    if name in ("hello_flood", "all"):
        floods.append(hello_flood(port, args.hello_connections, args.hello_megabytes))
    if name in ("idle", "all"):
        floods.append(idle_flood(port, args.connections))
    if name in ("partial_frame", "all"):
        floods.append(partial_frame_flood(port, args.connections))
    if name in ("byte_at_a_time", "all"):
        trickle = Trickle(port, args.seconds)
        trickle.start()
        floods.append(trickle.flood)
    peak = rss_mb(launcher.proc.pid)
    slowest = 0.0
    served = 0
    connected = 0  # new authenticated clients during the flood
    slowest_connect = 0.0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for f in floods:
            if f is not (trickle.flood if trickle else None):
                f.poll()
        peak = max(peak, rss_mb(launcher.proc.pid))
        t0 = time.monotonic()
        try:
            value = str(served).encode()
            client.set(f"k{served}", value)
            assert client.get(f"k{served}") == value
            served += 1
        except (OSError, AssertionError, ConnectionError):
            pass
        slowest = max(slowest, time.monotonic() - t0)
        t0 = time.monotonic()
        try:
            StoreClient(port, old, timeout=5).close()
            connected += 1
        except (OSError, AssertionError, ConnectionError):
            pass
        slowest_connect = max(slowest_connect, time.monotonic() - t0)
        if all(len(f.closed_at) == len(f.socks) for f in floods):
            break
        time.sleep(0.05)
    if trickle:
        trickle.join()
    after = launcher.refusals()
    record = {
        "flood": name,
        "rss_idle_mb": round(rss_idle, 1),
        "rss_flood_peak_mb": round(peak, 1),
        "rss_growth_mb": round(peak - rss_idle, 1),
        "floods": {f.name: f.summary() for f in floods},
        "authed_requests_served": served,
        "authed_slowest_request_s": round(slowest, 3),
        "authed_new_clients": connected,
        "authed_slowest_connect_s": round(slowest_connect, 3),
        "refusals": {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)},
    }
    for f in floods:
        f.close()
    client.close()
    return record


def gc_settle():
    time.sleep(0.5)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flotilla", default=os.path.join(
        os.environ.get("FLOTILLA_BUILD_DIR", "build"), "bin", "flotilla"))
    p.add_argument("--connections", type=int, default=1000,
                   help="idle and partial-frame connections (default 1000)")
    p.add_argument("--hello_connections", type=int, default=10)
    p.add_argument("--hello_megabytes", type=int, default=9,
                   help="challenge requests sent in all (default 9 MB)")
    p.add_argument("--seconds", type=float, default=30,
                   help="longest a flood runs (default 30)")
    p.add_argument("--floods", default="hello_flood,idle,byte_at_a_time,partial_frame,all")
    args = p.parse_args(argv)
    raise_fd_limit()
    launcher = Launcher(args.flotilla)
    try:
        old = old_protocol(launcher.port)
        for name in args.floods.split(","):
            print(json.dumps(run_flood(launcher, name, args, old)), flush=True)
    finally:
        launcher.stop()


if __name__ == "__main__":
    sys.exit(main())
