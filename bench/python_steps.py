#!/usr/bin/env python3
"""A recipe with steps stoker runs in Python, against DataLoader running all of it in Python.

The recipe is torchvision's ResNet-50 v2 training pipeline (its classification reference):
RandomResizedCrop(176) + RandomHorizontalFlip + TrivialAugmentWide + PILToTensor +
ToDtype(float32) + Normalize + RandomErasing(0.1), then a RandomChoice of MixUp(0.2) and
CutMix(1.0) on each batch of 64. Whatever stoker.transforms does not translate runs in Python
after the native steps (``loader.plan`` is printed); the batch transform runs on each batch.

  stoker      stoker.Loader over the stoker dataset (--data), native workers (--workers),
              the Python steps in the iterating thread, batch_transform=the RandomChoice
  dataloader  torchvision ImageFolder (--src) through DataLoader with --workers processes, the
              whole pipeline on PIL images in them, MixUp/CutMix in the collate function (as
              the reference does)

Each round times --batches batches of each (after 3 warm-up batches), the two alternated;
medians over --rounds and the ratio stoker / dataloader (issue 47's target >= 1). Then the
first batches of stoker with 1 and 2 workers are compared (the same, or not).

Usage: .venv/bin/python bench/python_steps.py --src IMAGES/train --data DATASET
       [--workers 2] [--rounds 3] [--batches 20] [--json]
(a Python with the stoker package: PYTHONPATH=python after building the extension, or the
README's venv)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torchvision
import torchvision.transforms.v2 as T2

import stoker

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
CLASSES = 10


def recipe():
    return T2.Compose([T2.RandomResizedCrop(176, antialias=True), T2.RandomHorizontalFlip(),
                       T2.TrivialAugmentWide(), T2.PILToTensor(),
                       T2.ToDtype(torch.float32, scale=True), T2.Normalize(MEAN, STD),
                       T2.RandomErasing(0.1), T2.ToPureTensor()])


def mix():
    return T2.RandomChoice([T2.MixUp(alpha=0.2, num_classes=CLASSES),
                            T2.CutMix(alpha=1.0, num_classes=CLASSES)])


def stoker_loader(data, workers):
    return stoker.Loader(data, batch_size=64, workers=workers, seed=1, transforms=recipe(),
                         batch_format=("image", "label"), batch_transform=mix(),
                         last_batch="drop")


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
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)

    ours = stoker_loader(a.data, a.workers)
    theirs = dataloader(a.src, a.workers)
    runs = {"stoker": [], "dataloader": []}
    for _ in range(a.rounds):
        runs["stoker"].append(rate(ours, a.batches))
        runs["dataloader"].append(rate(theirs, a.batches))
    medians = {name: statistics.median(r) for name, r in runs.items()}

    def first(workers):
        return [b[0] for _, b in zip(range(3), stoker_loader(a.data, workers).epoch(0))]

    same = all(torch.equal(x, y) for x, y in zip(first(1), first(2)))
    result = {"plan": ours.plan["image"], "images_per_s": runs, "medians": medians,
              "ratio": medians["stoker"] / medians["dataloader"], "workers": a.workers,
              "same_batches_1_and_2_workers": same,
              "python_seconds": ours.stats()["python_seconds"]}
    if a.json:
        print(json.dumps(result))
        return
    for step, where in result["plan"]:
        print(f"  {where:<7} {step}")
    for name, r in runs.items():
        print(f"{name:<11} images/s by round {', '.join(f'{x:.0f}' for x in r)}; "
              f"median {medians[name]:.0f}")
    print(f"stoker / dataloader: {result['ratio']:.2f} ({a.workers} workers); the same batches "
          f"for 1 and 2 workers: {same}")


if __name__ == "__main__":
    main()
