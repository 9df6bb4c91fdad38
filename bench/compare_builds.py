#!/usr/bin/env python3
"""Two stoker builds side by side in one run, alternating A B B A, on the measures a user asks
about first: the classic experiment's training epoch (`train`, samples/s of its epoch record),
the loader's samples/s (`bench loader` on Fashion-MNIST) and images/s (`bench loader` on an image
dataset: RandomResizedCrop 224 + flip + normalise). Prints each measure's medians and B/A.

Usage: bench/compare_builds.py --a BUILD_A/stoker --b BUILD_B/stoker --data DIR [--images DIR]
       [--rounds 3]
  --data: a folder holding fashion-mnist/ (stoker convert fashion-mnist --out DIR/fashion-mnist)
  --images: an image dataset (stoker convert imagefolder ...), e.g. DIR/img
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def train(stoker, data):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.jsonl")
        subprocess.run([stoker, "train", "--data", os.path.join(data, "fashion-mnist"),
                        "--epochs", "1", "--no-eval", "--log", log],
                       check=True, capture_output=True)
        with open(log) as f:
            epochs = [json.loads(line) for line in f if '"epoch"' in line]
        return epochs[-1]["samples_per_second"]


def bench_loader(stoker, data):
    out = subprocess.run([stoker, "bench", "loader", "--data", data, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["samples_per_s"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True)
    parser.add_argument("--b", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--images")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    measures = {
        "train epoch, samples/s": lambda s: train(s, args.data),
        "loader, samples/s": lambda s: bench_loader(s, os.path.join(args.data, "fashion-mnist")),
    }
    if args.images:
        measures["images/s"] = lambda s: bench_loader(s, args.images)
    results = {name: {"a": [], "b": []} for name in measures}
    for r in range(args.rounds):
        for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
            for name, measure in measures.items():
                results[name][side].append(measure(getattr(args, side)))
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds, alternating; medians\n")
    print("| measure | A | B | B / A |\n|---|---:|---:|---:|")
    for name, sides in results.items():
        a, b = statistics.median(sides["a"]), statistics.median(sides["b"])
        print(f"| {name} | {a:,.0f} | {b:,.0f} | {b / a:.2f} |")
    print("\n" + json.dumps(results))


if __name__ == "__main__":
    main()
