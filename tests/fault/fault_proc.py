"""What a fault leaves behind, read from /proc and /dev/shm.

A job started by the fault driver carries ``FLOTILLA_FAULT_TAG=<tag>`` in its
environment; every process it starts inherits it, so the processes of a job
(launchers, trainers, servers and whatever they started) are found by that
tag even after they were reparented. Listening ports are read from a
network namespace's /proc/net/tcp{,6}; shared-memory segments of a job carry
its ``--job_id`` in their names.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from typing import Dict, Iterable, List, Optional, Set

TAG_VARIABLE = "FLOTILLA_FAULT_TAG"
SHM_DIR = "/dev/shm"
_TCP_LISTEN = "0A"


def tagged_pids(tag: str) -> Set[int]:
    """Live (non-zombie) processes whose environment holds ``tag``."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    out: Set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0") and alive(pid):
                    out.add(pid)
        except OSError:
            continue
    return out


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def state(pid: int) -> str:
    """The one-letter state of ``pid`` (R, S, T, Z...), or "" when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def describe(pid: int) -> str:
    """``pid`` with its command line, for messages."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"pid {pid} ({cmd[:160]})"


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILLs each pid still alive (cleanup by pid)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_gone(tag: str, timeout: float) -> Set[int]:
    """Waits until no process carries ``tag``; returns the ones left."""
    deadline = time.monotonic() + timeout
    while True:
        left = tagged_pids(tag)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def _socket_inodes(pid: int) -> Set[str]:
    inodes: Set[str] = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
    return inodes


def _tcp_tables(netns: Optional[str]) -> str:
    if netns is None:
        text = ""
        for name in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(name) as f:
                    text += f.read()
            except OSError:
                pass
        return text
    result = subprocess.run(["ip", "netns", "exec", netns, "cat", "/proc/net/tcp",
                             "/proc/net/tcp6"], capture_output=True, text=True)
    return result.stdout


def listening(netns: Optional[str] = None) -> Dict[str, int]:
    """Socket inode → port of every TCP socket listening in ``netns``
    (None: this process's namespace)."""
    out: Dict[str, int] = {}
    for line in _tcp_tables(netns).splitlines():
        fields = line.split()
        if len(fields) < 10 or fields[3] != _TCP_LISTEN:
            continue
        out[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
    return out


def listening_ports_of(pids: Iterable[int], netns: Optional[str] = None) -> Set[int]:
    """The ports ``pids`` listen on (in ``netns``)."""
    table = listening(netns)
    ports: Set[int] = set()
    for pid in pids:
        ports |= {table[i] for i in _socket_inodes(pid) if i in table}
    return ports


def _address(hex_addr: str) -> str:
    """"0100007F:1F90" (a /proc/net/tcp{,6} column) → "127.0.0.1:8080"."""
    addr, port = hex_addr.split(":")
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        host = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:
        host = socket.inet_ntop(socket.AF_INET6,
                                b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return f"{host}:{int(port, 16)}"


def listening_addresses_of(pid: int) -> List[str]:
    """host:port of every TCP socket ``pid`` listens on (v4 and v6), sorted."""
    inodes = _socket_inodes(pid)
    out = []
    for line in _tcp_tables(None).splitlines():
        fields = line.split()
        if len(fields) >= 10 and fields[3] == _TCP_LISTEN and fields[9] in inodes:
            out.append(_address(fields[1]))
    return sorted(out)


def still_listening(ports: Set[int], netns: Optional[str] = None) -> Set[int]:
    """Which of ``ports`` something still listens on (in ``netns``)."""
    return ports & set(listening(netns).values())


def shm_segments(job_id: str) -> List[str]:
    """Segments in /dev/shm whose names carry ``job_id``."""
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if job_id in n)
    except OSError:
        return []
