#!/usr/bin/env python3
"""Two stoker builds side by side on a cold first epoch of Hugging Face Parquet files read in
place over http:// (nginx on loopback), on each link of --links: behind tests/fault_proxy.py, a
WAN-like link (DELAY ms before each response, RATE MB/s per connection), or nginx itself
(0:0, the fast link): `stoker bench loader` from an emptied cache, one epoch, the two binaries
alternated (the order reversed every other round); images/s of each round, the medians and
B / A per link. E.g. a build with a fixed read-ahead horizon (A) against one that tunes it (B).

Usage: .venv/bin/python bench/remote/parquet_cold.py --a OLD/stoker --b build/stoker
       (--parquet FOLDER | --synthetic N) [--rounds 3] [--links 20:100,0:0]
       [--delay-ms 20 --rate-mb-s 100]
  --parquet: a folder of train-0000K-of-0000N.parquet files (bench/peers' hf_parquet store)
  --synthetic N: N images (noise JPEGs of about 50 KB, 64 rows a row group) in 8 files of
                 Hugging Face's columns, written for the run and removed after it
  --links: DELAY:RATE pairs; without it, the one link of --delay-ms and --rate-mb-s
"""
import argparse
import contextlib
import glob
import io
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


def write_synthetic(folder, images, files=8, rows_per_group=64):
    """`images` rows of an `image` struct (JPEG bytes, path) and an int64 `label` (10 classes,
    named in the schema's Hugging Face metadata) in `files` Parquet files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image
    rng = np.random.default_rng(5)
    jpegs = []
    for _ in range(16):  # distinct images, repeated
        out = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (160, 160, 3), np.uint8)).save(out, "JPEG",
                                                                             quality=90)
        jpegs.append(out.getvalue())
    per_file = -(-images // files)
    features = {"image": {"_type": "Image"},
                "label": {"names": [f"c{c}" for c in range(10)], "_type": "ClassLabel"}}
    for f in range(files):
        rows = range(f * per_file, min(images, (f + 1) * per_file))
        table = pa.table({"image": [{"bytes": jpegs[i % len(jpegs)], "path": f"{i}.jpg"}
                                    for i in rows],
                          "label": pa.array([i % 10 for i in rows], pa.int64())})
        table = table.replace_schema_metadata(
            {"huggingface": json.dumps({"info": {"features": features}})})
        pq.write_table(table, os.path.join(folder, f"train-{f:05d}-of-{files:05d}.parquet"),
                       row_group_size=rows_per_group)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--parquet")
    source.add_argument("--synthetic", type=int, metavar="N")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--links", help="DELAY_MS:RATE_MB_S,... (0:0: nginx without the proxy)")
    p.add_argument("--delay-ms", type=float, default=20)
    p.add_argument("--rate-mb-s", type=float, default=100)
    args = p.parse_args()
    try:
        links = [tuple(float(x) for x in link.split(":"))
                 for link in (args.links or f"{args.delay_ms}:{args.rate_mb_s}").split(",")]
    except ValueError:
        p.error(f"--links {args.links}: not DELAY_MS:RATE_MB_S pairs")
    work = tempfile.mkdtemp(prefix="stoker-parquet-cold-")
    served = os.path.join(work, "served")
    os.makedirs(served)
    if args.synthetic:
        os.makedirs(os.path.join(served, "pq"))
        write_synthetic(os.path.join(served, "pq"), args.synthetic)
    else:
        os.symlink(os.path.abspath(args.parquet), os.path.join(served, "pq"))
    names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(served, "pq", "*.parquet")))
    if not names:
        shutil.rmtree(work, ignore_errors=True)
        p.error(f"no .parquet files in {args.parquet}")
    nginx = servers.start_nginx(served, os.path.join(work, "nginx"))
    medians = []
    try:
        for delay_ms, rate_mb_s in links:
            name = f"{delay_ms:g} ms + {rate_mb_s:g} MB/s" if delay_ms or rate_mb_s else "direct"
            with contextlib.ExitStack() as stack:
                base = nginx.url if not (delay_ms or rate_mb_s) else stack.enter_context(
                    fault_proxy(nginx.url, {"delay_ms": delay_ms, "rate_mb_s": rate_mb_s}))
                url = f"{base}/pq/{brace(names)}"
                figures = {"a": [], "b": []}
                for r in range(args.rounds):
                    for key in ("a", "b") if r % 2 == 0 else ("b", "a"):
                        rate = cold_epoch(getattr(args, key), url, os.path.join(work, "cache"))
                        figures[key].append(rate)
                        print(f"{name}: round {r + 1} {key}: {rate:.0f} images/s", flush=True)
            medians.append((name, statistics.median(figures["a"]),
                            statistics.median(figures["b"])))
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)
    for name, a, b in medians:
        print(f"{name}: a: median {a:.0f} images/s; b: median {b:.0f}; b / a: {b / a:.2f}")


if __name__ == "__main__":
    main()
