#!/usr/bin/env python3
"""Builds the image benchmark set: an ImageFolder tree (train/ and val/) of photographs cut from
Debian's `mate-backgrounds`, shaped like ImageNet's JPEGs. Nothing is downloaded.

Each class is one photograph; each image is a random crop of it (10-60% of its area, aspect
3:4 to 4:3), resized to mostly 400-640 px wide (ImageNet-like), some 1,000-1,600 px, and saved
at JPEG quality 75-95 with a mix of chroma subsamplings. The realistic oddities come in fixed
proportions: progressive JPEGs (15%), grayscale (5%), CMYK (1%, Adobe-inverted as PIL writes
them), a few true PNGs, and one PNG named `.jpg`. Deterministic: the same tree for the same
arguments (every image draws from its own seeded generator).

Usage: .venv/bin/python bench/make_image_set.py OUT [--per-class 200] [--val-per-class 20]
       [--photos DIR]   (default: mate-backgrounds' nature photos, installed by Debian)
"""
import argparse
import multiprocessing
import os
import random
import sys

from PIL import Image

# mate-backgrounds' nature photos, or STOKER_PHOTOS (a GPU machine: scripts/gpu/pack.sh's copy).
PHOTOS = os.environ.get("STOKER_PHOTOS", "/usr/share/backgrounds/mate/nature")
CLASSES = ["Aqua", "Blinds", "Dune", "FreshFlower", "Garden", "GreenMeadow", "LadyBird",
           "RainDrops", "Storm", "TwoWings"]

_photos = {}


def use_photos(folder):
    """Sets the folder the worker reads the class photographs from."""
    global PHOTOS
    PHOTOS = folder


def photo(name):
    """The class's photograph, loaded once per worker process."""
    if name not in _photos:
        _photos[name] = Image.open(os.path.join(PHOTOS, name + ".jpg")).convert("RGB")
    return _photos[name]


def random_box(rng, src, smallest: float, largest: float) -> tuple:
    """(x, y, w, h) of a crop of `src` covering a share of its area drawn in [smallest,
    largest], of an aspect ratio drawn in [3/4, 4/3], placed at random."""
    area = src.width * src.height * rng.uniform(smallest, largest)
    aspect = rng.uniform(3 / 4, 4 / 3)
    w = min(src.width, int(round((area * aspect) ** 0.5)))
    h = min(src.height, int(round((area / aspect) ** 0.5)))
    return rng.randrange(0, src.width - w + 1), rng.randrange(0, src.height - h + 1), w, h


def make_image(job):
    """Writes image number `index` of class `name` into `folder`; returns its path."""
    folder, name, index, seed = job
    rng = random.Random(seed)
    src = photo(name)
    x, y, w, h = random_box(rng, src, 0.10, 0.60)
    out_w = rng.randint(1000, 1600) if rng.random() < 0.15 else rng.randint(400, 640)
    out_h = max(1, int(round(out_w * h / w)))
    img = src.crop((x, y, x + w, y + h)).resize((out_w, out_h), Image.BICUBIC)

    kind = rng.random()
    stem = os.path.join(folder, f"{name.lower()}_{index:05d}")
    if index == 7 and name == CLASSES[0]:  # one PNG named .jpg: the format is in the bytes
        path = stem + ".jpg"
        img.save(path, format="PNG")
        return path
    if kind < 0.01:
        path = stem + ".png"
        img.save(path)
        return path
    if kind < 0.02:
        img = img.convert("CMYK")
    elif kind < 0.07:
        img = img.convert("L")
    path = stem + ".jpg"
    options = {"quality": rng.randint(75, 95),
               "progressive": rng.random() < 0.15}
    if img.mode == "RGB":
        options["subsampling"] = rng.choice([0, 2, 2, 2])  # 4:4:4 or 4:2:0
    img.save(path, format="JPEG", **options)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--per-class", type=int, default=200,
                        help="images per class in train/ (default 200)")
    parser.add_argument("--val-per-class", type=int, default=20,
                        help="images per class in val/ (default 20)")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--photos", default=PHOTOS,
                        help=f"the folder of the class photographs (default {PHOTOS})")
    args = parser.parse_args()
    if not os.path.isdir(args.photos):
        print(f"make_image_set: {args.photos} not found (install mate-backgrounds)",
              file=sys.stderr)
        return 2

    jobs = []
    for split, count, base in (("train", args.per_class, 0), ("val", args.val_per_class, 1)):
        for c, name in enumerate(CLASSES):
            folder = os.path.join(args.out, split, name.lower())
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                jobs.append((folder, name, i, (base * 1000 + c) * 100000 + i))
    with multiprocessing.Pool(args.workers, use_photos, (args.photos,)) as pool:
        done = 0
        for _ in pool.imap_unordered(make_image, jobs, chunksize=16):
            done += 1
            if done % 200 == 0 or done == len(jobs):
                print(f"\rmake_image_set: {done}/{len(jobs)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
