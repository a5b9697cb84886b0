#!/usr/bin/python3
"""The mlp of train_with_fleet in Python under ``fault_tolerance`` "step"
(set by ``flotilla launch --fault_tolerance step``): each step through
``fleet.run_step``; a dropped step is redone from the same data position in
the re-formed world. Prints what tests/fault/ft_step_test.py reads, as the
C++ train_with_fleet does: "stepN cost=..." on rank 0, "fault tolerance:
step N committed at unix_ms=T world=W" after a re-form, and a last JSON line
with rank, world, pid, steps, position, params_fnv, faults, steps_lost.

    flotilla launch --nproc_per_node 3 --fault_tolerance step tests/fault/ft_step_train.py --steps 1200
"""
import argparse
import json
import os
import time

import numpy as np

from flotilla import fluid
from flotilla.distributed import fleet


def samples_at(first, batch):
    """Samples first..first+batch-1 of the stream, sample i drawn from seed i."""
    x = np.stack([np.random.default_rng(first + i).random(32, dtype=np.float32) for i in range(batch)])
    y = (x[:, :4].sum(axis=1) > 2.0).astype(np.int64).reshape(batch, 1)
    return {"x": x, "y": y}


def params_fnv(program):
    h = 1469598103934665603
    for name in sorted(p.name for p in program.global_block().all_parameters()):
        for b in np.asarray(fluid.global_scope().find_var(name).get_tensor()).tobytes():
            h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return str(h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--fetch_frequency", type=int, default=10)
    args = p.parse_args()

    x = fluid.layers.data(name="x", shape=[32], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=x, size=args.hidden, act="tanh")
    h = fluid.layers.fc(input=h, size=args.hidden, act="tanh")
    prediction = fluid.layers.fc(input=h, size=2, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=y))
    fleet.init(fleet.PaddleCloudRoleMaker(is_collective=True))
    strategy = fleet.DistributedStrategy()
    opt = fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.01), strategy)
    opt.minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.fleet.startup_program)

    state = fleet.StepState()
    reformed = False
    while state.step < args.steps:
        i = state.step
        feed = samples_at(state.position + fleet.worker_index() * args.batch_size, args.batch_size)
        fetch = i % args.fetch_frequency == 0
        out = fleet.run_step(exe, feed, [loss] if fetch else [], state, args.batch_size)
        if out is None:
            reformed = True
            continue
        if reformed:
            reformed = False
            print(f"fault tolerance: step {i} committed at unix_ms={int(time.time() * 1000)} "
                  f"world={fleet.worker_num()}", flush=True)
        if fetch and fleet.worker_index() == 0:
            print(f"step{i} cost={float(np.asarray(out[0]).ravel()[0])} ranks={fleet.worker_num()}", flush=True)
    stats = fleet.fault_stats()
    print(json.dumps({"rank": fleet.worker_index(), "world": fleet.worker_num(), "pid": os.getpid(),
                      "steps": state.step, "position": state.position,
                      "params_fnv": params_fnv(fleet.fleet.main_program), "faults": stats["faults"],
                      "steps_lost": stats["steps_lost"], "reform_ms": stats["last_reform_ms"],
                      "recovery_ms": stats["last_recovery_ms"]}), flush=True)
    fleet.barrier_worker()


if __name__ == "__main__":
    main()
