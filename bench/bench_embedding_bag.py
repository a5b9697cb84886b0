#!/usr/bin/python3
"""bench_embedding_bag: embedding over LoD ids + sequence_pool, forward and
backward, against PyTorch 1.13's EmbeddingBag on the same ragged batch.

One batch of variable-length id sequences (lengths uniform in [0, 2 * mean],
so empty sequences occur) is fed to both sides: Flotilla runs
``embedding(ids, is_sparse) → sequence_pool(mode) → reduce_sum``, its
backward (the sparse table gradient) and a zero-rate SGD step (the Python
API appends backward through an optimizer); PyTorch runs
``EmbeddingBag(mode, sparse=True)(ids, offsets).sum().backward()`` (dense
for max, the only gradient PyTorch has there). One thread
each, repeats alternating between the sides; each reports its median.

    build/bin/bench_embedding_bag [--modes sum,mean,max] [--batch 512] [--mean-len 20]

Prints per mode ``{"bench":"embedding_bag","mode":"sum","impl":"flotilla",
"ms_per_step":...,"ids_per_sec":...}`` and, when python3-torch is installed,
``{"bench":"embedding_bag","mode":"sum","ratio":"flotilla/pytorch","value":...,
"goal":">= 1.0","met":...}`` (> 1: Flotilla faster).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy and the core load OpenBLAS

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable, Optional  # noqa: E402

import numpy as np  # noqa: E402

import flotilla  # noqa: E402
from flotilla import fluid  # noqa: E402
from torch_peer import torch_peer_env  # noqa: E402

POOL = {"sum": "sum", "mean": "average", "max": "max"}


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def flotilla_step(mode: str, vocab: int, dim: int, ids: np.ndarray, lengths: list) -> Callable[[], None]:
    main, startup = flotilla.Program(), flotilla.Program()
    scope = flotilla._core.Scope()
    with flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        x = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(x, size=[vocab, dim], is_sparse=True)
        loss = fluid.layers.reduce_sum(fluid.layers.sequence_pool(emb, pool_type=POOL[mode]))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    with flotilla.scope_guard(scope):
        exe.run(startup)
    feed = {"ids": fluid.create_lod_tensor(ids.reshape(-1, 1), [lengths], fluid.CPUPlace())}

    def step() -> None:
        with flotilla.scope_guard(scope):
            exe.run(main, feed=feed, fetch_list=[loss])
    return step


def torch_step(mode: str, vocab: int, dim: int, ids: np.ndarray, lengths: list) -> Optional[Callable[[], None]]:
    os.environ.update(torch_peer_env(1))  # before torch loads
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    # PyTorch has no sparse gradient for max: its best configuration there is dense.
    bag = torch.nn.EmbeddingBag(vocab, dim, mode=mode, sparse=mode != "max")
    t_ids = torch.from_numpy(ids)
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("int64"))

    def step() -> None:
        bag.zero_grad()
        bag(t_ids, offsets).sum().backward()
    return step


def ms_per_step(step: Callable[[], None], steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) * 1000 / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="sum,mean,max")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--mean-len", type=int, default=20)
    parser.add_argument("--vocab", type=int, default=100000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    lengths = rng.randint(0, 2 * args.mean_len + 1, args.batch).tolist()
    ids = rng.randint(0, args.vocab, sum(lengths)).astype("int64")
    for mode in args.modes.split(","):
        sides = {"flotilla": flotilla_step(mode, args.vocab, args.dim, ids, lengths)}
        peer = torch_step(mode, args.vocab, args.dim, ids, lengths)
        if peer is not None:
            sides["pytorch"] = peer
        else:
            emit({"bench": "embedding_bag", "mode": mode, "impl": "pytorch",
                  "skipped": "python3-torch not available (scripts/install-deps.sh --bench)"})
        times = {name: [] for name in sides}
        for step in sides.values():
            step()  # warm up
        for _ in range(args.repeats):
            for name, step in sides.items():
                times[name].append(ms_per_step(step, args.steps))
        for name, ms in times.items():
            med = statistics.median(ms)
            emit({"bench": "embedding_bag", "mode": mode, "impl": name, "batch": args.batch,
                  "ids": len(ids), "dim": args.dim, "ms_per_step": round(med, 4),
                  "ids_per_sec": round(len(ids) / med * 1000)})
        if "pytorch" in times:
            value = statistics.median(times["pytorch"]) / statistics.median(times["flotilla"])
            emit({"bench": "embedding_bag", "mode": mode, "ratio": "flotilla/pytorch", "value": round(value, 3),
                  "goal": ">= 1.0", "met": value >= 1.0})


if __name__ == "__main__":
    main()
