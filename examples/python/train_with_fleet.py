#!/usr/bin/python3
"""Paddle's fleet example ``train_with_fleet.py --model=ResNet50 --data_dir=./ImageNet``
against ``import flotilla``: image classification, data-parallel under
collective fleet, with the C++ train_with_fleet's flags and output
(per-interval loss, top-1/top-5, lr and images/s on rank 0, validation over
every rank's shard at each epoch's end, and a final JSON line).

    scripts/make_digits_imagenet.sh /tmp/digits
    flotilla launch --nproc_per_node 2 examples/python/train_with_fleet.py \\
        --model=ResNet18 --data_dir=/tmp/digits --image_size 32 --batch_size 32

(``make demo`` runs it so.) Bad flags and data are refused with a message
naming them, on stderr, exit status 2 (flags) or 1 (data).

The network is the C++ core's (flotilla.vision.models), the loss, schedule
and optimizer are Paddle's fluid.layers and fluid.optimizer, and the C++
core runs everything: this script only wires them together, as Paddle's
image-classification train.py does.
"""

import argparse
import json
import resource
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Union

import numpy as np

import flotilla
from flotilla import fluid
from flotilla.distributed import fleet
from flotilla.vision import ImageNetReader, models


def _bool(value: str) -> bool:
    """A boolean flag's value as the C++ flags spell it (true/false, 1/0)."""
    if value.lower() in ("true", "1", "yes", "on"):
        return True
    if value.lower() in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def parse_args(argv: List[str]) -> argparse.Namespace:
    """The seed's flags, checked; refuses --fp16 and a missing --data_dir."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="ResNet50", help="ResNet18|34|50|101|152 or LeNet")
    p.add_argument("--data_dir", default="", help="ImageNet layout: train_list.txt, val_list.txt, images")
    p.add_argument("--batch_size", type=int, default=32, help="images per step per rank")
    p.add_argument("--num_epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--lr_strategy", default="piecewise_decay", choices=["piecewise_decay", "cosine_decay", "constant"])
    p.add_argument("--warm_up_epochs", type=int, default=0, help="linear warmup epochs")
    p.add_argument("--momentum_rate", type=float, default=0.9)
    p.add_argument("--l2_decay", type=float, default=1e-4)
    p.add_argument("--label_smoothing_epsilon", type=float, default=0.0, help="label smoothing (0: off)")
    p.add_argument("--image_size", type=int, default=224, help="crop size")
    p.add_argument("--resize_short_size", type=int, default=0,
                   help="validation: short side before the centre crop (0: image_size * 256 / 224)")
    p.add_argument("--lower_scale", type=float, default=0.08, help="random-resized crop's smallest area fraction")
    p.add_argument("--random_flip", type=_bool, default=True)
    p.add_argument("--class_dim", type=int, default=0, help="classes (0: from the labels)")
    p.add_argument("--print_step", type=int, default=10)
    p.add_argument("--max_iter", type=int, default=0, help="steps per epoch at most (0: the whole epoch)")
    p.add_argument("--reader_thread", type=int, default=2, help="JPEG decode threads")
    p.add_argument("--random_seed", type=int, default=0, help="parameter init and augmentation seed (0: random)")
    p.add_argument("--validate", type=_bool, default=True, help="evaluate val_list.txt after each epoch")
    p.add_argument("--fp16", action="store_true", help="float16 training (refused: needs a GPU)")
    p.add_argument("--nccl_comm_num", "--comm_num", type=int, default=1, help="communicators")
    p.add_argument("--fuse", type=_bool, default=True, help="fuse_all_reduce_ops")
    p.add_argument("--fuse_mb", type=int, default=32, help="fuse_grad_size_in_MB")
    p.add_argument("--use_hierarchical_allreduce", type=_bool, default=False, help="reduce within hosts first")
    p.add_argument("--use_local_sgd", type=_bool, default=False, help="LocalSGD instead of per-step all-reduce")
    p.add_argument("--local_sgd_steps", type=int, default=2, help="LocalSGD k_steps")
    p.add_argument("--sync_bn", type=_bool, default=False, help="batch-norm statistics over every rank's batch")
    p.add_argument("--model_dir", default="", help="save persistables here at the end")
    args = p.parse_args(argv)
    for name in ("batch_size", "num_epochs", "image_size", "print_step", "reader_thread", "nccl_comm_num",
                 "local_sgd_steps", "fuse_mb"):
        if getattr(args, name) <= 0:
            p.error(f"--{name} must be positive, got {getattr(args, name)}")
    if args.fp16:
        p.error("--fp16: float16 training needs a GPU; this Flotilla build trains on the CPU in float32 "
                "(drop --fp16)")
    if args.model.lower() not in (m.lower() for m in models.model_names()):
        p.error(f"--model {args.model}: expected one of {', '.join(models.model_names())}")
    if not args.data_dir:
        p.error(f"--model {args.model} needs --data_dir (train_list.txt, val_list.txt and the images)")
    return args


class Net:
    """The variables the loop feeds and fetches."""

    def __init__(self, args: argparse.Namespace, classes: int):
        self.image = fluid.layers.data(name="image", shape=[3, args.image_size, args.image_size], dtype="float32")
        self.label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        logits = models.get_model(args.model).net(input=self.image, class_dim=classes)
        if args.label_smoothing_epsilon > 0:
            soft = fluid.layers.label_smooth(fluid.layers.one_hot(self.label, classes),
                                             epsilon=args.label_smoothing_epsilon)
            cost = fluid.layers.softmax_with_cross_entropy(logits, soft, soft_label=True)
        else:
            cost = fluid.layers.softmax_with_cross_entropy(logits, self.label)
        self.loss = fluid.layers.mean(cost)
        prob = fluid.layers.softmax(logits)
        self.acc1 = fluid.layers.accuracy(input=prob, label=self.label, k=1)
        self.acc5 = fluid.layers.accuracy(input=prob, label=self.label, k=min(5, classes))


def learning_rate(args: argparse.Namespace, steps_per_epoch: int):
    """Paddle's ResNet training recipe: piecewise decay by 10x at epochs 30/60/90,
    or cosine over the run; optional linear warmup."""
    lr = args.lr
    if args.lr_strategy == "piecewise_decay":
        lr = fluid.layers.piecewise_decay(boundaries=[e * steps_per_epoch for e in (30, 60, 90)],
                                          values=[args.lr * 0.1 ** i for i in range(4)])
    elif args.lr_strategy == "cosine_decay":
        lr = fluid.layers.cosine_decay(learning_rate=args.lr, step_each_epoch=steps_per_epoch,
                                       epochs=args.num_epochs)
    if args.warm_up_epochs > 0:
        lr = fluid.layers.linear_lr_warmup(lr, args.warm_up_epochs * steps_per_epoch, 0.0, args.lr)
    return lr


def strategy_of(args: argparse.Namespace) -> fleet.DistributedStrategy:
    """The example's collective knobs as a DistributedStrategy."""
    s = fleet.DistributedStrategy()
    s.nccl_comm_num = args.nccl_comm_num
    s.fuse_all_reduce_ops = args.fuse
    s.fuse_grad_size_in_MB = args.fuse_mb
    s.use_hierarchical_allreduce = args.use_hierarchical_allreduce
    s.sync_batch_norm = args.sync_bn
    if args.use_local_sgd:
        s.localsgd = True
        s.localsgd_configs = {"k_steps": args.local_sgd_steps}
    return s


