#!/usr/bin/env python3
"""`stoker doctor` on the three situations of issue 14, and what its first action buys.

  (a) data-bound: the MLP on Fashion-MNIST with a synthetic cost per sample and 1 worker; and
      the MLP on encoded images at 32 px (decode + RandomResizedCrop on the loader), 1 worker;
  (b) compute-bound: the default MLP run; and ResNet-18 on the same images;
  (c) balanced: the MLP with a synthetic cost that makes the loader about as fast as compute.

Each situation runs `stoker doctor --json`; for (a) the first suggested action is applied (its
option appended) and the doctor run again, so the loop's throughput before and after are
measured side by side. With --auto, also the MLP of (a) with --workers 1, 2, 3 and auto (the
training loop's rate as the doctor measures it, after its warm-up).

  .venv/bin/python bench/doctor_situations.py [--stoker build/stoker] [--images DIR] [--seconds 3]
                                              [--auto] [--json]

DIR is a folder with train/ (and test/) converted by `stoker convert imagefolder` (for example
from bench/make_image_set.py); without it the image situations are left out. Fashion-MNIST is
the default data ($STOKER_DATA). Run it on an otherwise idle machine.
"""
import argparse
import json
import subprocess
import sys


def doctor(args, options):
    command = [args.stoker, "doctor", "--json", "--seconds", str(args.seconds)] + options
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def situations(args):
    mlp = ["--workers", "1"]
    rows = [("a", "mlp, 100 us per sample, 1 worker", mlp + ["--sample-cost-us", "100"], True),
            ("b", "mlp (the default run)", [], False),
            ("c", "mlp, 10 us per sample, 1 worker", mlp + ["--sample-cost-us", "10"], False)]
    if args.images:
        images = ["--data", args.images]
        rows.insert(1, ("a", "mlp on images at 32 px, 1 worker",
                        images + ["--model", "mlp", "--image-size", "32", "--workers", "1"], True))
        rows.insert(3, ("b", "resnet18 on images at 128 px, batch 16",
                        images + ["--model", "resnet18", "--image-size", "128", "--batch", "16"],
                        False))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stoker", default="build/stoker")
    parser.add_argument("--images", default="")
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results = []
    for situation, name, options, apply_first in situations(args):
        report = doctor(args, options)
        row = {"situation": situation, "name": name, "options": options,
               "verdict": report["verdict"], "reason": report["reason"],
               "loop_rate": report["loop_rate"], "loader_rate": report["loader_rate"],
               "compute_rate": report["compute_rate"], "wait_fraction": report["wait_fraction"],
               "actions": [a["action"] + " (" + a["expected_gain"] + ")" for a in report["actions"]],
               }
        if apply_first and report["actions"]:
            first = report["actions"][0]["action"]
            after = doctor(args, options + first.split())
            row["first_action"] = first
            row["predicted"] = report["actions"][0]["speedup"]
            row["after_rate"] = after["loop_rate"]
            row["gain"] = after["loop_rate"] / report["loop_rate"]
        results.append(row)
        print(f"({situation}) {name}: {row['verdict']}; loop {row['loop_rate']:.1f} batches/s, "
              f"loader alone {row['loader_rate']:.1f}, compute alone {row['compute_rate']:.1f}, "
              f"waiting {100 * row['wait_fraction']:.1f}%", file=sys.stderr)
        if "gain" in row:
            print(f"    first action {row['first_action']}: predicted {row['predicted']:.2f}x, "
                  f"measured {row['gain']:.2f}x ({row['after_rate']:.1f} batches/s)",
                  file=sys.stderr)

    if args.auto:
        base = ["--sample-cost-us", "100"]
        rates = {}
        for workers in ["1", "2", "3", "auto"]:
            rates[workers] = doctor(args, base + ["--workers", workers])["loop_rate"]
        best = max(rates[w] for w in ["1", "2", "3"])
        results.append({"auto": rates, "auto_over_best_fixed": rates["auto"] / best})
        print(f"workers: {rates}; auto / best fixed {rates['auto'] / best:.3f}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
