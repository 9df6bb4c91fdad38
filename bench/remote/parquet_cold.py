#!/usr/bin/env python3
"""Two stoker builds side by side on a cold first epoch of Hugging Face Parquet files read in
place over http:// (nginx on loopback) behind tests/fault_proxy.py, a WAN-like link (--delay-ms
before each response, --rate-mb-s per connection): `stoker bench loader` from an emptied cache,
one epoch, the two binaries alternated (the order reversed every other round); images/s of each
round, the medians and B / A.

Usage: .venv/bin/python bench/remote/parquet_cold.py --a OLD/stoker --b build/stoker
       --parquet FOLDER [--rounds 3] [--delay-ms 20] [--rate-mb-s 100]
  --parquet: a folder of train-0000K-of-0000N.parquet files (bench/peers' hf_parquet store)
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "tests"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import servers  # noqa: E402
from throughput import fault_proxy  # noqa: E402
from in_place import brace  # noqa: E402


def cold_epoch(stoker, url, cache):
    shutil.rmtree(cache, ignore_errors=True)
    out = subprocess.run([stoker, "bench", "loader", "--data", url, "--cache-dir", cache,
                          "--cache-gb", "4", "--epochs", "1", "--batch", "64",
                          "--shuffle-window", "2", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["samples_per_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--parquet", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--delay-ms", type=float, default=20)
    p.add_argument("--rate-mb-s", type=float, default=100)
    args = p.parse_args()
    names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(args.parquet, "*.parquet")))
    if not names:
        p.error(f"no .parquet files in {args.parquet}")
    work = tempfile.mkdtemp(prefix="stoker-parquet-cold-")
    served = os.path.join(work, "served")
    os.makedirs(served)
    os.symlink(os.path.abspath(args.parquet), os.path.join(served, "pq"))
    nginx = servers.start_nginx(served, os.path.join(work, "nginx"))
    figures = {"a": [], "b": []}
    try:
        link = {"delay_ms": args.delay_ms, "rate_mb_s": args.rate_mb_s}
        with fault_proxy(nginx.url, link) as base:
            url = f"{base}/pq/{brace(names)}"
            for r in range(args.rounds):
                for key in ("a", "b") if r % 2 == 0 else ("b", "a"):
                    rate = cold_epoch(getattr(args, key), url, os.path.join(work, "cache"))
                    figures[key].append(rate)
                    print(f"round {r + 1} {key}: {rate:.0f} images/s", flush=True)
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)
    a, b = statistics.median(figures["a"]), statistics.median(figures["b"])
    print(f"a: median {a:.0f} images/s; b: median {b:.0f}; b / a: {b / a:.2f}")


if __name__ == "__main__":
    main()
