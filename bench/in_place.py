#!/usr/bin/env python3
"""Data read in place (issue 50's targets beyond bench/peers' table), in one run, rounds
alternating the order (reversed every other round), medians:

  first batch   a fresh Python process's time from `stoker.Loader(stoker.WebDataset(tars))` to
                its first batch, over --tars tars: with an empty cache folder (every tar's index
                built) and again with the indexes cached; beside it the index build's MB/s
                (the tars' bytes over the cold open) and a plain read of the same files (`cat`):
                "the index build at disk speed". The page cache is warm for both, or with
                --drop-caches (root) dropped before each of the three rows
  warm remote   `stoker bench loader` images/s on tars and on Parquet files read from local
                disk, and the same files over http:// (nginx on loopback) through a warm cache
                that holds them all (target: >= 95% of local)

  ~/.cache/stoker/peers/stoker/bin/python bench/in_place.py TARS PARQUET [--tars 1000] [--rounds 3] [--work DIR]
        [--drop-caches] [--json PATH]

TARS: a folder of WebDataset tars (`KEY.jpg` + `KEY.cls`), PARQUET a folder of Hugging Face
style Parquet files (bench/peers' webdataset and hf_parquet stores); the Python is one where
stoker is installed (bench/peers/setup.sh stoker makes that one). The first-batch rows
repack the tars' samples into --tars tars (under --work, made once).
"""
import argparse
import glob
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
sys.path.insert(0, os.path.join(HERE, "remote"))
import servers  # noqa: E402
import throughput  # noqa: E402  (run, Failed, machine)

FIRST_BATCH = """
import sys, time, stoker, torch  # imported before the clock starts
start = time.monotonic()
loader = stoker.Loader(stoker.WebDataset(sys.argv[1]), batch_size=64, cache_dir=sys.argv[2],
                       transforms=stoker.transforms.RandomResizedCrop(224))
next(iter(loader))
print(time.monotonic() - start)
"""


