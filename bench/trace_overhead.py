#!/usr/bin/env python3
"""Tracing compiled in but off, against tracing compiled out (issue 14).

Runs the same benchmark from two builds side by side, alternating repeats:
BUILD (the normal build: spans, flight records and per-op activity compiled
in, no timeline) and BASELINE (configured with -DFLOTILLA_TRACING=OFF, which
compiles them away). Prints each side's line and the overhead in DESIGN.md's
shape, on CPU time per step (the quantity a busy shared machine disturbs
least):

  {"bench":"train_step","model":"mlp","overhead":"compiled_in_off/compiled_out",
   "value":1.001,"goal":"<= 1.003","met":true}

  bench/trace_overhead.py --build build --baseline build-notrace [--repeats 5]

Make the baseline with
  cmake -S . -B build-notrace -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLOTILLA_TRACING=OFF
  cmake --build build-notrace --target bench_train_step flotilla train_with_fleet
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile


def last_json(text: str, key: str) -> dict:
    lines = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    found = [l for l in lines if key in l]
    if not found:
        raise RuntimeError(f"no line with {key!r} in:\n{text}")
    return found[-1]


def train_step(build: str, steps: int) -> dict:
    out = subprocess.run([f"{build}/bin/bench_train_step", "--no-torch", "--steps", str(steps),
                          "--repeats", "1"], capture_output=True, text=True, check=True,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}).stdout
    line = last_json(out, "cpu_ms_per_step")
    return {"rate": line["steps_per_sec"], "cpu_ms": line["cpu_ms_per_step"]}


def ddp(build: str, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as logs:
        subprocess.run([f"{build}/bin/flotilla", "launch", "--devices", "0,1", "--quiet",
                        "--log_dir", logs, f"{build}/bin/train_with_fleet", "--steps",
                        str(steps), "--warmup", "10"], capture_output=True, text=True,
                       check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        with open(os.path.join(logs, "workerlog.0")) as f:  # --quiet: rank 0's line is here
            line = last_json(f.read(), "samples_per_sec")
    return {"rate": line["samples_per_sec"], "cpu_ms": line["rank0_cpu_ms_per_step"]}


def compare(bench: str, run, args) -> None:
    sides = {"compiled_in_off": [], "compiled_out": []}
    for _ in range(args.repeats):
        sides["compiled_in_off"].append(run(args.build, args.steps))
        sides["compiled_out"].append(run(args.baseline, args.steps))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("rate", "cpu_ms")}
           for k, v in sides.items()}
    for impl, m in med.items():
        print(json.dumps({"bench": bench, "model": "mlp", "impl": impl, "repeats": args.repeats,
                          "rate_per_sec": m["rate"], "cpu_ms_per_step": m["cpu_ms"]}))
    value = med["compiled_in_off"]["cpu_ms"] / med["compiled_out"]["cpu_ms"]
    print(json.dumps({"bench": bench, "model": "mlp", "overhead": "compiled_in_off/compiled_out",
                      "value": round(value, 4), "goal": "<= 1.003", "met": value <= 1.003}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--baseline", default="build-notrace")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--only", choices=["train_step", "ddp"])
    args = p.parse_args()
    if args.only in (None, "train_step"):
        compare("train_step", train_step, args)
    if args.only in (None, "ddp"):
        compare("ddp", ddp, args)


if __name__ == "__main__":
    main()
