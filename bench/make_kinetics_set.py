#!/usr/bin/env python3
"""Builds a Kinetics-shaped video set for the video benchmarks: N clips of 340x256 at 25 fps
(10 s by default), H.264 in mp4 with x264's defaults (keyframes every 250 frames: one GOP per
10 s clip; 3 B-frames), in class folders as torchvision's Kinetics lays them out
(OUT/class_K/clip_I.mp4). Each clip pans or zooms over a photograph of Debian's
`mate-backgrounds` (bench/make_video_set.py's motions), the photos and motions taken in turn.
Nothing is downloaded; the same arguments make the same bytes.

Usage: .venv/bin/python bench/make_kinetics_set.py OUT [--clips 100] [--classes 10]
       [--seconds 10] [--gop 250] [--jobs 2]
"""
import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import make_video_set as videos

WIDTH, HEIGHT = 340, 256


def photos(folder):
    """The photographs' names (without .jpg), sorted."""
    return sorted(name[:-4] for name in os.listdir(folder) if name.endswith(".jpg"))


def still(photo_folder, photo, stills):
    """The photograph cut to 960x720 (its centre), room for a pan's 680x512 window; made once."""
    path = os.path.join(stills, photo + ".png")
    if not os.path.exists(path):
        videos._ffmpeg(["-i", os.path.join(photo_folder, photo + ".jpg"), "-vf",
                        "scale=960:720:force_original_aspect_ratio=increase,crop=960:720",
                        *videos._BITEXACT, path])
    return path


def make_clip(out, index, classes, seconds, gop, photo_folder, stills):
    """Clip `index`: class index % classes, a pan or zoom (alternating) over a photograph."""
    folder = os.path.join(out, f"class_{index % classes:03d}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"clip_{index:05d}.mp4")
    names = photos(photo_folder)
    photo = names[index % len(names)]
    motion = (videos.PAN, videos.ZOOM)[index % 2]
    graph = motion.format(w=WIDTH, h=HEIGHT, seconds=seconds) + ",setsar=1"
    codec = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-threads", "1",
             "-g", str(gop)]
    videos._ffmpeg(["-loop", "1", "-framerate", "25", "-i",
                    still(photo_folder, photo, stills), "-vf", graph, "-t", str(seconds),
                    *codec, *videos._BITEXACT, path])
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--clips", type=int, default=100)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--gop", type=int, default=250)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--photos", default=videos.PHOTOS)
    args = parser.parse_args()
    stills = os.path.join(args.out, ".stills")
    os.makedirs(stills, exist_ok=True)
    for photo in photos(args.photos):  # cut once, before the clips share them
        still(args.photos, photo, stills)
    with ThreadPoolExecutor(args.jobs) as pool:
        made = list(pool.map(lambda i: make_clip(args.out, i, args.classes, args.seconds,
                                                 args.gop, args.photos, stills),
                             range(args.clips)))
    for name in os.listdir(stills):
        os.remove(os.path.join(stills, name))
    os.rmdir(stills)
    total = sum(os.path.getsize(p) for p in made)
    print(f"{len(made)} clips, {total / 2**20:.1f} MiB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
