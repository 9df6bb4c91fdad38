#!/usr/bin/env python3
"""stoker.Loader's images/s on the textbook pipeline, two builds of the package side by side.

Each round runs one epoch (after a warm one) of RandomResizedCrop(224) + RandomHorizontalFlip
+ ToTensor + Normalize, batch 64, --workers native workers, over --data, once with the package
in --a and once with the one in --b (each a `python/` folder holding a built stoker, e.g. a
checkout of an older commit after building its extension), each in a process of its own,
alternated; then the medians and b / a.

Usage: .venv/bin/python bench/compare_packages.py --a OLD/python --b python --data DATASET
       [--rounds 5] [--workers 2]
"""

import argparse
import os
import statistics
import subprocess
import sys

# One round, in the process of the package under test: prints images/s.
ROUND = """
import sys, time
import stoker
from stoker import transforms as S
options = {"batch_format": "dict"} if "batch_format" in stoker.Loader.__init__.__code__.co_varnames else {}
loader = stoker.Loader(sys.argv[1], batch_size=64, workers=int(sys.argv[2]), seed=1, **options,
                       transforms=S.Compose([S.RandomResizedCrop(224), S.RandomHorizontalFlip(),
                                             S.ToTensor(), S.Normalize([0.485, 0.456, 0.406],
                                                                       [0.229, 0.224, 0.225])]))
for epoch in range(2):
    start, images = time.perf_counter(), 0
    for batch in loader.epoch(epoch):
        images += len(batch["image"] if isinstance(batch, dict) else batch[0])
print(images / (time.perf_counter() - start))
"""


def rate(package: str, data: str, workers: int) -> float:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(package))
    out = subprocess.run([sys.executable, "-c", ROUND, data, str(workers)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True, help="the first package's python/ folder")
    p.add_argument("--b", required=True, help="the second package's python/ folder")
    p.add_argument("--data", required=True, help="a stoker dataset of JPEGs")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    runs = {"a": [], "b": []}
    for _ in range(a.rounds):
        runs["a"].append(rate(a.a, a.data, a.workers))
        runs["b"].append(rate(a.b, a.data, a.workers))
    medians = {k: statistics.median(v) for k, v in runs.items()}
    for k, v in runs.items():
        print(f"{k}: images/s by round {', '.join(f'{x:.0f}' for x in v)}; median {medians[k]:.0f}")
    print(f"b / a: {medians['b'] / medians['a']:.3f}")


if __name__ == "__main__":
    main()
