"""examples/python/train_with_fleet.py — seed 001's image-classification job
driven from Python — against the C++ train_with_fleet and against itself on
one process: the same program on the same images must give the same losses.

A tiny digits set (64 training and 40 validation JPEGs) keeps each run to a
few seconds: ResNet-18 at 32x32, 4 steps, sync_batch_norm on so that 2 ranks
of batch 4 equal one process of batch 8. The learning rate is small because
batch norm over 4-8 near-constant digit images amplifies rounding: at 0.05 a
1e-6 difference after one step (the order of the all-reduce's sum) grows to
tens of percent in four; at 0.002 it stays below 1e-4.
"""

import json
import os
import re
import subprocess
import sys
from typing import Dict, List

import pytest

from conftest import SOURCE_DIR, build_path, child_env

SCRIPT = os.path.join(SOURCE_DIR, "examples", "python", "train_with_fleet.py")
FLAGS = ["--model=ResNet18", "--image_size", "32", "--num_epochs", "1", "--max_iter", "4", "--lr", "0.002",
         "--lr_strategy", "constant", "--sync_bn", "true", "--random_flip", "false", "--lower_scale", "0.6",
         "--random_seed", "1", "--print_step", "1", "--reader_thread", "1"]
STEP = re.compile(r"^epoch 0 step (\d+): loss ([0-9.]+) top1 ([0-9.]+) top5 ([0-9.]+) lr ([0-9.]+)")


@pytest.fixture(scope="module")
def digits(tmp_path_factory) -> str:
    """The digits set cut to its first 64 training and 40 validation images."""
    out = tmp_path_factory.mktemp("twf") / "digits"
    made = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "make_digits_imagenet.sh"), str(out), "--size", "32"],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, "scripts/make_digits_imagenet.sh failed: " + made.stderr
    for name, keep in (("train_list.txt", 64), ("val_list.txt", 40)):
        path = out / name
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:keep]))
    return str(out)


def run(cmd: List[str], log_dir: str) -> Dict:
    """Runs `cmd` (a launch or one process); returns rank 0's per-step losses
    and its final JSON line."""
    done = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=240)
    rank0 = os.path.join(log_dir, "workerlog.0")
    detail = done.stdout + done.stderr + (open(rank0).read() if os.path.exists(rank0) else "")
    assert done.returncode == 0, f"{' '.join(cmd)} exited {done.returncode}:\n{detail}"
    steps = [float(m.group(2)) for m in map(STEP.match, done.stdout.splitlines()) if m]
    final = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    return {"steps": steps, "final": final, "stdout": done.stdout}


def launch(program: List[str], digits: str, tmp: str, name: str, batch: int) -> Dict:
    log_dir = os.path.join(tmp, name)
    return run([build_path("bin", "flotilla"), "launch", "--nproc_per_node", "2", "--log_dir", log_dir] + program +
               FLAGS + ["--data_dir", digits, "--batch_size", str(batch)], log_dir)


def test_two_ranks_from_python_equal_the_cpp_job_and_one_process(digits, tmp_path):
    py2 = launch([SCRIPT], digits, str(tmp_path), "py2", 4)  # seed 001's form: flotilla launch ... train_with_fleet.py
    cpp2 = launch([build_path("bin", "train_with_fleet")], digits, str(tmp_path), "cpp2", 4)
    py1 = run([sys.executable, SCRIPT] + FLAGS + ["--data_dir", digits, "--batch_size", "8"], str(tmp_path / "none"))

    print(f"[train_with_fleet] python 2 ranks steps {py2['steps']} val_loss {py2['final']['val_loss']:.6g}; "
          f"C++ 2 ranks steps {cpp2['steps']} val_loss {cpp2['final']['val_loss']:.6g}; "
          f"python 1 process val_loss {py1['final']['val_loss']:.6g}")
    assert "2 rank(s) x batch 4, 4 steps/epoch" in py2["stdout"], py2["stdout"]
    assert "(40 images)" in py2["stdout"], py2["stdout"]  # validation covers every rank's shard
    assert len(py2["steps"]) == 4 and len(cpp2["steps"]) == 4, (py2["stdout"], cpp2["stdout"])
    # Same program, same images, same seeds: Python drives exactly the C++ job
    # (bitwise here; the printed losses have 4 decimals).
    assert py2["steps"] == pytest.approx(cpp2["steps"], rel=1e-6, abs=1e-6)
    for key in ("val_loss", "val_top1", "val_top5"):
        assert py2["final"][key] == pytest.approx(cpp2["final"][key], rel=1e-6, abs=1e-6), key
    # Two ranks of batch 4 with sync_batch_norm = one process of batch 8: the
    # parameters they end with give the same validation loss.
    assert py1["final"]["ranks"] == 1 and py2["final"]["ranks"] == 2
    assert py2["final"]["val_loss"] == pytest.approx(py1["final"]["val_loss"], rel=1e-3)
    # And training moved the parameters: the loss changed over the 4 steps.
    assert py2["steps"][0] != py2["steps"][-1]


def test_seed_commands_strategy_flags_match_the_cpp_job(digits, tmp_path):
    """Seed 001's --model=ResNet50 with its tuning flags (2 communicators,
    no fusion, LocalSGD every 2 steps, label smoothing, cosine decay with
    warmup): the Python strategy and schedule are the C++ job's. (No
    validation: after 3 steps of batch 2 the moving batch-norm statistics
    are far from the data's and ResNet-50's logits overflow, on both sides.)"""
    flags = ["--model=ResNet50", "--image_size", "32", "--num_epochs", "1", "--max_iter", "3", "--lr", "0.001",
             "--print_step", "1", "--random_seed", "3", "--nccl_comm_num", "2", "--fuse", "false",
             "--use_local_sgd", "true", "--local_sgd_steps", "2", "--label_smoothing_epsilon", "0.1",
             "--lr_strategy", "cosine_decay", "--warm_up_epochs", "1", "--reader_thread", "1",
             "--validate", "false", "--data_dir", digits, "--batch_size", "2"]
    runs = {}
    for name, program in (("py", [SCRIPT]), ("cpp", [build_path("bin", "train_with_fleet")])):
        log_dir = str(tmp_path / name)
        runs[name] = run([build_path("bin", "flotilla"), "launch", "--nproc_per_node", "2", "--log_dir", log_dir] +
                         program + flags, log_dir)
    py, cpp = runs["py"], runs["cpp"]
    print(f"[train_with_fleet ResNet50 strategy flags] python {py['steps']} C++ {cpp['steps']}")
    assert "ResNet50 on 64 images, 10 classes, 2 rank(s) x batch 2, 3 steps/epoch" in py["stdout"], py["stdout"]
    assert len(py["steps"]) == 3 and py["steps"] == pytest.approx(cpp["steps"], rel=1e-6, abs=1e-6)
    assert py["final"]["loss"] == pytest.approx(cpp["final"]["loss"], rel=1e-6)
    assert len(set(py["steps"])) == 3  # the parameters moved


@pytest.mark.parametrize("flags, message", [
    (["--fp16"], "--fp16: float16 training needs a GPU"),
    ([], "needs --data_dir"),
    (["--data_dir", "/nonexistent-flotilla-digits"], "/nonexistent-flotilla-digits"),
    (["--batch_size", "0", "--data_dir", "."], "--batch_size must be positive"),
])
def test_bad_flags_are_refused_by_name(flags, message):
    done = subprocess.run([sys.executable, SCRIPT, "--model=ResNet50"] + flags, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
