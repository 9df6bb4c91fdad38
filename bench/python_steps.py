#!/usr/bin/env python3
"""torchvision's ResNet-50 v2 training recipe on stoker, natively and with steps in Python,
against DataLoader running all of it in Python.

The recipe (torchvision's classification reference): RandomResizedCrop(176) +
RandomHorizontalFlip + TrivialAugmentWide + PILToTensor + ConvertImageDtype(float32) +
Normalize + RandomErasing(0.1), then a RandomChoice of MixUp(0.2) and CutMix(1.0) on each batch
of 64, written with torchvision.transforms (v1, the reference's default) or transforms.v2.

  stoker-v1   stoker.Loader over the stoker dataset (--data), --workers native workers: every
              step native (v1's TrivialAugmentWide is), batch_transform=the RandomChoice
  stoker-v2-pN  the same with v2's classes, its TrivialAugmentWide given a fill per input type
              (PIL images: 0, the default's pixels), which stoker leaves to Python (v2's policy
              is native otherwise): it and the steps after it run in
              Python, on PIL images (``loader.plan`` is printed), in N Python worker processes
              (python_workers=N, each N of --python-workers; 0: the iterating thread). The
              medians choose the loader's default python_workers (2 where there are two
              cores or more, the fastest at 2 cores; the iterating thread at 1 core, the
              fastest there: docs/BENCHMARKS.md; 4 not measured)
  dataloader  torchvision ImageFolder (--src) through DataLoader with --workers processes, the
              v1 recipe on PIL images in them, MixUp/CutMix in the collate function (as the
              reference does)

Each round times --batches batches of each (after 3 warm-up batches), the three alternated;
medians over --rounds and the ratios to dataloader (issue 47's target for Python steps >= 1).
Then the first batches of stoker-v2 with 1 and 2 native workers and with python_workers 0 and
the last of --python-workers are compared (the same, or not).

Usage: .venv/bin/python bench/python_steps.py --src IMAGES/train --data DATASET
       [--workers 2] [--python-workers 0,1,2] [--rounds 3] [--batches 20] [--json]
(a Python with the stoker package: PYTHONPATH=python after building the extension, or the
README's venv)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import PIL.Image
import torch
import torchvision
import torchvision.transforms as T1
import torchvision.transforms.v2 as T2

import stoker

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
CLASSES = 10


def recipe(T=T1):
    policy = T2.TrivialAugmentWide(fill={PIL.Image.Image: 0}) if T is T2 else T.TrivialAugmentWide()
    return T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(), policy,
                      T.PILToTensor(), T.ConvertImageDtype(torch.float32), T.Normalize(MEAN, STD),
                      T.RandomErasing(0.1)])


def mix():
    return T2.RandomChoice([T2.MixUp(alpha=0.2, num_classes=CLASSES),
                            T2.CutMix(alpha=1.0, num_classes=CLASSES)])


def stoker_loader(data, workers, T=T1, python_workers=None):
    return stoker.Loader(data, shuffle=True, batch_size=64, workers=workers, seed=1, transforms=recipe(T),
                         batch_format=("image", "label"), batch_transform=mix(),
                         last_batch="drop", python_workers=python_workers)


def dataloader(src, workers):
    mixing = mix()

    def collate(batch):
        return mixing(*torch.utils.data.default_collate(batch))

    folder = torchvision.datasets.ImageFolder(src, transform=recipe())
    return torch.utils.data.DataLoader(folder, batch_size=64, shuffle=True, num_workers=workers,
                                       collate_fn=collate, drop_last=True,
                                       persistent_workers=workers > 0)


def rate(iterator, batches: int) -> float:
    """Images/s over `batches` batches after 3 warm-up ones (a new epoch when one ends)."""
    def take():
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(iterator)
            return next(it)

    it = iter(iterator)
    for _ in range(3):
        take()
    start = time.perf_counter()
    images = 0
    for _ in range(batches):
        images += len(take()[0])
    return images / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", required=True, help="the ImageFolder's train/ folder")
    p.add_argument("--data", required=True, help="the stoker dataset converted from it")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--python-workers", default="0,1,2",
                   help="the python_workers of stoker-v2, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)

    python_workers = [int(n) for n in a.python_workers.split(",")]
    loaders = {"stoker-v1": stoker_loader(a.data, a.workers)}
    for n in python_workers:
        loaders[f"stoker-v2-p{n}"] = stoker_loader(a.data, a.workers, T2, n)
    loaders["dataloader"] = dataloader(a.src, a.workers)
    stokers = [name for name in loaders if name != "dataloader"]
    runs = {name: [] for name in loaders}
    for _ in range(a.rounds):
        for name, loader in loaders.items():
            runs[name].append(rate(loader, a.batches))
    medians = {name: statistics.median(r) for name, r in runs.items()}

    def first(workers, python_workers):
        made = stoker_loader(a.data, workers, T2, python_workers)
        return [b[0] for _, b in zip(range(3), made.epoch(0))]

    reference = first(1, 0)
    same = all(torch.equal(x, y) for x, y in zip(first(2, python_workers[-1]), reference))
    v2 = f"stoker-v2-p{python_workers[-1]}"
    result = {"plans": {name: loaders[name].plan["image"] for name in ("stoker-v1", v2)},
              "images_per_s": runs, "medians": medians,
              "ratios": {name: medians[name] / medians["dataloader"] for name in stokers},
              "workers": a.workers, "same_batches_1_and_2_workers": same,
              "python_stats": {name: {k: v for k, v in loaders[name].stats().items()
                                      if k.startswith("python")} for name in stokers}}
    if a.json:
        print(json.dumps(result))
        return
    for name, plan in result["plans"].items():
        print(name)
        for step, where in plan:
            print(f"  {where:<7} {step}")
    print_rounds(runs, medians, result, a.workers)
    print(f"stoker-v2, the same batches for 1 native worker and python_workers=0 as for 2 and "
          f"python_workers={python_workers[-1]}: {same}")


def print_rounds(runs: dict, medians: dict, result: dict, workers: int) -> None:
    """Each loader's images/s by round and median, its ratio to DataLoader, its Python stats."""
    width = max(len(name) for name in runs) + 2
    for name, r in runs.items():
        print(f"{name:<{width}} images/s by round {', '.join(f'{x:.0f}' for x in r)}; "
              f"median {medians[name]:.0f}")
    for name, ratio in result["ratios"].items():
        print(f"{name} / dataloader: {ratio:.2f} ({workers} workers)")
    for name, stats in result["python_stats"].items():
        print(f"{name:<{width}} " + ", ".join(f"{k} {_shown(v)}" for k, v in stats.items()))


def _shown(value) -> str:
    """A stat as the summary prints it: a number to 3 digits, a dict or list of them (per
    step) in brackets."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return f"{value:.3g}" if isinstance(value, (int, float)) else str(value)


if __name__ == "__main__":
    main()
