#!/usr/bin/env python3
"""Bytes fetched and time per clip of a video folder read over loopback HTTP (nginx, started
here by python/tests/servers.py), by ranges (this build: each clip reads its video's header and
GOPs, its blocks kept in the cache), against the same folder read locally and, with --baseline,
read by other builds (e.g. whole files: a build of before the ranges, run in a subprocess): the
Kinetics training pipeline (one random clip of 16 frames 4 apart, Resize 128, RandomCrop 112,
flip), one worker, a fresh cache folder, each epoch (its own clips, set_epoch) in a process of
its own (the first: every video opened first, its index built; the later ones: the index saved,
what was fetched in the cache). Bytes fetched are nginx's own count ($body_bytes_sent) of the
videos' GETs.

Usage: .venv/bin/python bench/remote_video.py FOLDER [--epochs 2] [--baseline NAME=BASE/python]...
(FOLDER: e.g. bench/make_kinetics_set.py's.)"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "tests"))


def child(source, cache, epoch):
    """Epoch `epoch` of `source` (its shuffle and clips, as one run's) with `cache` (kept from the
    calls before): prints its seconds per clip and clips as JSON."""
    import stoker
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=16, num_indices_between_frames=4,
                                        resize=[128], crop=[112], flip=0.5)
    loader = stoker.Loader(stoker.VideoFolder(source, transforms={"video": clip}), batch_size=1,
                           shuffle=True, num_workers=0, cache_dir=cache)
    loader.set_epoch(epoch)
    start = time.perf_counter()
    clips = sum(len(batch["label"]) for batch in loader)
    print(json.dumps([(time.perf_counter() - start) / clips, clips]))


def sent(log):
    """The bytes nginx sent for videos' GETs (not index pages) since `log` was emptied."""
    with open(log) as lines:
        return sum(int(m.group(1)) for m in
                   (re.search(r" sent=(\d+)$", line) for line in lines
                    if line.startswith("GET /") and not line.split()[1].endswith("/"))
                   if m)


def epochs(source, cache, count, package, log=None):
    """(seconds per clip, bytes fetched per clip) of `count` epochs of `source`, each in a
    process of its own on `package`'s stoker, from a fresh `cache`."""
    shutil.rmtree(cache, ignore_errors=True)
    results = []
    for epoch in range(count):
        if log:
            open(log, "w").close()
        done = subprocess.run([sys.executable, os.path.abspath(__file__), str(source), "--child",
                               cache, "--epoch", str(epoch)],
                              env=dict(os.environ, PYTHONPATH=package), capture_output=True,
                              text=True)
        if done.returncode:
            sys.exit(f"{package}: {done.stderr.strip().splitlines()[-1]}")
        seconds, clips = json.loads(done.stdout)
        results.append((seconds, sent(log) / clips if log else 0.0, clips))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--baseline", action="append", default=[],
                        help="NAME=BASE/python: another build's package folder, its row NAME")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--epoch", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.folder, args.child, args.epoch)
        return
    import servers
    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    work = tempfile.mkdtemp(prefix="remote-video-")
    try:
        root = os.path.join(work, "root")
        shutil.copytree(args.folder, os.path.join(root, "videos"))
        server = servers.start_nginx(root, servers.Path(work) / "nginx")
        log = os.path.join(work, "nginx", "access.log")
        url = f"{server.url}/_index_json/videos/"
        cache = os.path.join(work, "cache")
        try:
            rows = [("local", epochs(args.folder, cache, args.epochs, package)),
                    ("http, ranges", epochs(url, cache, args.epochs, package, log))]
            for baseline in args.baseline:
                name, _, base = baseline.partition("=")
                rows.append((f"http, {name}", epochs(url, cache, args.epochs, base, log)))
        finally:
            server.stop()
        sizes = [os.path.getsize(os.path.join(folder, name))
                 for folder, _, names in os.walk(args.folder) for name in names]
        print(f"{rows[0][1][0][2]} clips, {len(sizes)} videos of "
              f"{sum(sizes) / len(sizes) / 1e6:.3f} MB on average")
        for epoch in range(args.epochs):
            print(f"epoch {epoch + 1}" + (" (fresh cache: first opens)" if epoch == 0 else ""))
            for name, results in rows:
                seconds, fetched, _ = results[epoch]
                print(f"  {name:24} {seconds * 1e3:6.1f} ms per clip, {fetched / 1e6:.3f} MB "
                      f"fetched per clip")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