# ImageNet's channel mean and std in 0..255, as the C++ reader computes them:
# in float32 (0.224f * 255 is one ulp above 0.224 * 255 rounded), so that this
# script and the C++ train_with_fleet normalise every image identically.
MEAN = tuple(float(np.float32(m) * np.float32(255)) for m in (0.485, 0.456, 0.406))
STD = tuple(float(np.float32(s) * np.float32(255)) for s in (0.229, 0.224, 0.225))


def reader(args: argparse.Namespace, train: bool) -> ImageNetReader:
    """This rank's shard of train_list.txt (augmented, equal shards) or of
    val_list.txt (resize-short + centre crop, every image once)."""
    short = args.resize_short_size if args.resize_short_size > 0 else (args.image_size * 256 + 112) // 224
    return ImageNetReader(args.data_dir, "train_list.txt" if train else "val_list.txt", train=train,
                          image_size=args.image_size, resize_short=max(short, args.image_size),
                          lower_scale=args.lower_scale, flip=args.random_flip, mean=MEAN, std=STD,
                          batch_size=args.batch_size,
                          num_workers=args.reader_thread, rank=fleet.worker_index(), nranks=fleet.worker_num(),
                          seed=args.random_seed)


def cpu_seconds() -> float:
    """CPU time of this process, every thread (the reader's included)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def validate(exe: fluid.Executor, test: flotilla.Program, net: Net, val: ImageNetReader) -> np.ndarray:
    """[loss, top1, top5] summed over the images of every rank, and the image count."""
    sums = np.zeros(4, np.float64)
    for image, label in val.epoch(0):
        loss, acc1, acc5 = exe.run(test, feed={"image": image, "label": label},
                                   fetch_list=[net.loss, net.acc1, net.acc5])
        k = len(image)
        sums += [float(loss.ravel()[0]) * k, float(acc1.ravel()[0]) * k, float(acc5.ravel()[0]) * k, k]
    return fleet.util.all_reduce(sums, mode="sum")


@dataclass
class Job:
    """The programs and variables one rank trains with."""
    main: flotilla.Program
    startup: flotilla.Program
    test: flotilla.Program
    net: Net
    lr: Union[float, flotilla.Variable]

    @property
    def fetch(self) -> list:
        """Loss, top-1, top-5 and, when scheduled, the learning rate."""
        return [self.net.loss, self.net.acc1, self.net.acc5] + (
            [self.lr] if isinstance(self.lr, flotilla.Variable) else [])


def build(args: argparse.Namespace, classes: int, steps_per_epoch: int) -> Job:
    """The network, its test clone, and Momentum with L2 decay wrapped by
    fleet's distributed optimizer (gradients all-reduced across ranks)."""
    main, startup = flotilla.Program(), flotilla.Program()
    if args.random_seed:
        startup.random_seed = args.random_seed
    with flotilla.program_guard(main, startup):
        net = Net(args, classes)
        test = main.clone(for_test=True)
        lr = learning_rate(args, steps_per_epoch)
        momentum = fluid.optimizer.Momentum(learning_rate=lr, momentum=args.momentum_rate,
                                            regularization=fluid.regularizer.L2Decay(args.l2_decay))
        fleet.distributed_optimizer(momentum, strategy_of(args)).minimize(net.loss, startup)
    return Job(main, startup, test, net, lr)


