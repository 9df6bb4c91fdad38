#!/usr/bin/env python3
"""Time to a training run's first batch: from starting `stoker train` to its first step's log
record (the loaders made, the first batch built and stepped), for each of the builds' binaries
in turn, in rounds; medians and each binary's ratio to the first, by round and of the medians.

Usage: python3 bench/train_first_batch.py --stoker A/stoker --stoker B/stoker [--rounds 5]
       -- TRAIN_ARGS...   (e.g. --data DIR --model video_cnn --eval-clips-per-video 4)
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def first_step_seconds(stoker, args, log):
    """Seconds from starting `stoker train ARGS --max-steps 1` to its first step's record."""
    if os.path.exists(log):
        os.remove(log)
    start = time.time()
    subprocess.run([stoker, "train", *args, "--max-steps", "1", "--log-every", "1", "--log", log],
                   check=True, stdout=subprocess.DEVNULL)
    with open(log) as records:
        for line in records:
            record = json.loads(line)
            if record["record"] == "step":
                at = datetime.datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
                return at.replace(tzinfo=datetime.timezone.utc).timestamp() - start
    raise SystemExit(f"{log}: no step record")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stoker", action="append", required=True, help="a stoker binary")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("train_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    train_args = [a for a in args.train_args if a != "--"]
    seconds = {b: [] for b in args.stoker}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            order = args.stoker if r % 2 == 0 else args.stoker[::-1]
            for binary in order:
                seconds[binary].append(
                    first_step_seconds(binary, train_args, os.path.join(work, "log.jsonl")))
            print(f"round {r}: " + ", ".join(f"{seconds[b][-1]:.3f} s" for b in args.stoker),
                  flush=True)
    first = args.stoker[0]
    for binary in args.stoker:
        median = statistics.median(seconds[binary])
        ratio = statistics.median(seconds[first]) / median
        by_round = [a / b for a, b in zip(seconds[first], seconds[binary])]
        print(f"{binary}: median {median:.3f} s; the first's / this {ratio:.3f} "
              f"(rounds {min(by_round):.3f}-{max(by_round):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
