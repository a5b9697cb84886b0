#!/usr/bin/python3
"""bench_fault_tolerance: what a lost rank costs a job run with
`flotilla launch --fault_tolerance step` (issue 34).

Runs the mlp of train_with_fleet on --ranks processes on loopback and
SIGKILLs random ranks mid-training (--kills_per_job per job, each once the
previous fault has been recovered from), until --kills faults were injected.
Recovery is measured from the SIGKILL to the first step committed in the
smaller world (the latest of the survivors' clocks, all on this machine).
Then one kill under --fault_tolerance none shows today's behaviour (the
launcher stops the job), and the same job runs without faults with and without fault tolerance to
measure what the transactions cost when nothing fails.

    build/bin/bench_fault_tolerance [--kills 20] [--ranks 4] [--backend gloo]

Prints JSON lines: one per job (recoveries, steps lost, survivors'
parameters identical), the summary
``{"bench":"fault_tolerance","model":"mlp","kills":20,"recovery_p50_ms":…,
"recovery_p99_ms":…,"steps_lost_max":1}``, the goals (recovery p50 ≤ 0.3 s,
p99 ≤ 1 s, ≤ 1 step lost per fault) and the overhead
``{"bench":"fault_tolerance","overhead":"step/none","value":…,"goal":"<= 1.02"}``.
"""
import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("FLOTILLA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../build"))


