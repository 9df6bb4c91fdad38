#!/usr/bin/env python3
"""What Lightning and Accelerate cost over a plain loop fed by the same stoker.Loader.

    build-python/venv/bin/python bench/frameworks_overhead.py [--data DIR] [--rounds 5]
        [--epochs 1] [--batch-size 64] [--arch mlp|cnn]

Runs examples/plain_train.py's, lightning_train.py's and accelerate_train.py's train()
alternately in this process (after one plain warm-up run; --rounds rounds, each started by the
next of the three), each training the examples' classifier (--arch: common.classifier's MLP, a
1-2 ms step, or its LeNet-like CNN, tens of ms) on the CPU, and prints every run's
images/s (each example's own count from its loop's start: the frameworks' set-up before the
loop is left out), then the medians and Lightning's and Accelerate's ratios to plain (the
target: >= 0.95) and the time each adds to a step (a fixed cost: the larger the step, the
smaller the ratio's gap). DATA defaults to
Fashion-MNIST's train split, converted from Debian's files into a temporary directory. On a
shared machine the spread between rounds says how far to trust the ratios.
"""

import argparse
import os
import pathlib
import statistics
import sys
import tempfile

import torch

import stoker

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
import accelerate_train  # noqa: E402
import common  # noqa: E402
import lightning_train  # noqa: E402
import plain_train  # noqa: E402

LOOPS = {"plain": plain_train.train, "lightning": lightning_train.train,
         "accelerate": accelerate_train.train}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="a stoker dataset (default: Fashion-MNIST train)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--arch", choices=common.ARCHS, default="mlp")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the loader's workers have the other cores
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            stoker.convert("fashion-mnist", out=tmp)
        data = args.data or os.path.join(tmp, "train")
        plain_train.train(data, args.epochs, args.batch_size, args.arch)  # warm-up, not counted
        rates = {name: [] for name in LOOPS}
        names = list(LOOPS)
        for round_ in range(args.rounds):
            for name in names[round_ % 3:] + names[:round_ % 3]:  # each goes first in turn
                rates[name].append(LOOPS[name](data, args.epochs, args.batch_size, args.arch))
            print(f"round {round_}: " + ", ".join(f"{name} {rate[-1]:.0f}"
                                                  for name, rate in rates.items()) +
                  " images/s", flush=True)
    medians = {name: statistics.median(rate) for name, rate in rates.items()}
    spread = {name: (max(rate) - min(rate)) / medians[name] for name, rate in rates.items()}
    for name in LOOPS:
        # The framework's own time per step: what it adds to the plain loop's step.
        extra_us = (1 / medians[name] - 1 / medians["plain"]) * args.batch_size * 1e6
        print(f"{name:10s} median {medians[name]:8.0f} images/s, spread {spread[name]:.0%}"
              + ("" if name == "plain" else
                 f", {medians[name] / medians['plain']:.3f} of plain (target >= 0.95), "
                 f"{extra_us:+.0f} us a step"))


if __name__ == "__main__":
    main()
