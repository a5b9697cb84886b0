"""The kubelet's HTTP probes of one simulated pod: GETs each probe's URL
every 0.1 s until stopped (SIGTERM) and writes a line to stdout each time a
probe's answer changes: ``<kind> <status> <body>`` (status 0: no answer,
as while the container starts).

    k8s_probe.py liveness=http://10.0.0.1:9090/healthz readiness=http://...
"""
from __future__ import annotations

import signal
import sys
import time
import urllib.error
import urllib.request
from typing import Dict, Tuple


def probe(url: str) -> Tuple[int, str]:
    """(status, first line of the body); (0, why) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().strip()
    except OSError as e:
        return 0, type(e).__name__


def main() -> None:
    urls = dict(arg.split("=", 1) for arg in sys.argv[1:])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    last: Dict[str, Tuple[int, str]] = {}
    while not stop:
        for kind, url in urls.items():
            answer = probe(url)
            if last.get(kind) != answer:
                last[kind] = answer
                print(kind, answer[0], answer[1], flush=True)
        time.sleep(0.1)


if __name__ == "__main__":
    main()
