#!/usr/bin/env python3
"""Writes the photographs image_decode_bench decodes: four of Debian's mate-backgrounds nature
photos, fitted (centre crop + LANCZOS resize, as ImageOps.fit does) to an ImageNet-like 500x375
and to 1200x900, JPEG quality 90 (PIL's default 4:2:0), each baseline and progressive:
OUT/{small,large}_{N}{,_progressive}.jpg.

Usage: .venv/bin/python bench/decode_photos.py OUT_DIR
"""
import os
import sys

from PIL import Image, ImageOps

PHOTOS = ["Aqua.jpg", "Dune.jpg", "LadyBird.jpg", "Wood.jpg"]
SOURCE = "/usr/share/backgrounds/mate/nature"
SIZES = {"small": (500, 375), "large": (1200, 900)}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for n, name in enumerate(PHOTOS):
        photo = Image.open(os.path.join(SOURCE, name)).convert("RGB")
        for label, size in SIZES.items():
            fitted = ImageOps.fit(photo, size, Image.LANCZOS)
            fitted.save(os.path.join(out, f"{label}_{n}.jpg"), quality=90)
            fitted.save(os.path.join(out, f"{label}_{n}_progressive.jpg"), quality=90,
                        progressive=True)


if __name__ == "__main__":
    main()
