#!/usr/bin/env python3
"""Builds a Pascal VOC-shaped set from a COCO-shaped one (bench/make_coco_set.py's): OUT/
VOCdevkit/VOC2012 with JPEGImages/, Annotations/*.xml (VOC's layout: filename, size, objects
with name, pose, truncated, difficult and an integer bndbox counted from 1; some boxes in
fractions, some persons with parts), SegmentationClass/*.png (palette PNGs of class indices,
255 on the borders of objects, as VOC's) and ImageSets/Main/{train,val}.txt and
ImageSets/Segmentation/{train,val}.txt (every fourth image in val). Each COCO category becomes
VOC class (id - 1) % 20. Deterministic. Nothing is downloaded. --whole: every box in whole
pixels and the images without objects left out of ImageSets/Main, as torchvision's v2 wrapper
of VOCDetection reads a set (int() of each corner, each image's objects).

Usage: .venv/bin/python bench/make_voc_set.py COCO_SET OUT [--whole]
"""
import argparse
import json
import math
import os
import shutil

import numpy as np
from PIL import Image
from pycocotools import mask as coco_mask

CLASSES = ["aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
           "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
           "train", "tvmonitor"]


def voc_class(category_id):
    """The VOC class index (0..19) of a COCO category id."""
    return (category_id - 1) % 20


def decoded(segmentation, height, width):
    if isinstance(segmentation, list):
        return coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(segmentation, height,
                                                                      width)))
    if isinstance(segmentation["counts"], list):
        segmentation = coco_mask.frPyObjects(segmentation, height, width)
    return coco_mask.decode(segmentation)


def box_text(k, x, y, w, h, width, height, whole):
    """VOC's bndbox of COCO's [x, y, w, h]: pixels from 1, integers (every 7th in halves
    unless `whole`)."""
    if k % 7 == 3 and not whole:
        corners = [max(0.5, x), max(0.5, y), min(width, x + w), min(height, y + h)]
        return [f"{math.floor(2 * c) / 2:g}" for c in corners]
    x0, y0 = min(width, math.floor(x) + 1), min(height, math.floor(y) + 1)
    return [str(x0), str(y0), str(max(x0, min(width, math.ceil(x + w)))),
            str(max(y0, min(height, math.ceil(y + h))))]


def annotation_xml(name, image, objects, whole):
    lines = ["<annotation>", "\t<folder>VOC2012</folder>", f"\t<filename>{name}.jpg</filename>",
             "\t<source><database>stoker generated</database></source>",
             f"\t<size><width>{image['width']}</width><height>{image['height']}</height>"
             "<depth>3</depth></size>", "\t<segmented>1</segmented>"]
    for k, a in enumerate(objects):
        xmin, ymin, xmax, ymax = box_text(a["id"], *a["bbox"], image["width"], image["height"],
                                             whole)
        cls = CLASSES[voc_class(a["category_id"])]
        lines += ["\t<object>", f"\t\t<name>{cls}</name>", "\t\t<pose>Unspecified</pose>",
                  f"\t\t<truncated>{a['id'] % 2}</truncated>",
                  f"\t\t<difficult>{int(a['id'] % 5 == 0)}</difficult>",
                  f"\t\t<bndbox><xmin>{xmin}</xmin><ymin>{ymin}</ymin><xmax>{xmax}</xmax>"
                  f"<ymax>{ymax}</ymax></bndbox>"]
        if cls == "person":  # a part, with its own name and box, which readers skip
            lines += [f"\t\t<part><name>head</name><bndbox><xmin>{xmin}</xmin><ymin>{ymin}"
                      f"</ymin><xmax>{xmin}</xmax><ymax>{ymin}</ymax></bndbox></part>"]
        lines.append("\t</object>")
    return "\n".join(lines + ["</annotation>", ""])


def class_png(objects, image, path):
    """VOC's SegmentationClass PNG: class index + 1 inside each object, 255 on its border."""
    height, width = image["height"], image["width"]
    target = np.zeros((height, width), np.uint8)
    for a in objects:
        mask = decoded(a["segmentation"], height, width).astype(bool)
        target[mask] = voc_class(a["category_id"]) + 1
        eroded = mask.copy()
        eroded[1:-1, 1:-1] = (mask[1:-1, 1:-1] & mask[:-2, 1:-1] & mask[2:, 1:-1]
                              & mask[1:-1, :-2] & mask[1:-1, 2:])
        target[mask & ~eroded] = 255
    png = Image.fromarray(target, mode="L").convert("P")
    png.putpalette([v for i in range(256) for v in (i * 37 % 256, i * 91 % 256, i * 53 % 256)])
    png.save(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("coco_set")
    parser.add_argument("out")
    parser.add_argument("--whole", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(args.coco_set, "annotations", "instances.json")) as f:
        coco = json.load(f)
    root = os.path.join(args.out, "VOCdevkit", "VOC2012")
    for sub in ("JPEGImages", "Annotations", "SegmentationClass", "ImageSets/Main",
                "ImageSets/Segmentation"):
        os.makedirs(os.path.join(root, sub))
    splits = {(kind, split): [] for kind in ("Main", "Segmentation") for split in ("train", "val")}
    for k, image in enumerate(sorted(coco["images"], key=lambda i: i["id"])):
        name = f"2012_{image['id']:06d}"
        shutil.copy(os.path.join(args.coco_set, "images", image["file_name"]),
                    os.path.join(root, "JPEGImages", name + ".jpg"))
        objects = [a for a in coco["annotations"] if a["image_id"] == image["id"]]
        with open(os.path.join(root, "Annotations", name + ".xml"), "w") as f:
            f.write(annotation_xml(name, image, objects, args.whole))
        class_png(objects, image, os.path.join(root, "SegmentationClass", name + ".png"))
        for kind in ("Main", "Segmentation"):
            if objects or kind == "Segmentation" or not args.whole:
                splits[kind, "val" if k % 4 == 3 else "train"].append(name)
    for (kind, split), names in splits.items():
        with open(os.path.join(root, "ImageSets", kind, split + ".txt"), "w") as f:
            f.write("".join(n + "\n" for n in names))
    print(f"{root}: {len(coco['images'])} images")


if __name__ == "__main__":
    main()
