#!/usr/bin/env python3
"""Bytes fetched and time per clip of a video folder read over loopback HTTP (nginx, started
here by python/tests/servers.py) against the same folder read locally: the Kinetics training
pipeline (one random clip of 16 frames 4 apart, Resize 128, RandomCrop 112, flip), one worker,
a fresh cache folder per run (the first epoch: every video fetched as the loader needs it).

Usage: .venv/bin/python bench/remote_video.py FOLDER [--epochs 1]
(FOLDER: e.g. bench/make_kinetics_set.py's.)"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import stoker

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "tests"))
import servers  # noqa: E402


def run(source, cache, epochs):
    """Seconds per clip and clips over `epochs` epochs from a fresh `cache`."""
    shutil.rmtree(cache, ignore_errors=True)
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=16, num_indices_between_frames=4,
                                        resize=[128], crop=[112], flip=0.5)
    loader = stoker.Loader(stoker.VideoFolder(source, transforms={"video": clip}), batch_size=1,
                           shuffle=True, num_workers=0, cache_dir=cache)
    clips, start = 0, time.perf_counter()
    for _ in range(epochs):
        clips += sum(len(batch["label"]) for batch in loader)
    return (time.perf_counter() - start) / clips, clips


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="remote-video-")
    try:
        root = os.path.join(work, "root")
        shutil.copytree(args.folder, os.path.join(root, "videos"))
        server = servers.start_nginx(root, servers.Path(work) / "nginx")
        try:
            local, clips = run(args.folder, os.path.join(work, "cache"), args.epochs)
            remote, _ = run(f"{server.url}/_index_json/videos/", os.path.join(work, "cache"),
                            args.epochs)
        finally:
            server.stop()
        sizes = {}
        for folder, _, files in os.walk(args.folder):
            for name in files:
                sizes["/_index_json/videos/" + os.path.relpath(os.path.join(folder, name),
                                                               args.folder)] = \
                    os.path.getsize(os.path.join(folder, name))
        fetched = 0
        with open(os.path.join(work, "nginx", "access.log")) as log:
            for line in log:
                method, uri, status = line.split()[:3]
                if method == "GET" and status in ("200", "206") and uri in sizes:
                    fetched += sizes[uri]  # whole files: a GET sends the file
        print(f"{clips} clips, {len(sizes)} videos of {sum(sizes.values()) / len(sizes) / 1e6:.2f}"
              f" MB on average")
        print(f"local:  {local * 1e3:.1f} ms per clip")
        print(f"remote: {remote * 1e3:.1f} ms per clip, {fetched / clips / 1e6:.2f} MB fetched "
              f"per clip (whole files)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