@dataclass
class Meter:
    """Images, wall and CPU seconds and steps over the training epochs."""
    images: float = 0.0
    secs: float = 0.0
    cpu_secs: float = 0.0
    steps: int = 0


def say(*args, **kwargs) -> None:
    """Prints on rank 0 only (the launcher streams rank 0's output)."""
    if fleet.worker_index() == 0:
        print(*args, **kwargs, flush=True)


def train_epoch(args: argparse.Namespace, exe: fluid.Executor, job: Job, data: ImageNetReader, epoch: int,
                steps: int, meter: Meter, last: Dict[str, float]) -> None:
    """Runs `steps` steps of `epoch`, printing every --print_step."""
    ranks = fleet.worker_num()
    start, cpu_start, images = time.monotonic(), cpu_seconds(), 0
    for step, (image, label) in enumerate(data.epoch(epoch)):
        if step >= steps:
            break
        out = exe.run(job.main, feed={"image": image, "label": label}, fetch_list=job.fetch)
        images += len(image)
        meter.steps += 1
        if (step + 1) % args.print_step == 0 or step + 1 == steps:
            loss, acc1, acc5 = (float(v.ravel()[0]) for v in out[:3])
            rate = float(out[3].ravel()[0]) if len(out) > 3 else float(job.lr)
            say(f"epoch {epoch} step {step + 1}: loss {loss:.4f} top1 {acc1:.4f} top5 {acc5:.4f} lr {rate:.6f} "
                f"images/s {images * ranks / (time.monotonic() - start):.1f}")
            last["loss"] = loss
    meter.images += images * ranks
    meter.secs += time.monotonic() - start
    meter.cpu_secs += cpu_seconds() - cpu_start


def train(args: argparse.Namespace) -> Dict[str, float]:
    """Trains and validates; rank 0 prints; returns the final JSON line's fields.
    Launched, each rank takes its role from the environment; started by hand,
    the script is the only worker (as Paddle's)."""
    fleet.init(is_collective=True)
    train_reader = reader(args, True)
    classes = args.class_dim if args.class_dim > 0 else train_reader.num_classes
    steps = len(train_reader) if args.max_iter <= 0 else min(len(train_reader), args.max_iter)
    if steps <= 0:
        raise ValueError(f"--data_dir {args.data_dir}: {train_reader.size} training images give no full batch "
                         f"of {args.batch_size} per rank")
    job = build(args, classes, steps)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(job.startup)
    say(f"train_with_fleet: {args.model} on {train_reader.size} images, {classes} classes, {fleet.worker_num()} "
        f"rank(s) x batch {args.batch_size}, {steps} steps/epoch")
    val = reader(args, False) if args.validate else None
    last: Dict[str, float] = {}
    meter = Meter()
    for epoch in range(args.num_epochs):
        train_epoch(args, exe, job, train_reader, epoch, steps, meter, last)
        if val is not None:
            v = validate(exe, job.test, job.net, val)
            last.update(val_loss=v[0] / v[3], val_top1=v[1] / v[3], val_top5=v[2] / v[3])
            say(f"epoch {epoch} validation: loss {v[0] / v[3]:.4f} top1 {v[1] / v[3]:.4f} top5 {v[2] / v[3]:.4f} "
                f"({int(v[3])} images)")
    if args.model_dir:
        fleet.save_persistables(exe, args.model_dir)
    fleet.barrier_worker()
    last.update(model=args.model, ranks=fleet.worker_num(), epochs=args.num_epochs,
                images_per_sec=meter.images / meter.secs if meter.secs > 0 else 0.0,
                rank0_cpu_ms_per_step=1e3 * meter.cpu_secs / meter.steps if meter.steps else 0.0)
    say(json.dumps(last, sort_keys=True, separators=(",", ":")))
    return last


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    try:
        train(args)
    except (flotilla.errors.Error, ValueError, OSError) as e:
        # Bad data or a lost peer: the message names it; a traceback would bury it.
        print(f"train_with_fleet.py: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
