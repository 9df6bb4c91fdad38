#!/usr/bin/env python3
"""A detection pipeline whose tail stoker runs in Python, in the iterating thread and in Python
worker processes, against DataLoader running all of it in Python.

The pipeline: the detection reference's `hflip` preset (bench/peers/detection.py's
DetectionPresetTrain, v2, PIL backend) with a v2.GaussianBlur(5, sigma=(0.1, 2.0)) after the
flip, on a COCO-shaped set (bench/make_coco_set.py's; its train split as the reference keeps
it), batches of 8 as the reference's collate_fn gives them (tuples of images and targets).

  stoker-pN   stoker.Loader over the set converted (`stoker.convert("coco")`, into --work),
              --workers native workers: the flip native (on the decoded image, its boxes and
              masks), GaussianBlur and every step after it in Python on the whole sample (PIL
              image, BoundingBoxes), in N Python worker processes (python_workers=N, each N of
              --python-workers; 0: the iterating thread; ``loader.plan`` is printed)
  dataloader  the reference's train.py with --use-v2: CocoDetection +
              wrap_dataset_for_transforms_v2, the whole pipeline in --workers DataLoader worker
              processes (persistent, prefetch_factor 2)

Each round times --batches batches of each (after 3 warm-up batches; a new epoch where one
ends), the loaders alternated; medians over --rounds and the ratios to dataloader. Then the
first batches of stoker with 1 native worker and python_workers=0 and with --workers and the
last of --python-workers are compared (the same, or not).

Usage: .venv/bin/python bench/joint_python_steps.py COCO --work WORK [--workers 2]
       [--python-workers 0,2] [--rounds 3] [--batches 40] [--json]
(a Python with the stoker package: PYTHONPATH=python after building the extension, or the
README's venv)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import torch
from torchvision.transforms import v2

import stoker
from stoker.transforms import DecodeImage

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import detection  # noqa: E402  (the reference's preset, train split and collate_fn)
from python_steps import print_rounds, rate  # noqa: E402  (images/s after a warm-up; report)

WORK = detection.WORKS["det-hflip"]


def pipeline():
    """The hflip preset with a GaussianBlur after its flip (on the PIL image)."""
    steps = list(detection.preset(WORK).transforms)
    assert type(steps[0]).__name__ == "RandomHorizontalFlip"
    return v2.Compose([steps[0], v2.GaussianBlur(5, sigma=(0.1, 2.0)), *steps[1:]])


def prepare(coco_set: str, work: str) -> None:
    """The train split's annotations and the stoker dataset of them, once."""
    if not os.path.exists(os.path.join(work, "dataset")):
        detection.write_set(coco_set, work)
        coco = detection.read_set(work)
        stoker.convert("coco", coco["images"], os.path.join(work, "dataset"),
                       annotations=coco["annotations"])


def stoker_loader(work: str, workers: int, python_workers: int):
    coco = detection.read_set(work)
    transforms = v2.Compose([DecodeImage(max_size=coco["largest_side"]), pipeline()])
    return stoker.Loader(os.path.join(work, "dataset"), batch_size=detection.BATCH,
                         shuffle=True, seed=1, workers=workers, python_workers=python_workers,
                         transforms={"image": transforms, "masks": None, "area": None,
                                     "iscrowd": None},
                         batch_format=("image", "boxes", "labels", "image_id"),
                         variable="list", last_batch="drop")


def dataloader(work: str, workers: int):
    from torchvision.datasets import CocoDetection, wrap_dataset_for_transforms_v2
    coco = detection.read_set(work)
    dataset = CocoDetection(coco["images"], coco["annotations"], transforms=pipeline())
    dataset = wrap_dataset_for_transforms_v2(dataset, target_keys=["boxes", "labels", "image_id"])
    generator = torch.Generator().manual_seed(1)
    extra = {"persistent_workers": True, "prefetch_factor": 2} if workers else {}
    return torch.utils.data.DataLoader(dataset, batch_size=detection.BATCH, shuffle=True,
                                       generator=generator, num_workers=workers,
                                       collate_fn=detection.collate, drop_last=True, **extra)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("coco", help="a COCO-shaped set (bench/make_coco_set.py's OUT)")
    p.add_argument("--work", required=True, help="where the stoker dataset is written (once)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--python-workers", default="0,2",
                   help="the python_workers of stoker, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)
    prepare(a.coco, a.work)

    python_workers = [int(n) for n in a.python_workers.split(",")]
    loaders = {f"stoker-p{n}": stoker_loader(a.work, a.workers, n) for n in python_workers}
    loaders["dataloader"] = dataloader(a.work, a.workers)
    stokers = [name for name in loaders if name != "dataloader"]
    runs = {name: [] for name in loaders}
    for _ in range(a.rounds):
        for name, loader in loaders.items():
            runs[name].append(rate(loader, a.batches))
    medians = {name: statistics.median(r) for name, r in runs.items()}

    def first(workers, python_workers):
        made = stoker_loader(a.work, workers, python_workers)
        return [x for _, batch in zip(range(3), made.epoch(0)) for field in batch[:3]
                for x in field]

    same = all(torch.equal(x, y) for x, y in zip(first(a.workers, python_workers[-1]),
                                                  first(1, 0)))
    last = f"stoker-p{python_workers[-1]}"
    result = {"plan": loaders[last].plan["image"], "images_per_s": runs, "medians": medians,
              "ratios": {name: medians[name] / medians["dataloader"] for name in stokers},
              "workers": a.workers, "same_batches": same,
              "python_stats": {name: {k: v for k, v in loaders[name].stats().items()
                                      if k.startswith("python") and k != "python_step_seconds"}
                               for name in stokers}}
    if a.json:
        print(json.dumps(result))
        return
    for step, where in result["plan"]:
        print(f"  {where:<7} {step}")
    print_rounds(runs, medians, result, a.workers)
    print(f"the same batches for 1 native worker and python_workers=0 as for {a.workers} and "
          f"python_workers={python_workers[-1]}: {same}")


if __name__ == "__main__":
    main()
