#!/usr/bin/python3
"""Seed 001's mlp in PyTorch, one thread: the peer bench_train_step runs
side by side with Flotilla. Prints one JSON line: steps/s over --steps."""
import argparse
import json
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=1280)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, args.hidden), torch.nn.Tanh(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.Tanh(),
        torch.nn.Linear(args.hidden, 2), torch.nn.Softmax(dim=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.rand(args.batch_size, 32)
    y = torch.randint(0, 2, (args.batch_size,))

    def step():
        opt.zero_grad()
        prob = model(x)
        # cross_entropy on probabilities, as the seed's fluid.layers.cross_entropy.
        loss = -torch.log(prob.gather(1, y.view(-1, 1))).mean()
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    rates, cpu_ms = [], []
    for _ in range(args.repeats):
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        rates.append(args.steps / (time.perf_counter() - start))
        cpu_ms.append((time.process_time() - cpu) * 1e3 / args.steps)
    rates.sort()
    cpu_ms.sort()
    print(json.dumps({"bench": "train_step", "impl": "pytorch", "model": "mlp",
                      "hidden": args.hidden, "batch": args.batch_size, "threads": 1,
                      "steps_per_sec": rates[len(rates) // 2], "cpu_ms_per_step": cpu_ms[len(cpu_ms) // 2],
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
