#!/usr/bin/env python3
"""What Lightning and Accelerate cost over a plain loop fed by the same stoker.Loader.

    build-python/venv/bin/python bench/frameworks_overhead.py [--data DIR | --split test]
        [--rounds 5] [--epochs 1] [--batch-size 64] [--arch mlp|cnn] [--feed loader|resident]

Runs examples/plain_train.py's, lightning_train.py's and accelerate_train.py's train()
alternately in this process (after one plain warm-up run; --rounds rounds, each started by the
next of the three), each training the examples' classifier (--arch: common.classifier's MLP, a
1-2 ms step, or its LeNet-like CNN, tens of ms) on the CPU, and prints every run's
images/s (each example's own count from its loop's start: the frameworks' set-up before the
loop is left out), then the medians, the time each framework adds to a step (a fixed cost: the
larger the step, the smaller the ratio's gap) and Lightning's and Accelerate's ratios to plain
(the target: >= 0.95): the ratio of the medians, and the median of each round's own ratio,
which the machine's drift over minutes moves less. Beside the images/s of each run, its steady
pace: the batch over the median time between the starts of two steps (timed by wrapping each
example's step function), which a stall of the shared machine does not move. DATA defaults to
Fashion-MNIST's --split (train: 60,000 images; test: 10,000, for shorter rounds), converted from
Debian's files into a temporary directory. On a shared machine the spread between rounds says
how far to trust the ratios.

--feed resident hands every loop the same batches held in memory (one epoch of the real loader,
made once) in place of stoker.Loader: the ratios then measure the frameworks alone, and beside
a run with the loader they show whether the loader costs more inside a framework than outside.
"""

import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch

import stoker

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
import accelerate_train  # noqa: E402
import common  # noqa: E402
import lightning_train  # noqa: E402
import plain_train  # noqa: E402

LOOPS = {"plain": plain_train.train, "lightning": lightning_train.train,
         "accelerate": accelerate_train.train}
STEP_STARTS = []  # when each step of the running loop started (time.perf_counter)


class ResidentBatches:
    """Stands in for stoker.Loader under --feed resident: one epoch of the real loader's
    batches, made once per (data, batch size, transforms) and handed out again in every epoch."""

    made = {}
    real_loader = stoker.Loader

    def __init__(self, data, batch_size, transforms=None, batch_format=None, **_ignored):
        key = (data, batch_size, repr(transforms), repr(batch_format))
        if key not in self.made:
            self.made[key] = list(self.real_loader(data, batch_size=batch_size,
                                                   transforms=transforms,
                                                   batch_format=batch_format))
        self.batches = self.made[key]

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)

    def set_epoch(self, epoch):
        pass

    def state_dict(self):  # what Accelerate's register_for_checkpointing asks of it
        return {}

    def load_state_dict(self, state):
        pass


def timed(step):
    """`step`, noting when each call starts."""
    def timed_step(*args, **kwargs):
        STEP_STARTS.append(time.perf_counter())
        return step(*args, **kwargs)
    return timed_step


plain_train.train_step = timed(common.train_step)
accelerate_train.train_step = timed(common.train_step)
lightning_train.Classifier.training_step = timed(lightning_train.Classifier.training_step)


def report(name, rates, plain, note=""):
    """One line: the median of `rates`, its spread, and its ratios to `plain`'s."""
    median = statistics.median(rates)
    spread = (max(rates) - min(rates)) / median
    line = f"{name:10s} median {median:8.0f} images/s, spread {spread:.0%}"
    if name != "plain":
        paired = statistics.median(r / p for r, p in zip(rates, plain))
        line += (f"; of plain (target >= 0.95): {median / statistics.median(plain):.3f} "
                 f"(medians), {paired:.3f} (by round)")
    print(line + note)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="a stoker dataset (default: Fashion-MNIST's --split)")
    parser.add_argument("--split", choices=("train", "test"), default="train")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--arch", choices=common.ARCHS, default="mlp")
    parser.add_argument("--feed", choices=("loader", "resident"), default="loader")
    args = parser.parse_args()
    if args.feed == "resident":
        stoker.Loader = ResidentBatches  # what every example builds its loader with
    torch.set_num_threads(1)  # the loader's workers have the other cores
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            stoker.convert("fashion-mnist", out=tmp)
        data = args.data or os.path.join(tmp, args.split)
        plain_train.train(data, args.epochs, args.batch_size, args.arch)  # warm-up, not counted
        rates = {name: [] for name in LOOPS}
        steady = {name: [] for name in LOOPS}
        names = list(LOOPS)
        for round_ in range(args.rounds):
            for name in names[round_ % 3:] + names[:round_ % 3]:  # each goes first in turn
                STEP_STARTS.clear()
                rates[name].append(LOOPS[name](data, args.epochs, args.batch_size, args.arch))
                gaps = [b - a for a, b in zip(STEP_STARTS, STEP_STARTS[1:])]
                steady[name].append(args.batch_size / statistics.median(gaps))
            print(f"round {round_}: " + ", ".join(
                f"{name} {rates[name][-1]:.0f} ({steady[name][-1]:.0f} steady)" for name in LOOPS)
                + " images/s", flush=True)
    print("images/s of each run:")
    for name in LOOPS:
        # The framework's own time per step: what it adds to the plain loop's step.
        extra_us = (1 / statistics.median(rates[name]) -
                    1 / statistics.median(rates["plain"])) * args.batch_size * 1e6
        report(name, rates[name], rates["plain"],
               "" if name == "plain" else f"; {extra_us:+.0f} us a step")
    print("steady pace (the batch over the median step):")
    for name in LOOPS:
        report(name, steady[name], steady["plain"])


if __name__ == "__main__":
    main()
