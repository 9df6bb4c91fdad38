#!/usr/bin/env python3
"""An image folder read in place over http:// (nginx on loopback, its JSON index) against the
same folder on local disk, in one run: rounds alternate the order of the measurements (reversed
every other round) and the table gives each one's median and the rounds' figures.

  local      `stoker bench loader` images/s on bench/make_image_set.py's train/ folder
  warm       the same folder by URL through a cache that holds it all (target: >= 0.95 of local)
  cold       the first epoch from a cache emptied before each round (images/s: a file each),
             beside curl fetching the same files one after another on one connection (files/s:
             what GETs made one at a time would give)
  WAN        the same through tests/fault_proxy.py adding --wan-delay-ms before each response
             (curl on the first 100 files)

  .venv/bin/python bench/remote/image_folder.py [--stoker build/stoker] [--per-class 100]
        [--rounds 3] [--wan-delay-ms 20] [--work DIR] [--json PATH]

--work keeps the image set (and reuses it in later runs), else it is made in a temporary folder
and removed. Exit status: 0 ok, 2 bad arguments or a missing program, 1 a command that failed.
"""
import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from throughput import ROOT, Failed, fault_proxy, image_set, machine, run  # noqa: E402
import servers  # noqa: E402  (throughput.py puts python/tests on the path)


def image_folder(work, per_class):
    """bench/make_image_set.py's train/ folder of per_class images a class under work (made
    once, then reused)."""
    return image_set(os.path.join(work, f"folder-{per_class}-per-class"), per_class)


def loader(args, data, cache, epochs):
    argv = [args.stoker, "bench", "loader", "--json", "--data", data, "--batch", "64",
            "--epochs", str(epochs), "--cache-dir", cache]
    if epochs == 1:
        argv += ["--min-seconds", "0"]  # exactly the one epoch, however short
    return json.loads(run(argv))


def curl_one_at_a_time(urls, work):
    """Seconds for curl to GET `urls` one after another on one connection."""
    config = os.path.join(work, "curl-urls")
    with open(config, "w") as f:
        for url in urls:
            f.write(f'url = "{url}"\noutput = "/dev/null"\n')
    start = time.perf_counter()
    subprocess.run(["curl", "-sf", "-K", config], check=True)
    return time.perf_counter() - start


def measure(args, work):
    folder = image_folder(work, args.per_class)
    files = sorted(os.path.relpath(os.path.join(d, n), folder)
                   for d, _, names in os.walk(folder) for n in names)
    with contextlib.ExitStack() as stack:
        root = os.path.join(work, "served")
        os.makedirs(root, exist_ok=True)
        link = os.path.join(root, "photos")
        if not os.path.islink(link):
            os.symlink(folder, link)
        nginx = servers.start_nginx(root, os.path.join(work, "nginx"))
        stack.callback(nginx.stop)
        url = f"{nginx.url}/_index_json/photos/"
        wan = stack.enter_context(fault_proxy(nginx.url, {"delay_ms": args.wan_delay_ms,
                                                          "rate_mb_s": 1000}))
        warm = os.path.join(work, "warm-cache")
        loader(args, url, warm, 1)  # fills the warm cache
        cold = os.path.join(work, "cold-cache")

        def cold_epoch(base):
            shutil.rmtree(cold, ignore_errors=True)
            return loader(args, f"{base}/_index_json/photos/", cold, 1)["samples_per_s"]

        def curl(base, count):
            urls = [f"{base}/photos/{f}" for f in files[:count]]
            return len(urls) / curl_one_at_a_time(urls, work)

        rows = {"local disk, images/s": lambda: loader(args, folder, warm, args.epochs)[
                    "samples_per_s"],
                "http warm cache, images/s": lambda: loader(args, url, warm, args.epochs)[
                    "samples_per_s"],
                "http cold epoch, images/s": lambda: cold_epoch(nginx.url),
                "curl one at a time, files/s": lambda: curl(nginx.url, len(files)),
                f"{args.wan_delay_ms} ms cold epoch, images/s": lambda: cold_epoch(wan),
                f"{args.wan_delay_ms} ms curl one at a time, files/s": lambda: curl(wan, 100)}
        figures = {name: [] for name in rows}
        names = list(rows)
        for r in range(args.rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                figures[name].append(rows[name]())
    return len(files), figures


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stoker", default=os.path.join(ROOT, "build", "stoker"))
    p.add_argument("--per-class", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--wan-delay-ms", type=int, default=20)
    p.add_argument("--work")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    if not os.access(args.stoker, os.X_OK):
        print(f"{args.stoker}: no stoker program (build it: cmake --build build)", file=sys.stderr)
        return 2
    at_start = machine(None)
    try:
        with contextlib.ExitStack() as stack:
            work = args.work or stack.enter_context(tempfile.TemporaryDirectory())
            count, figures = measure(args, work)
    except (Failed, subprocess.CalledProcessError) as e:
        print(e, file=sys.stderr)
        return 1
    out = {"files": count, "machine": machine(at_start["loadavg_end"]), "rows": {}}
    for name, values in figures.items():
        median = statistics.median(values)
        out["rows"][name] = {"median": median, "rounds": values}
        print(f"{name:36s} {median:9,.1f}   rounds: {', '.join(f'{v:,.1f}' for v in values)}")
    local = out["rows"]["local disk, images/s"]["median"]
    warm = out["rows"]["http warm cache, images/s"]["median"]
    print(f"warm / local: {warm / local:.3f}   ({count} files)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
