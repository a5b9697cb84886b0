#!/usr/bin/env python3
"""A two-layer regression trained with ``import flotilla``: alone, data
parallel under collective fleet, or with parameter servers (sync, async,
GEO) — the same script under ``flotilla launch``:

    python3 examples/python/dist_fit.py --out single.json
    flotilla launch --nproc_per_node 2 examples/python/dist_fit.py --out dp.json
    flotilla launch --server_num 2 --worker_num 2 examples/python/dist_fit.py --ps sync --out ps.json

Each step every trainer trains on its own rows of one fixed global batch, so
a synchronous job matches one process on the whole batch. Each trainer
writes its per-row losses of every step to ``--out`` (``.rankN`` appended
in a job): the tests compare them with a single process's.
"""

import argparse
import json
import sys
from typing import List

import numpy as np

import flotilla
from flotilla import fluid
from flotilla.distributed import fleet


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ps", choices=["", "sync", "async", "geo"], default="",
                   help="parameter-server mode (default: collective, or one process)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch_size", type=int, default=32, help="global batch (split among trainers)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--out", required=True, help="JSON file of the per-row losses")
    return p.parse_args(argv)


def global_batch(step: int, batch_size: int) -> tuple:
    """The step's rows: fixed, the same in every process."""
    rng = np.random.RandomState(1000 + step)
    x = rng.uniform(-1, 1, size=(batch_size, 13)).astype(np.float32)
    y = (x @ np.linspace(-1, 1, 13, dtype=np.float32)[:, None] + 0.5).astype(np.float32)
    return x, y


def build(args: argparse.Namespace) -> tuple:
    """The network, its per-row cost and the optimizer, distributed when launched."""
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    hidden = fluid.layers.fc(x, 8, act="tanh",
                             param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-0.5, 0.5, seed=7)))
    pred = fluid.layers.fc(hidden, 1,
                           param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-0.5, 0.5, seed=8)))
    cost = fluid.layers.square_error_cost(pred, y)
    loss = fluid.layers.mean(cost)
    sgd = fluid.optimizer.SGD(learning_rate=args.lr)
    if args.ps:
        strategy = fleet.DistributedStrategy()
        strategy.a_sync = args.ps != "sync"
        if args.ps == "geo":
            strategy.a_sync_configs = {"k_steps": 2}
        fleet.distributed_optimizer(sgd, strategy).minimize(loss)
    else:
        fleet.distributed_optimizer(sgd, fleet.DistributedStrategy()).minimize(loss)
    return cost


def train(args: argparse.Namespace) -> None:
    fleet.init(is_collective=not args.ps)
    cost = build(args)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fleet.init_worker()
    rank, ranks = fleet.worker_index(), fleet.worker_num()
    if args.batch_size % ranks:
        raise ValueError(f"--batch_size {args.batch_size} does not split among {ranks} trainers")
    shard = args.batch_size // ranks
    losses = []
    for step in range(args.steps):
        x, y = global_batch(step, args.batch_size)
        rows = slice(rank * shard, (rank + 1) * shard)
        out, = exe.run(fluid.default_main_program(), feed={"x": x[rows], "y": y[rows]}, fetch_list=[cost])
        losses.append(out.ravel().tolist())
        print(f"rank {rank} step {step} loss {float(np.mean(out)):.6f}", flush=True)
    fleet.stop_worker()
    path = args.out if ranks == 1 else f"{args.out}.rank{rank}"
    with open(path, "w") as f:
        json.dump({"rank": rank, "ranks": ranks, "losses": losses}, f)


if __name__ == "__main__":
    train(parse_args(sys.argv[1:]))
