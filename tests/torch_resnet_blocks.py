#!/usr/bin/python3
"""Checks Flotilla's ResNet blocks against PyTorch 1.13, forward and backward.

resnet_blocks_test (C++) writes, for each case, the input, the upstream
gradient, every parameter under its Paddle name, and Flotilla's output and
gradients as raw float32 files listed in DIR/<case>.json. This script builds
the same network in torch (conv, batch norm in training mode, relu, max
pool, the residual block, global average pool), loads the parameters by
their Paddle names, runs forward and backward, and compares. Exit code 0
when every tensor matches to the tolerance, 1 otherwise, 77 when torch is
not installed (`scripts/install-deps.sh --bench` installs python3-torch).
"""
import json
import os
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_resnet_blocks: python3-torch is not installed (scripts/install-deps.sh --bench)")
    sys.exit(77)


def load(directory: str, entry: dict) -> torch.Tensor:
    data = np.fromfile(os.path.join(directory, entry["file"]), dtype="<f4")
    return torch.from_numpy(data.reshape(entry["shape"]).astype(np.float64))


class Params:
    """Parameters by Paddle name, as leaf tensors that collect gradients."""

    def __init__(self, directory: str, entries: dict) -> None:
        self.t = {n: load(directory, e).requires_grad_(True) for n, e in entries.items()}

    def conv_bn(self, x: torch.Tensor, name: str, stride: int, act: bool) -> torch.Tensor:
        w = self.t[name + "_weights"]
        y = F.conv2d(x, w, stride=stride, padding=(w.shape[2] - 1) // 2)
        bn = "bn_conv1" if name == "conv1" else "bn" + name[3:]
        y = F.batch_norm(y, None, None, self.t[bn + "_scale"], self.t[bn + "_offset"], training=True,
                         eps=1e-5)
        return F.relu(y) if act else y


def forward(p: Params, x: torch.Tensor, case: dict) -> torch.Tensor:
    y = p.conv_bn(x, "conv1", 1, True)
    y = F.max_pool2d(y, 3, stride=2, padding=1)
    name, stride = case["block"], case["stride"]
    if case["kind"] == "basic":
        b = p.conv_bn(y, name + "_branch2a", stride, True)
        b = p.conv_bn(b, name + "_branch2b", 1, False)
    else:
        b = p.conv_bn(y, name + "_branch2a", 1, True)
        b = p.conv_bn(b, name + "_branch2b", stride, True)
        b = p.conv_bn(b, name + "_branch2c", 1, False)
    short = p.conv_bn(y, name + "_branch1", stride, False) if name + "_branch1_weights" in p.t else y
    y = F.relu(short + b)
    return F.adaptive_avg_pool2d(y, 1)


def check(directory: str, case_name: str, tol: float) -> bool:
    with open(os.path.join(directory, case_name + ".json")) as f:
        case = json.load(f)
    x = load(directory, case["input"]).requires_grad_(True)
    upstream = load(directory, case["upstream"])
    params = Params(directory, case["params"])
    out = forward(params, x, case)
    (out * upstream).sum().backward()
    ok = True
    results = [("output", out.detach(), case["output"]), ("input@GRAD", x.grad, case["input_grad"])]
    for name, entry in case["param_grads"].items():
        results.append((name + "@GRAD", params.t[name].grad, entry))
    for what, expected, entry in results:
        got = load(directory, entry)
        diff = (got - expected).abs().max().item()
        scale = max(1.0, expected.abs().max().item())
        good = diff <= tol * scale
        ok = ok and good
        print(f"{case_name} {what}: max |flotilla - torch| = {diff:.3g} (scale {scale:.3g})"
              f"{'' if good else '  MISMATCH'}")
    return ok


def main() -> None:
    directory, tol = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 1e-4
    print(f"torch {torch.__version__}")
    ok = all([check(directory, c, tol) for c in sys.argv[3:] or ["basic", "bottleneck"]])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
