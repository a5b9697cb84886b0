#!/usr/bin/python3
"""Writes CTR training data in the text format of Paddle's avazu_ctr_data
(what Paddle's ctr_dataset_reader.py parses), made up locally:

    <dnn ids, space-separated>\\t<lr ids as id:1, space-separated>\\t<click 0|1>

The click is 1 when a dnn id is below vocab/10, so a model can learn it.

Usage:
    make_ctr_data.py --out FILE [--lines N] [--seed S] [--vocab V]
    make_ctr_data.py --avazu-dir DIR [--lines N] ...
        writes DIR/avazu_ctr_data/{train,test,infer}.txt and data.meta.txt
        (dnn_input_dim / lr_input_dim), the layout Paddle's prepare_data()
        reads after its download.
"""

import argparse
import os
import random
import sys
from typing import List, Sequence, TextIO


def ctr_line(rng: random.Random, vocab: int, dnn_num: int, lr_num: int) -> str:
    """One sample: ``dnn_num`` deep ids, ``lr_num`` wide ids, the click."""
    dnn = [rng.randrange(vocab) for _ in range(dnn_num)]
    lr = [rng.randrange(vocab) for _ in range(lr_num)]
    click = int(any(i < vocab // 10 for i in dnn))
    return " ".join(map(str, dnn)) + "\t" + " ".join(f"{i}:1" for i in lr) + f"\t{click}\n"


def write_lines(out: TextIO, lines: int, seed: int, vocab: int) -> None:
    """``lines`` samples of 1-7 deep and 1-5 wide ids."""
    rng = random.Random(seed)
    for _ in range(lines):
        out.write(ctr_line(rng, vocab, rng.randint(1, 7), rng.randint(1, 5)))


def write_avazu_dir(root: str, lines: int, seed: int, vocab: int) -> List[str]:
    """Paddle's unpacked avazu_ctr_data folder under ``root``; returns its files."""
    folder = os.path.join(root, "avazu_ctr_data")
    os.makedirs(folder, exist_ok=True)
    written = []
    for offset, name in enumerate(("train.txt", "test.txt", "infer.txt")):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            write_lines(f, lines, seed + offset, vocab)
        written.append(path)
    meta = os.path.join(folder, "data.meta.txt")
    with open(meta, "w") as f:
        f.write(f"dnn_input_dim: {vocab}\nlr_input_dim: {vocab}\n")
    return written + [meta]


def main(argv: Sequence[str]) -> int:
    """Command line entry."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", help="one file of samples ('-': stdout)")
    target.add_argument("--avazu-dir", help="write Paddle's avazu_ctr_data folder under this directory")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", type=int, default=100000)
    args = parser.parse_args(argv)
    if args.lines < 0 or args.vocab < 10:
        parser.error("--lines must be >= 0 and --vocab >= 10")
    if args.avazu_dir:
        for path in write_avazu_dir(args.avazu_dir, args.lines, args.seed, args.vocab):
            print(path)
    elif args.out == "-":
        write_lines(sys.stdout, args.lines, args.seed, args.vocab)
    else:
        with open(args.out, "w") as f:
            write_lines(f, args.lines, args.seed, args.vocab)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