def repack(tars, out, count):
    """The samples of the tars in `tars`, repacked in order into `count` tars under `out`
    (made once): the brace pattern naming them."""
    pattern = os.path.join(out, f"data-{{{0:06d}..{count - 1:06d}}}.tar")
    if os.path.exists(os.path.join(out, "complete")):
        return pattern
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    members = []
    for name in sorted(glob.glob(os.path.join(tars, "*.tar"))):
        with tarfile.open(name) as tar:
            members += [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    keys = sorted({m.name.split(".")[0] for m, _ in members})
    per_tar = -(-len(keys) // count)
    shard_of = {key: i // per_tar for i, key in enumerate(keys)}
    writers = [tarfile.open(os.path.join(out, f"data-{i:06d}.tar"), "w") for i in range(count)]
    for member, data in members:
        writers[shard_of[member.name.split(".")[0]]].addfile(member, io.BytesIO(data))
    for w in writers:
        w.close()
    open(os.path.join(out, "complete"), "w").close()
    return pattern


def brace(names):
    """A brace pattern naming `names` (sorted, numbered alike: train-{00000..00004}-of-5...);
    one name is itself."""
    first, last = names[0], names[-1]
    if first == last:
        return first
    start = len(os.path.commonprefix([first, last]))
    end = len(os.path.commonprefix([first[::-1], last[::-1]]))
    while start > 0 and first[start - 1].isdigit():
        start -= 1
    while end > 0 and first[-end].isdigit():
        end -= 1
    pattern = f"{first[:start]}{{{first[start:len(first) - end]}..{last[start:len(last) - end]}}}"
    return pattern + first[len(first) - end:]


def first_batch_s(pattern, cache):
    out = throughput.run([sys.executable, "-c", FIRST_BATCH, pattern, cache])
    return float(out.strip().splitlines()[-1])


def plain_read_mb_s(files):
    start = time.monotonic()
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
    return sum(os.path.getsize(f) for f in files) / (time.monotonic() - start) / 1e6


def loader_images_per_s(stoker, data, cache=None, cache_gb=None):
    argv = [stoker, "bench", "loader", "--json", "--data", data, "--batch", "64",
            "--shuffle-window", "4", "--epochs", "2"]
    if cache:
        argv += ["--cache-dir", cache, "--cache-gb", f"{cache_gb:.3f}"]
    return json.loads(throughput.run(argv))["samples_per_s"]


def drop_page_cache():
    """Every clean page of the page cache dropped (root: /proc/sys/vm/drop_caches)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def rows_for(args, work, nginx_url):
    """(name, unit, measure) of every row, in the order of a forward round."""
    pattern = repack(args.tars_folder, os.path.join(work, f"tars-{args.tars}"), args.tars)
    small = sorted(glob.glob(os.path.join(work, f"tars-{args.tars}", "*.tar")))
    cached = os.path.join(work, "index-cache")
    tars = sorted(os.path.basename(f) for f in glob.glob(os.path.join(args.tars_folder, "*.tar")))
    parquet = sorted(os.path.basename(f)
                     for f in glob.glob(os.path.join(args.parquet_folder, "*.parquet")))
    size_gb = sum(os.path.getsize(os.path.join(args.tars_folder, f)) for f in tars) / 1e9
    size_gb += sum(os.path.getsize(os.path.join(args.parquet_folder, f)) for f in parquet) / 1e9

    def dropped(measure):  # `measure` after the page cache is dropped, with --drop-caches
        def run():
            if args.drop_caches:
                drop_page_cache()
            return measure()
        return run

    def cold():
        cache = tempfile.mkdtemp(dir=work)
        try:
            return first_batch_s(pattern, cache)
        finally:
            shutil.rmtree(cache)

    def over(folder, names, remote):  # the folder itself, or its files by URL
        return f"{nginx_url}/{os.path.basename(folder)}/{brace(names)}" if remote else folder

    warm_cache = os.path.join(work, "warm-cache")
    stoker = args.stoker
    return [
        ("first batch, index built", "s", dropped(cold)),
        ("first batch, index cached", "s", dropped(lambda: first_batch_s(pattern, cached))),
        ("plain read of the tars", "MB/s", dropped(lambda: plain_read_mb_s(small))),
        ("tars, local disk", "images/s",
         lambda: loader_images_per_s(stoker, over(args.tars_folder, tars, False))),
        ("tars, http warm cache", "images/s",
         lambda: loader_images_per_s(stoker, over(args.tars_folder, tars, True), warm_cache,
                                     2 * size_gb + 0.01)),
        ("parquet, local disk", "images/s",
         lambda: loader_images_per_s(stoker, over(args.parquet_folder, parquet, False))),
        ("parquet, http warm cache", "images/s",
         lambda: loader_images_per_s(stoker, over(args.parquet_folder, parquet, True),
                                     warm_cache, 2 * size_gb + 0.01)),
    ], (pattern, cached, small)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tars_folder")
    p.add_argument("parquet_folder")
    p.add_argument("--stoker", default=os.path.join(ROOT, "build", "stoker"))
    p.add_argument("--tars", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", help="keep the repacked tars and the last run's caches here")
    p.add_argument("--drop-caches", action="store_true",
                   help="drop the page cache before each first-batch and plain-read row (root)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    if args.tars < 1 or args.rounds < 1:
        p.error("--tars and --rounds must be at least 1")
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="stoker-in-place-"))
    os.makedirs(work, exist_ok=True)
    served = os.path.join(work, "served")  # nginx's root: links to the two folders
    shutil.rmtree(served, ignore_errors=True)
    os.makedirs(served)
    for folder in (args.tars_folder, args.parquet_folder):
        os.symlink(os.path.abspath(folder), os.path.join(served, os.path.basename(folder)))
    nginx = servers.start_nginx(served, os.path.join(work, "nginx"))
    try:
        rows, (pattern, cached, small) = rows_for(args, work, nginx.url)
        # Untimed: the page cache warm for every reader, the index and warm caches filled.
        first_batch_s(pattern, cached)
        plain_read_mb_s(small)
        for name, _, fn in rows[3:]:
            fn()
        figures = {name: [] for name, _, _ in rows}
        for r in range(args.rounds):
            for name, _, fn in rows if r % 2 == 0 else reversed(rows):
                print(f"round {r + 1}/{args.rounds}: {name} ...", file=sys.stderr, flush=True)
                figures[name].append(fn())
    except throughput.Failed as e:
        p.exit(1, f"in_place.py: {e}\n")
    finally:
        nginx.stop()
    medians = {name: statistics.median(v) for name, v in figures.items()}
    index_mb = sum(os.path.getsize(f) for f in small) / 1e6
    build_s = medians["first batch, index built"] - medians["first batch, index cached"]
    out = {"tars": args.tars, "tar_mb": index_mb, "rounds": args.rounds,
           "rows": [{"name": n, "unit": u, "median": medians[n], "rounds": figures[n]}
                    for n, u, _ in rows],
           "ratios": {
               "index build MB/s (cold open)": index_mb / medians["first batch, index built"],
               # the build alone: the first batch's time less the one with the indexes cached
               # (None where noise makes that no time at all: a tiny run)
               "index build / plain read": index_mb / build_s / medians["plain read of the tars"]
               if build_s > 0 else None,
               "tars: warm / local": medians["tars, http warm cache"] / medians["tars, local disk"],
               "parquet: warm / local":
                   medians["parquet, http warm cache"] / medians["parquet, local disk"]},
           "machine": throughput.machine(None)}
    for row in out["rows"]:
        print(f"{row['name']:<28} {row['median']:>10.2f} {row['unit']}")
    for name, value in out["ratios"].items():
        print(f"{name:<28} {value:>10.2f}" if value is not None else f"{name:<28} {'-':>10}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
