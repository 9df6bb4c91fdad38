#!/usr/bin/env python3
"""Builds a COCO-shaped detection set: OUT/images/*.jpg (photographs cut from Debian's
`mate-backgrounds`, as bench/make_image_set.py cuts them) and OUT/annotations/instances.json in
COCO's instances format. Nothing is downloaded.

Shaped like COCO 2017: 80 categories with COCO's ids (1 to 90, ten missing); 0 to 20 objects an
image (about 7 on average, 1% of images with none); each object a star-shaped polygon of 3 to 16
points (some reaching past the image's edge), its box the polygon's extent clipped to the image,
its area pycocotools' area of its mask; 1% crowds, whose segmentation is run-length counts
(`{"counts": [...], "size": [h, w]}`) as COCO writes them; a few objects of two polygons.
Deterministic: the same set for the same arguments.

Usage: .venv/bin/python bench/make_coco_set.py OUT [--images 200] [--seed 0] [--photos DIR]
"""
import argparse
import json
import math
import os
import random
import sys

from PIL import Image
from pycocotools import mask as coco_mask

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_image_set  # noqa: E402  (the photographs and their crops)

MISSING_IDS = {12, 26, 29, 30, 45, 66, 68, 69, 71, 83}
CATEGORY_IDS = [i for i in range(1, 91) if i not in MISSING_IDS]


def polygon(rng, width, height):
    """A star-shaped polygon around a random centre: x0, y0, x1, y1, ..."""
    cx, cy = rng.uniform(0, width), rng.uniform(0, height)
    radius = rng.uniform(0.03, 0.35) * min(width, height)
    points = rng.randint(3, 16)
    angles = sorted(rng.uniform(0, 2 * math.pi) for _ in range(points))
    xy = []
    for a in angles:
        r = radius * rng.uniform(0.4, 1.0)
        xy += [round(cx + r * math.cos(a), 2), round(cy + r * math.sin(a), 2)]
    return xy


def column_runs(mask):
    """COCO's plain run-length counts of a mask: runs of 0, 1, 0, ... down the columns."""
    counts, current, run = [], 0, 0
    for value in mask.reshape(-1, order="F"):
        if value != current:
            counts.append(run)
            current, run = value, 0
        run += 1
    counts.append(run)
    return counts


def annotate(rng, image_id, width, height, next_id):
    """The objects of one image, their ids from next_id on."""
    objects = []
    count = 0 if rng.random() < 0.01 else min(20, int(rng.expovariate(1 / 7)))
    for _ in range(count):
        polygons = [polygon(rng, width, height) for _ in range(2 if rng.random() < 0.05 else 1)]
        rle = coco_mask.merge(coco_mask.frPyObjects(polygons, height, width))
        area = float(coco_mask.area(rle))
        if area == 0:
            continue
        x, y, w, h = (float(v) for v in coco_mask.toBbox(rle))
        crowd = rng.random() < 0.01
        if crowd:
            segmentation = {"counts": column_runs(coco_mask.decode(rle)), "size": [height, width]}
        else:
            segmentation = polygons
        objects.append({"id": next_id + len(objects), "image_id": image_id,
                        "category_id": rng.choice(CATEGORY_IDS), "bbox": [x, y, w, h],
                        "area": area, "iscrowd": int(crowd), "segmentation": segmentation})
    return objects


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--photos", default=make_image_set.PHOTOS)
    args = parser.parse_args()
    make_image_set.use_photos(args.photos)
    image_dir = os.path.join(args.out, "images")
    os.makedirs(image_dir)
    os.makedirs(os.path.join(args.out, "annotations"))
    rng = random.Random(args.seed)
    images, annotations = [], []
    for i in range(args.images):
        image_id = 1 + 7 * i  # ids with gaps, as COCO's
        name = rng.choice(make_image_set.CLASSES)
        path = make_image_set.make_image((image_dir, name, image_id, args.seed * 100003 + i))
        with Image.open(path) as opened:
            width, height = opened.size
        file_name = f"{image_id:012d}.jpg"
        os.rename(path, os.path.join(image_dir, file_name))
        images.append({"id": image_id, "file_name": file_name, "width": width, "height": height})
        annotations += annotate(rng, image_id, width, height, 1 + len(annotations))
    categories = [{"id": c, "name": f"category{c}", "supercategory": "thing"}
                  for c in CATEGORY_IDS]
    with open(os.path.join(args.out, "annotations", "instances.json"), "w") as f:
        json.dump({"images": images, "annotations": annotations, "categories": categories}, f)
    print(f"{args.out}: {len(images)} images, {len(annotations)} objects")


if __name__ == "__main__":
    main()