def child_pids(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def rank_of(pid):
    """The trainer's rank; None before it has exec'd with its environment."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    except OSError:
        return None
    rank = env.get(b"PADDLE_TRAINER_ID")
    return None if rank is None else int(rank)


def trainers(launcher, ranks):
    """{rank: pid} of the launcher's children once all `ranks` run, else None."""
    found = {rank_of(p): p for p in child_pids(launcher.pid)}
    found.pop(None, None)
    return found if len(found) == ranks else None


def text_of(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def launch(args, log_dir, steps, mode):
    cmd = [os.path.join(BUILD, "bin/flotilla"), "launch", "--nproc_per_node", str(args.ranks),
           "--fault_tolerance", mode, "--log_dir", log_dir, "--grace_period", "2", "--quiet",
           os.path.join(BUILD, "bin/train_with_fleet"), "--backend", args.backend,
           "--steps", str(steps), "--hidden", str(args.hidden), "--batch_size", "32",
           "--comm_num", "1", "--seed", "7", "--labels", "sum", "--fetch_frequency", "10"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def finish(launcher, timeout_s):
    """The launcher's output once it exited; killed (with its job) after timeout_s."""
    try:
        return launcher.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        return launcher.communicate()[0]


def finals(log_dir, ranks):
    out = {}
    for r in range(ranks):
        lines = [l for l in text_of(os.path.join(log_dir, f"workerlog.{r}")).splitlines()
                 if l.startswith("{") and "params_fnv" in l]
        if lines:
            out[r] = json.loads(lines[-1])
    return out


def started(launcher, log_dir, timeout_s=60):
    """Waits until rank 0 reports its first steps."""
    deadline = time.time() + timeout_s
    while not re.search(r"^step\d+ cost=", text_of(os.path.join(log_dir, "workerlog.0")), re.M):
        if time.time() > deadline or launcher.poll() is not None:
            raise RuntimeError("the job did not start training")
        time.sleep(0.02)


def run_job(args, kills):
    """One job with `kills` faults; returns its recoveries (ms) and its summary."""
    log_dir = tempfile.mkdtemp(prefix="bench_ft_")
    launcher = launch(args, log_dir, args.steps, "step")
    recoveries = []
    try:
        deadline = time.time() + 60
        while not trainers(launcher, args.ranks):
            if time.time() > deadline or launcher.poll() is not None:
                raise RuntimeError("the job did not start")
            time.sleep(0.02)
        alive = trainers(launcher, args.ranks)
        started(launcher, log_dir)
        time.sleep(args.warmup_s)
        for k in range(kills):
            victim = random.choice(sorted(alive))
            world = len(alive) - 1
            killed_ms = time.time() * 1000
            if launcher.poll() is not None or not os.path.exists(f"/proc/{alive[victim]}"):
                raise RuntimeError(f"the job ended before kill {k + 1} (raise --steps); logs in {log_dir}")
            os.kill(alive.pop(victim), signal.SIGKILL)
            pattern = re.compile(rf"committed at unix_ms=(\d+) world={world}\b")
            deadline = time.time() + 30
            while True:
                stamps = [pattern.search(text_of(os.path.join(log_dir, f"workerlog.{r}")))
                          for r in alive]
                if all(stamps):
                    recoveries.append(max(int(m.group(1)) for m in stamps) - killed_ms)
                    break
                if time.time() > deadline or launcher.poll() is not None:
                    raise RuntimeError(f"no recovery from kill {k + 1} (rank {victim}); logs in {log_dir}")
                time.sleep(0.005)
            time.sleep(args.between_s)
        out = finish(launcher, 300)
    except BaseException:
        finish(launcher, 0.1)
        raise
    f = finals(log_dir, args.ranks)
    survivors = [f[r] for r in alive if r in f]
    job = {"bench": "fault_tolerance_job", "model": "mlp", "backend": args.backend,
           "ranks": args.ranks, "kills": kills, "exit_code": launcher.returncode,
           "recovery_ms": [round(r, 1) for r in recoveries],
           "reform_ms_last": max((s["reform_ms"] for s in survivors), default=None),
           "steps_lost": max((s["steps_lost"] for s in survivors), default=None),
           "pids_kept": all(s["pid"] == p for r, p in alive.items() for s in [f.get(r, {})]),
           "params_identical": len({s["params_fnv"] for s in survivors}) == 1,
           "survived_line": next((l for l in out.splitlines() if l.startswith("fault tolerance:")), "")}
    return recoveries, job


def today(args):
    """The same SIGKILL under --fault_tolerance none: the launcher stops the
    job (a restart is by hand, or by an elastic job's next world from its
    newest checkpoint when a whole node is lost)."""
    log_dir = tempfile.mkdtemp(prefix="bench_ft_none_")
    launcher = launch(args, log_dir, args.steps, "none")
    deadline = time.time() + 60
    while not trainers(launcher, args.ranks):
        if time.time() > deadline or launcher.poll() is not None:
            raise RuntimeError("the job did not start")
        time.sleep(0.02)
    started(launcher, log_dir)
    time.sleep(args.warmup_s)
    killed = time.time()
    os.kill(trainers(launcher, args.ranks)[1], signal.SIGKILL)
    finish(launcher, 120)
    return {"bench": "fault_tolerance", "model": "mlp", "mode": "none", "kills": 1,
            "job_exit_code": launcher.returncode, "stopped_after_ms": round((time.time() - killed) * 1000, 1),
            "recovered": False}


def step_ms(args, mode):
    log_dir = tempfile.mkdtemp(prefix="bench_ft_free_")
    out = finish(launch(args, log_dir, args.overhead_steps, mode), 300)
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{") and "rank0_wall_ms_per_step" in l]
    lines += [json.loads(l) for l in text_of(os.path.join(log_dir, "workerlog.0")).splitlines()
              if l.startswith("{") and "rank0_wall_ms_per_step" in l]
    return lines[-1]["rank0_wall_ms_per_step"]


def report(recoveries, lost, ok, args):
    """The summary and goal lines."""
    p50, p99 = percentile(recoveries, 50), percentile(recoveries, 99)
    print(json.dumps({"bench": "fault_tolerance", "model": "mlp", "backend": args.backend,
                      "ranks": args.ranks, "kills": len(recoveries), "all_jobs_ok": ok,
                      "recovery_p50_ms": round(p50, 1), "recovery_p99_ms": round(p99, 1),
                      "recovery_max_ms": round(max(recoveries), 1),
                      "recovery_mean_ms": round(statistics.mean(recoveries), 1),
                      "steps_lost_max_per_fault": max(lost)}))
    for metric, value, goal, met in (
            ("recovery_p50_s", p50 / 1000, "<= 0.3", p50 <= 300),
            ("recovery_p99_s", p99 / 1000, "<= 1", p99 <= 1000),
            ("steps_lost_per_fault", max(lost), "<= 1", max(lost) <= 1)):
        print(json.dumps({"bench": "fault_tolerance", "model": "mlp", "metric": metric,
                          "value": round(value, 3), "goal": goal, "met": met}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--kills_per_job", type=int, default=2)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--backend", default="gloo")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--warmup_s", type=float, default=0.5)
    p.add_argument("--between_s", type=float, default=0.5)
    p.add_argument("--overhead_steps", type=int, default=800)
    p.add_argument("--overhead_repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--baseline", type=int, default=1, help="also kill a rank under --fault_tolerance none")
    args = p.parse_args()
    random.seed(args.seed)
    per_job = max(1, min(args.kills_per_job, args.ranks - 1))
    recoveries, lost, ok = [], [], True
    left = args.kills
    while left > 0:
        try:
            r, job = run_job(args, min(per_job, left))
        except RuntimeError as e:
            print(json.dumps({"bench": "fault_tolerance_job", "error": str(e)}), flush=True)
            ok, left = False, left - min(per_job, left)
            continue
        left -= job["kills"]
        print(json.dumps(job), flush=True)
        recoveries += r
        lost.append((job["steps_lost"] or 0) / job["kills"])
        ok &= job["exit_code"] == 0 and job["pids_kept"] and job["params_identical"]
    if recoveries:  # --kills 0: only the baseline and the overhead
        report(recoveries, lost, ok, args)
    if args.baseline:
        print(json.dumps(today(args)), flush=True)
    if args.overhead_repeats > 0:
        none, step = [], []
        for _ in range(args.overhead_repeats):  # alternating, so load drifts hit both
            none.append(step_ms(args, "none"))
            step.append(step_ms(args, "step"))
        ratio = statistics.median(step) / statistics.median(none)
        print(json.dumps({"bench": "fault_tolerance", "model": "mlp", "overhead": "step/none",
                          "ms_per_step_none": round(statistics.median(none), 3),
                          "ms_per_step_step": round(statistics.median(step), 3),
                          "value": round(ratio, 3), "goal": "<= 1.02", "met": ratio <= 1.02}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
