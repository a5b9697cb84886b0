"""The merged timeline of real jobs (issue 14's must-show).

Runs ``flotilla launch --timeline`` on seed 001's ``train_with_fleet`` (2
ranks) and on ``wide_and_deep`` (2 servers x 2 workers) and checks the file
with Python's json: every process present, collectives linked across ranks by
flow events, spans ordered as the code requires, and clocks aligned within
1 ms on loopback; a step window, the size bound (ring mode) and a rank
killed mid-run.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
from collections import defaultdict

from jobs import Job

BUILD = pathlib.Path(os.environ.get("FLOTILLA_BUILD_DIR", "build")).resolve()
FLOTILLA = BUILD / "bin" / "flotilla"


def launch(tmp: pathlib.Path, options: list[str], program: list[str]) -> dict:
    """Runs a job with --timeline and returns the merged trace."""
    out = tmp / "job.json"
    cmd = [str(FLOTILLA), "launch", "--log_dir", str(tmp / "log"), "--timeline", str(out),
           "--quiet", *options, *program]
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "collectives linked" in proc.stderr, proc.stderr[-2000:]
    return json.loads(out.read_text())


def process_names(events: list[dict]) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "process_name"}


def thread_names(events: list[dict]) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def spans(events: list[dict], cat: str) -> list[dict]:
    return [e for e in events if e["ph"] == "X" and e.get("cat") == cat]


def assert_nested(events: list[dict]) -> None:
    """Spans on one thread nest (what Perfetto requires): none ends inside another."""
    rows: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            rows[(e["pid"], e["tid"])].append(e)
    eps = 0.002  # the writer's microsecond rounding
    for row, row_spans in rows.items():
        row_spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[float] = []
        for e in row_spans:
            while stack and e["ts"] >= stack[-1] - eps:
                stack.pop()
            end = e["ts"] + e["dur"]
            assert not stack or end <= stack[-1] + eps, f"span {e['name']} on {row} crosses its parent"
            stack.append(end)


def assert_clocks(trace: dict, labels: set[str]) -> None:
    clock = trace["otherData"]["clock"]
    for label in labels:
        c = clock[label]
        assert 0 <= c["error_ns"] <= 1_000_000, (label, c)
        # One host: every process shares CLOCK_MONOTONIC, so the measured
        # offset must be within its error (and the 1 ms skew budget).
        assert abs(c["offset_ns"]) <= max(c["error_ns"], 1000) + 1_000_000, (label, c)
    assert trace["otherData"]["max_clock_error_ns"] <= 1_000_000


def test_collective_job(tmp_path: pathlib.Path) -> None:
    trace = launch(tmp_path, ["--devices", "0,1"],
                   [str(BUILD / "bin" / "train_with_fleet"), "--steps", "12"])
    events = trace["traceEvents"]
    procs = process_names(events)
    assert {"launcher 0", "rank 0", "rank 1"} <= set(procs.values())
    rank_pid = {name: pid for pid, name in procs.items()}
    threads = thread_names(events)
    assert any(name.startswith("comm 0") for name in threads.values()), threads

    # Every rank ran the same collectives; each is linked rank 0 -> rank 1.
    collectives = [e for e in spans(events, "collective") if "seq" in e.get("args", {})]
    by_key = defaultdict(dict)
    for e in collectives:
        a = e["args"]
        by_key[(a["group"], a["comm"], a["seq"])][e["pid"]] = e
    assert len(by_key) >= 12
    assert all(len(v) == 2 for v in by_key.values()), "a collective missing on one rank"
    for per_rank in by_key.values():
        a, b = per_rank.values()
        assert (a["name"], a["args"]["bytes"], a["args"]["bucket"]) == \
               (b["name"], b["args"]["bytes"], b["args"]["bucket"])
    flows = defaultdict(list)
    for e in events:
        if e["ph"] in "sf" and e.get("cat") == "collective":
            flows[e["id"]].append(e)
    assert len(flows) == len(by_key)
    for flow in flows.values():
        assert sorted(e["ph"] for e in flow) == ["f", "s"]
        start, end = sorted(flow, key=lambda e: e["ph"] != "s")
        assert start["pid"] == rank_pid["rank 0"] and end["pid"] == rank_pid["rank 1"]
        assert end.get("bp") == "e"
        for point in flow:  # each arrow end sits inside a collective span of its thread
            assert any(c["pid"] == point["pid"] and c["tid"] == point["tid"]
                       and c["ts"] <= point["ts"] <= c["ts"] + c["dur"] for c in collectives)

    # Comm and compute spans as the code orders them: an executor runs one op
    # at a time, a communicator one collective at a time, and waiting for
    # collective #k ends only after #k ended.
    assert_nested(events)
    for pid in (rank_pid["rank 0"], rank_pid["rank 1"]):
        waits = [e for e in spans(events, "comm_wait") if e["pid"] == pid and e["args"]["seq"] > 0]
        assert waits, "no waits for asynchronous all-reduces"
        ends = {(c["args"]["group"], c["args"]["comm"], c["args"]["seq"]): c["ts"] + c["dur"]
                for c in collectives if c["pid"] == pid}
        for w in waits:
            matching = [end for (_, _, seq), end in ends.items() if seq == w["args"]["seq"]]
            assert matching and any(w["ts"] + w["dur"] >= end - 0.01 for end in matching), w
        ops = spans(events, "op")
        assert any(o["pid"] == pid and o["name"] == "c_allreduce_start" for o in ops)
    assert_clocks(trace, {"rank 0", "rank 1"})


def test_parameter_server_job(tmp_path: pathlib.Path) -> None:
    trace = launch(tmp_path, ["--server_num", "2", "--worker_num", "2"],
                   [str(BUILD / "bin" / "wide_and_deep"), "--train_samples", "1500",
                    "--test_samples", "300", "--hidden_size", "32", "--log_every", "10"])
    events = trace["traceEvents"]
    procs = process_names(events)
    assert {"launcher 0", "rank 0", "rank 1", "server 0", "server 1"} <= set(procs.values())
    by_name = {name: pid for pid, name in procs.items()}
    rpcs = spans(events, "rpc")
    for rank in ("rank 0", "rank 1"):
        mine = [e for e in rpcs if e["pid"] == by_name[rank]]
        assert {"PullSparse", "PushSparse", "PullDense", "PushDense"} <= {e["name"] for e in mine}
        assert any(e["args"]["table"] and e["args"]["keys"] > 0 for e in mine
                   if e["name"] == "PullSparse")
    served = spans(events, "serve")
    for server in ("server 0", "server 1"):
        assert any(e["pid"] == by_name[server] and e["name"] == "PullSparse" for e in served)
    threads = thread_names(events)
    calls = spans(events, "rpc_call")
    assert calls and all(threads[(e["pid"], e["tid"])].startswith("rpc → ") for e in calls)
    assert_nested(events)
    assert_clocks(trace, {"rank 0", "rank 1", "server 0", "server 1"})


def test_step_window(tmp_path: pathlib.Path) -> None:
    """--timeline_steps 20-30: every rank traces those steps and no other."""
    trace = launch(tmp_path, ["--devices", "0,1", "--timeline_steps", "20-30"],
                   [str(BUILD / "bin" / "train_with_fleet"), "--steps", "50", "--hidden", "64"])
    events = trace["traceEvents"]
    rank_pid = {name: pid for pid, name in process_names(events).items()}
    for rank in ("rank 0", "rank 1"):
        steps = [e for e in spans(events, "step") if e["pid"] == rank_pid[rank]]
        assert sorted(e["args"]["run"] for e in steps) == list(range(20, 31)), rank
        first = min(e["ts"] for e in steps)
        last = max(e["ts"] + e["dur"] for e in steps)
        ops = [e for e in spans(events, "op") if e["pid"] == rank_pid[rank]]
        assert ops and all(first - 1 <= o["ts"] <= last + 1 for o in ops), rank


def test_a_killed_rank_leaves_a_bounded_timeline_that_loads(tmp_path: pathlib.Path) -> None:
    """Ring mode (--timeline_max_mb 1) keeps each process's newest events
    within the bound; SIGKILL of a rank leaves its segments cut mid-write,
    and the launcher still merges a file that loads, that rank included."""
    out = tmp_path / "job.json"
    job = Job(tmp_path, ["--devices", "0,1", "--timeline", str(out), "--timeline_max_mb", "1"],
              [str(BUILD / "bin" / "train_with_fleet"), "--steps", "100000000", "--hidden", "64"])
    try:
        rotated = job.log / "timeline" / "rank1.json.seg2"
        job.wait_for("rank 1's timeline to pass its bound twice", rotated.exists, 120)
        os.kill(job.pid("rank 1"), signal.SIGKILL)
        assert job.proc.wait(60) != 0
    finally:
        job.stop()
    assert "collectives linked" in job.stderr(), job.stderr()[-3000:]
    left = list((job.log / "timeline").glob("rank1.json.seg*"))
    assert left and sum(p.stat().st_size for p in left) <= (1 << 20) + (64 << 10), left
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    rank_pid = {name: pid for pid, name in process_names(events).items()}
    assert {"rank 0", "rank 1", "launcher 0"} <= set(rank_pid)
    ops = [e for e in spans(events, "op") if e["pid"] == rank_pid["rank 1"]]
    assert len(ops) > 1000
    assert_nested(events)
