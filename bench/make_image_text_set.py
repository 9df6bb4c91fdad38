#!/usr/bin/env python3
"""Builds image-text pairs as LAION/DataComp-style WebDataset tars: KEY.jpg with a caption,
KEY.txt (or KEY.json, {"caption": ..., "key": ...}), from Debian's `mate-backgrounds` photos.
Nothing is downloaded.

Sample i is a random crop (20-80% of the area) of photograph i mod 10 (make_image_set.py's
classes), resized to SIZE px on its shorter side, saved at JPEG quality 75-95; its caption
names the photograph's subject in one of a few templates with a word about the crop
("a bright photo of a lady bird, seen from the left"), so that a model can learn which
caption goes with which image. Deterministic: the same tars for the same arguments.

Usage: python bench/make_image_text_set.py OUT [--samples 1000] [--per-tar 100] [--size 96]
       [--caption txt|json] [--photos DIR]
"""
import argparse
import io
import os
import random
import re
import sys
import tarfile

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_image_set import CLASSES, PHOTOS, random_box  # noqa: E402

TEMPLATES = ["a photo of a {}", "a {light} photo of a {}", "a picture of the {}, {side}",
             "{light} {} seen from the {side}", "the {}"]


def subject(name: str) -> str:
    """"LadyBird" -> "lady bird"."""
    return " ".join(re.findall(r"[A-Z][a-z]*", name)).lower()


def caption(name: str, rng: random.Random, brightness: float, side: str) -> str:
    light = "bright" if brightness > 110 else "dark"
    return rng.choice(TEMPLATES).format(subject(name), light=light, side=side)


def sample(photos: dict, i: int, size: int, seed: int) -> tuple:
    """(JPEG bytes, caption) of sample `i`."""
    rng = random.Random(seed * 1_000_003 + i)
    name = CLASSES[i % len(CLASSES)]
    src = photos[name]
    x, y, w, h = random_box(rng, src, 0.2, 0.8)
    scale = size / min(w, h)
    img = src.crop((x, y, x + w, y + h)).resize(
        (max(size, round(w * scale)), max(size, round(h * scale))), Image.BILINEAR)
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=rng.randint(75, 95))
    brightness = img.convert("L").resize((1, 1)).getpixel((0, 0))
    side = "left" if x + w / 2 < src.width / 2 else "right"
    return out.getvalue(), caption(name, rng, brightness, side)


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def write_tars(out, samples: int = 1000, per_tar: int = 100, size: int = 96,
               caption_member: str = "txt", photos: str = PHOTOS, seed: int = 0) -> list:
    """Writes the tars into folder `out`; returns their paths, in order."""
    import json
    os.makedirs(out, exist_ok=True)
    images = {name: Image.open(os.path.join(photos, name + ".jpg")).convert("RGB")
              for name in CLASSES}
    paths = []
    for start in range(0, samples, per_tar):
        path = os.path.join(out, f"pairs-{start // per_tar:06d}.tar")
        with tarfile.open(path, "w") as tar:
            for i in range(start, min(samples, start + per_tar)):
                key = f"{i:09d}"
                jpg, text = sample(images, i, size, seed)
                add(tar, key + ".jpg", jpg)
                if caption_member == "json":
                    add(tar, key + ".json", json.dumps({"caption": text, "key": key}).encode())
                else:
                    add(tar, key + ".txt", text.encode())
        paths.append(path)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--per-tar", type=int, default=100)
    parser.add_argument("--size", type=int, default=96, help="shorter side in px (default 96)")
    parser.add_argument("--caption", choices=["txt", "json"], default="txt")
    parser.add_argument("--photos", default=PHOTOS)
    args = parser.parse_args()
    if not os.path.isdir(args.photos):
        print(f"make_image_text_set: {args.photos} not found (install mate-backgrounds)",
              file=sys.stderr)
        return 2
    paths = write_tars(args.out, args.samples, args.per_tar, args.size, args.caption,
                       args.photos)
    print(f"make_image_text_set: {args.samples} pairs in {len(paths)} tars in {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
