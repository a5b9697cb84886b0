#!/usr/bin/python3
"""Seed 001's mlp (or, with --model resnet18, ResNet-18 on 32x32 images, the
peer of bench_conv's data-parallel line) trained data-parallel with PyTorch
DDP (gloo backend, one thread per rank): the peer bench_ddp runs side by
side with Flotilla's train_with_fleet. Each rank draws a fresh random batch every step (like the
seed's gen_data()) and fetches the loss every --fetch_frequency steps.
Prints one JSON line from rank 0: samples/s summed over ranks, and rank 0's
CPU and wall milliseconds per step (CPU time counts every thread of the
process; it is the load-independent cost of a step)."""
import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=args.nprocs)
    torch.manual_seed(2021 + rank)
    if args.model == "resnet18":
        return train_resnet(rank, args, queue)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, args.hidden), torch.nn.Tanh(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.Tanh(),
        torch.nn.Linear(args.hidden, 2), torch.nn.Softmax(dim=1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    loss_value = 0.0
    start = time.perf_counter()
    cpu_start = time.process_time()
    for i in range(args.steps):
        if i == args.warmup:
            start = time.perf_counter()
            cpu_start = time.process_time()
        x = torch.rand(args.batch_size, 32)
        y = torch.randint(0, 2, (args.batch_size,))
        opt.zero_grad()
        prob = ddp(x)
        # cross_entropy on probabilities, as the seed's fluid.layers.cross_entropy.
        loss = -torch.log(prob.gather(1, y.view(-1, 1))).mean()
        loss.backward()
        opt.step()
        if i % args.fetch_frequency == 0:
            loss_value = loss.item()
    secs = time.perf_counter() - start
    cpu_secs = time.process_time() - cpu_start
    dist.barrier()
    if rank == 0:
        timed = args.steps - args.warmup
        queue.put({"loss": loss_value,
                   "samples_per_sec": timed * args.batch_size * args.nprocs / secs,
                   "ranks": args.nprocs,
                   "rank0_cpu_ms_per_step": 1e3 * cpu_secs / timed,
                   "rank0_wall_ms_per_step": 1e3 * secs / timed})
    dist.destroy_process_group()


def train_resnet(rank, args, queue):
    """ResNet-18 (Flotilla's structure) on random 32x32 images, 10 classes."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_conv import resnet
    ddp = DDP(resnet(18, 10))
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(args.batch_size, 3, 32, 32)
    y = torch.randint(0, 10, (args.batch_size,))
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(args.steps):
        if i == args.warmup:
            start, cpu_start = time.perf_counter(), time.process_time()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
    secs, cpu_secs = time.perf_counter() - start, time.process_time() - cpu_start
    dist.barrier()
    if rank == 0:
        timed = args.steps - args.warmup
        queue.put({"loss": loss.item(), "samples_per_sec": timed * args.batch_size * args.nprocs / secs,
                   "ranks": args.nprocs, "rank0_cpu_ms_per_step": 1e3 * cpu_secs / timed,
                   "rank0_wall_ms_per_step": 1e3 * secs / timed})
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=1280)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--fetch_frequency", type=int, default=2)
    p.add_argument("--model", choices=["mlp", "resnet18"], default="mlp")
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.nprocs, join=True)
    result = queue.get()
    result.update({"impl": "pytorch_ddp", "torch": torch.__version__})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
