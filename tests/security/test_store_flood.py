"""The store of a real `flotilla launch` under unauthenticated floods
(issue 32, finding 2), with scripts/store_flood.py at test size: every
flood connection is closed within the hello deadline, the launcher's RSS
stays within 16 MB of idle, authenticated clients are served and accepted
throughout, and every close is counted in /metrics with its reason."""
import argparse
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import store_flood  # noqa: E402

HELLO_DEADLINE_S = 5.0
SLACK_S = 3.0  # a busy machine's scheduling


@pytest.fixture(scope="module")
def launcher():
    flotilla = os.path.join(os.environ.get("FLOTILLA_BUILD_DIR", "build"), "bin", "flotilla")
    store_flood.raise_fd_limit()
    launcher = store_flood.Launcher(flotilla, seconds=120)
    yield launcher
    launcher.stop()


def test_every_flood_at_once(launcher):
    args = argparse.Namespace(connections=300, hello_connections=10, hello_megabytes=9,
                              seconds=HELLO_DEADLINE_S + SLACK_S + 2)
    old = store_flood.old_protocol(launcher.port)
    record = store_flood.run_flood(launcher, "all", args, old)
    print(json.dumps(record))
    assert not old, "the store does not prove the secret (mutual authentication)"
    for name, flood in record["floods"].items():
        assert flood["closed"] == flood["connections"], (name, record)
        assert flood["closed_within_s"] <= HELLO_DEADLINE_S + SLACK_S, (name, record)
    assert record["rss_growth_mb"] < 16, record
    assert record["authed_requests_served"] > 0, record
    assert record["authed_new_clients"] > 0, record
    refusals = record["refusals"]
    for reason in ("bad_request", "oversized_frame", "hello_timeout"):
        assert refusals.get(reason, 0) > 0, (reason, record)
    closed = sum(f["connections"] for f in record["floods"].values())
    assert sum(refusals.values()) >= closed, record
