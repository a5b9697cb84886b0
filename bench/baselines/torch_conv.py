#!/usr/bin/python3
"""PyTorch 1.13 CPU peer of bench_conv: the same measurements, printed as
JSON lines that bench_conv reads.

  torch_conv.py --threads N layers SPEC...   conv2d forward+backward per shape
  torch_conv.py --threads N step MODEL BATCH SIZE STEPS WARMUP
                                             train steps of resnet18/resnet50

A layer SPEC is "n,c,h,w,k,kernel,stride,pad". Times are medians of
--repeats runs, in milliseconds (train steps also give CPU milliseconds, every
thread of the process). The ResNets are written here (torchvision is
not needed), with the structure of Flotilla's models::ResNet (Paddle's): a
projection shortcut also on the first basic block of ResNet-18/34.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin: int, cout: int, k: int, s: int, act: bool) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Block(nn.Module):
    def __init__(self, cin: int, filters: int, stride: int, bottleneck: bool, is_first: bool) -> None:
        super().__init__()
        cout = filters * 4 if bottleneck else filters
        if bottleneck:
            self.body = nn.Sequential(conv_bn(cin, filters, 1, 1, True), conv_bn(filters, filters, 3, stride, True),
                                      conv_bn(filters, cout, 1, 1, False))
        else:
            self.body = nn.Sequential(conv_bn(cin, filters, 3, stride, True), conv_bn(filters, filters, 3, 1, False))
        project = cin != cout or stride != 1 or is_first
        self.short = conv_bn(cin, cout, 1, stride, False) if project else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.short(x) + self.body(x))


def resnet(depth: int, classes: int) -> nn.Module:
    stages = {18: [2, 2, 2, 2], 50: [3, 4, 6, 3]}[depth]
    bottleneck = depth >= 50
    mods = [conv_bn(3, 64, 7, 2, True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, n in enumerate(stages):
        filters = 64 * 2 ** stage
        for i in range(n):
            mods.append(Block(cin, filters, 2 if i == 0 and stage else 1, bottleneck, stage == 0 and i == 0))
            cin = filters * 4 if bottleneck else filters
    mods += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*mods)


def time_layer(spec: str, repeats: int) -> dict:
    n, c, h, w, k, kernel, stride, pad = (int(v) for v in spec.split(","))
    x = torch.randn(n, c, h, w, requires_grad=True)
    weight = torch.randn(k, c, kernel, kernel, requires_grad=True)
    times = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        out = F.conv2d(x, weight, stride=stride, padding=pad)
        out.backward(torch.ones_like(out))
        if i:
            times.append((time.perf_counter() - start) * 1e3)
        x.grad = None
        weight.grad = None
    return {"spec": spec, "ms": statistics.median(times)}


def time_steps(model_name: str, batch: int, size: int, steps: int, warmup: int) -> dict:
    model = resnet(int(model_name.replace("resnet", "")), 1000 if size > 64 else 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 10, (batch,))
    times, cpu = [], []
    for i in range(warmup + steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
            cpu.append((time.process_time() - cpu_start) * 1e3)
    return {"model": model_name, "ms": statistics.median(times), "cpu_ms": statistics.median(cpu)}


def main() -> None:
    parser = argparse.ArgumentParser(description="PyTorch peer of bench_conv")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("what", choices=["layers", "step"])
    parser.add_argument("args", nargs="*")
    a = parser.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.what == "layers":
        for spec in a.args:
            print(json.dumps(time_layer(spec, a.repeats)), flush=True)
    else:
        model, batch, size, steps, warmup = a.args
        print(json.dumps(time_steps(model, int(batch), int(size), int(steps), int(warmup))), flush=True)


if __name__ == "__main__":
    main()
