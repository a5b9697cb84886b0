#!/usr/bin/env python3
"""Fault loops: inject faults into running Flotilla jobs for a time budget
and check that each one ends as required (fault_scenario.py says how).

    python3 tests/fault/fault_loop.py --budget_s 1200 --faults_per_scenario 60

Scenarios run round-robin, one fault each per round, until the budget is
spent or each reached --faults_per_scenario. Every fault that did not end
as required prints why; at the end each scenario prints one JSON line:

    {"scenario": "ps_kill_sync", "faults": 12, "ok": 12, "detect_ms_p50": ...,
     "detect_ms_p99": ..., "ckpt_steps_lost_max": ..., ...}

Exit code 0 when every fault ended as required, 1 otherwise, 77 when no
scenario could run here (each summary says why it was skipped). Traffic
stays on loopback and in network namespaces the driver makes; every
process it starts is ended by pid.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fault_job import bin_path  # noqa: E402
from fault_result import summary  # noqa: E402
from fault_scenario import Scenario  # noqa: E402
from disk_scenario import DiskFull  # noqa: E402
from elastic_scenario import ElasticKill  # noqa: E402
from host_scenarios import LauncherKill, LinkDrop  # noqa: E402
from ps_scenarios import PsKill, PsStop  # noqa: E402

SKIP_CODE = 77

Factory = Callable[[str, random.Random], Scenario]
SCENARIOS: Dict[str, Factory] = {
    "ps_kill_sync": lambda d, r: PsKill("sync", d, r),
    "ps_kill_async": lambda d, r: PsKill("async", d, r),
    "ps_kill_geo": lambda d, r: PsKill("geo", d, r),
    "ps_sigstop": PsStop,
    "ckpt_disk_full": DiskFull,
    "launcher_kill": LauncherKill,
    "link_drop": LinkDrop,
    "elastic_kill": ElasticKill,
}


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget_s", type=float, default=150,
                   help="stop starting new faults after this many seconds")
    p.add_argument("--faults_per_scenario", type=int, default=2,
                   help="at most this many faults per scenario")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="comma list of: " + ", ".join(SCENARIOS))
    p.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    p.add_argument("--work_dir", default="", help="keep the jobs' logs here (default: a "
                   "temporary directory, removed at the end)")
    args = p.parse_args(argv)
    unknown = [s for s in args.scenarios.split(",") if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {unknown}; expected some of {list(SCENARIOS)}")
    if args.budget_s <= 0 or args.faults_per_scenario <= 0:
        p.error("--budget_s and --faults_per_scenario must be positive")
    return args


def run(args: argparse.Namespace, work_dir: str) -> int:
    seed = args.seed if args.seed is not None else int(time.time())
    print(f"fault loop: seed {seed}, budget {args.budget_s:.0f} s, at most "
          f"{args.faults_per_scenario} faults per scenario, logs in {work_dir}", flush=True)
    rng = random.Random(seed)
    scenarios = [SCENARIOS[name](work_dir, rng) for name in args.scenarios.split(",")]
    missing = sorted({bin_path(p) for s in scenarios for p in s.programs
                      if not os.access(bin_path(p), os.X_OK)})
    if missing:
        print(f"FAILED: not built: {', '.join(missing)} (build the targets the fault loop runs)",
              flush=True)
        return 1
    skipped: Dict[str, str] = {}
    runnable: List[Scenario] = []
    try:
        for s in scenarios:
            s.setup()
            why = s.skip()
            if why:
                skipped[s.name] = why
                print(f"{s.name}: SKIPPED: {why}", flush=True)
            else:
                runnable.append(s)
        deadline = time.monotonic() + args.budget_s
        while runnable and time.monotonic() < deadline:
            active = [s for s in runnable if len(s.faults) < args.faults_per_scenario]
            if not active:
                break
            for s in active:
                if time.monotonic() >= deadline:
                    break
                fault = s.next_fault()
                verdict = "ok" if fault.ok else "FAILED: " + "\n    ".join(fault.problems)
                detect = f"{fault.detect_ms:.0f} ms" if fault.detect_ms is not None else "-"
                print(f"{s.name} #{fault.index} {fault.action}: detected in {detect}, "
                      f"steps lost {fault.steps_lost}: {verdict}", flush=True)
        for s in runnable:
            s.verify_last()
    finally:
        for s in scenarios:
            s.teardown()
    failed = 0
    for s in scenarios:
        for f in s.faults:
            if not f.ok:
                failed += 1
                print(f"{s.name} #{f.index} {f.action} did not end as required:\n    " +
                      "\n    ".join(f.problems), flush=True)
        print(json.dumps(summary(s.name, s.faults, skipped.get(s.name, ""))), flush=True)
    if not runnable:
        return SKIP_CODE
    return 1 if failed else 0


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    if args.work_dir:
        os.makedirs(args.work_dir, exist_ok=True)
        return run(args, os.path.abspath(args.work_dir))
    work_dir = tempfile.mkdtemp(prefix="flotilla_fault.")
    try:
        return run(args, work_dir)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
