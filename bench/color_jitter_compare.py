#!/usr/bin/env python3
"""color_jitter's CPU time per image beside torchvision's v2 ColorJitter, one core, one run.

Each adjustment alone (amount 0.4, hue 0.1) and all four, on a random uint8 RGB tensor
[3, 224, 224]: stoker's `build/bench/color_jitter_bench` (the operation in place, a restore copy
included, a new sample's draws each time) and torchvision.transforms.v2.ColorJitter on the
tensor (a new tensor each time), torch on one thread. Prints µs per image and torchvision's
time over stoker's.

  .venv/bin/python bench/color_jitter_compare.py [--bench build/bench/color_jitter_bench]
        [--seconds 0.5] [--json]
"""
import argparse
import json
import os
import subprocess
import time

import torch
from torchvision.transforms import v2

HERE = os.path.dirname(os.path.abspath(__file__))
# The bench's labels, in its order, and the same amounts for torchvision.
CASES = {
    "brightness": dict(brightness=0.4),
    "contrast": dict(contrast=0.4),
    "saturation": dict(saturation=0.4),
    "hue": dict(hue=0.1),
    "all": dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
}


def stoker_us(bench, seconds):
    """{label: CPU µs per image} from the Google Benchmark."""
    out = subprocess.run([bench, "--benchmark_format=json", f"--benchmark_min_time={seconds}"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return {b["label"]: b["cpu_time"] for b in json.loads(out)["benchmarks"]}


def torchvision_us(amounts, image, seconds):
    """CPU µs per image of torchvision's ColorJitter(**amounts) on `image`."""
    jitter = v2.ColorJitter(**amounts)
    jitter(image)
    calls, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        jitter(image)
        calls += 1
    return (time.process_time() - start) / calls * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", default=os.path.join(HERE, "..", "build", "bench",
                                                   "color_jitter_bench"))
    p.add_argument("--seconds", type=float, default=0.5, help="least time per measurement")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    torch.set_num_threads(1)
    image = torch.randint(0, 256, (3, 224, 224), dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(1))
    ours = stoker_us(args.bench, args.seconds)
    rows = []
    for label, amounts in CASES.items():
        theirs = torchvision_us(amounts, image, args.seconds)
        rows.append({"adjustment": label, "stoker_us": ours[label], "torchvision_us": theirs,
                     "ratio": theirs / ours[label]})
    if args.json:
        print(json.dumps({"torch": torch.__version__, "results": rows}))
        return
    print(f"{'adjustment':<12}{'stoker µs':>12}{'torchvision µs':>16}{'ratio':>8}")
    for r in rows:
        print(f"{r['adjustment']:<12}{r['stoker_us']:>12.1f}{r['torchvision_us']:>16.1f}"
              f"{r['ratio']:>7.1f}x")


if __name__ == "__main__":
    main()
