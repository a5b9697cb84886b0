"""Paddle's ``fleet.base.private_helper_function``: waiting for servers."""

import socket
import sys
import time
from typing import Sequence


def wait_server_ready(endpoints: Sequence[str], poll_seconds: float = 3.0) -> None:
    """Returns once every ``host:port`` in ``endpoints`` accepts TCP
    connections, polling every ``poll_seconds`` and saying on stderr which
    are not ready yet (as Paddle's does). Raises ValueError for an endpoint
    that is not ``host:port``."""
    pending = []
    for ep in endpoints:
        host, sep, port = str(ep).rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"wait_server_ready: endpoint {ep!r} is not host:port")
        pending.append((host, int(port)))
    while pending:
        not_ready = []
        for host, port in pending:
            try:
                with socket.create_connection((host, port), timeout=2.0):
                    pass
            except OSError:
                not_ready.append((host, port))
        pending = not_ready
        if pending:
            sys.stderr.write(f"server not ready, wait {poll_seconds} sec to retry...\n"
                             f"not ready endpoints: {[f'{h}:{p}' for h, p in pending]}\n")
            sys.stderr.flush()
            time.sleep(poll_seconds)


__all__ = ["wait_server_ready"]
