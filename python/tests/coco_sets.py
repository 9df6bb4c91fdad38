"""A COCO-shaped set made by bench/make_coco_set.py and its stoker conversion, shared by the
COCO importer's tests and the detection and segmentation examples' tests; the VOC set made from
it, and a root of it as torchvision's VOC datasets read it."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import stoker

ROOT = pathlib.Path(__file__).resolve().parents[2]


def make_coco_set(out, images, seed):
    """bench/make_coco_set.py's set at `out`: out/images, out/annotations/instances.json."""
    subprocess.run([sys.executable, ROOT / "bench" / "make_coco_set.py", out, "--images",
                    str(images), "--seed", str(seed)], check=True, capture_output=True)
    return out


def add_run_lengths(coco_set):
    """Makes every 10th object a crowd whose mask is COCO's plain run-length counts, and every
    10th from the 5th one of compact counts (the string pycocotools encodes): the generator's
    1% of crowds may miss a small set."""
    from pycocotools import mask as coco_mask
    path = coco_set / "annotations" / "instances.json"
    data = json.loads(path.read_text())
    sizes = {image["id"]: (image["height"], image["width"]) for image in data["images"]}
    for k, annotation in enumerate(data["annotations"]):
        segmentation = annotation["segmentation"]
        if k % 10 not in (0, 5) or not isinstance(segmentation, list):
            continue
        h, w = sizes[annotation["image_id"]]
        rle = coco_mask.merge(coco_mask.frPyObjects(segmentation, h, w))
        if k % 10 == 0:
            mask = coco_mask.decode(rle).reshape(-1, order="F")
            changes = [0] + [i for i in range(1, len(mask)) if mask[i] != mask[i - 1]]
            counts = [b - a for a, b in zip([0] + changes[1:], changes[1:] + [len(mask)])]
            if mask[0]:
                counts = [0] + counts
            annotation.update(iscrowd=1, segmentation={"counts": counts, "size": [h, w]})
        else:
            annotation["segmentation"] = {"counts": rle["counts"].decode(), "size": [h, w]}
    path.write_text(json.dumps(data))


@pytest.fixture(scope="session")
def coco_set(tmp_path_factory):
    coco = make_coco_set(tmp_path_factory.mktemp("coco") / "set", 24, 3)
    add_run_lengths(coco)
    return coco


@pytest.fixture(scope="session")
def coco_dataset(coco_set, tmp_path_factory):
    out = tmp_path_factory.mktemp("coco_converted") / "ds"
    stoker.convert("coco", coco_set / "images", out,
                   annotations=coco_set / "annotations" / "instances.json", workers=2)
    return out


def annotations_of(coco_set):
    return os.fspath(coco_set / "annotations" / "instances.json")


def class_map(annotations, height, width):
    """An image's class map as torchvision's segmentation reference makes it from COCO (its
    ConvertCocoPolysToMask): each object's mask painted with its category id, 255 where
    objects overlap, 0 elsewhere; uint8 [H, W]."""
    import numpy as np
    from pycocotools import mask as coco_mask
    if not annotations:
        return np.zeros((height, width), np.uint8)
    masks = []
    for a in annotations:
        segmentation = a["segmentation"]
        if isinstance(segmentation, list):
            rle = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
        elif isinstance(segmentation["counts"], list):
            rle = coco_mask.frPyObjects(segmentation, height, width)
        else:
            rle = segmentation
        masks.append(coco_mask.decode(rle))
    masks = np.stack(masks)
    categories = np.array([a["category_id"] for a in annotations], np.uint8)
    target = (masks * categories[:, None, None]).max(axis=0)
    target[masks.sum(axis=0) > 1] = 255
    return target


def make_mask_folders(coco_set, out):
    """out/images (the set's images) and out/masks (each image's class map, class_map, as a
    PNG of the same stem: even images' gray "L", odd images' palette "P" as VOC's)."""
    from PIL import Image
    data = json.loads((coco_set / "annotations" / "instances.json").read_text())
    (out / "masks").mkdir(parents=True)
    images = out / "images"
    images.mkdir()
    for k, image in enumerate(sorted(data["images"], key=lambda i: i["id"])):
        name = image["file_name"]
        (images / name).write_bytes((coco_set / "images" / name).read_bytes())
        objects = [a for a in data["annotations"] if a["image_id"] == image["id"]]
        mask = Image.fromarray(class_map(objects, image["height"], image["width"]))
        if k % 2:
            mask = mask.convert("P")
            mask.putpalette([v for i in range(256) for v in (i, 255 - i, (7 * i) % 256)])
        mask.save(out / "masks" / (os.path.splitext(name)[0] + ".png"))
    return out


@pytest.fixture(scope="session")
def mask_folders(coco_set, tmp_path_factory):
    return make_mask_folders(coco_set, tmp_path_factory.mktemp("mask_folders"))


@pytest.fixture(scope="session")
def voc_set(coco_set, tmp_path_factory):
    """bench/make_voc_set.py's VOC-shaped set made from coco_set: the VOC2012 folder."""
    out = tmp_path_factory.mktemp("voc") / "set"
    subprocess.run([sys.executable, ROOT / "bench" / "make_voc_set.py", coco_set, out],
                   check=True, capture_output=True)
    return out / "VOCdevkit" / "VOC2012"


@pytest.fixture(scope="session")
def voc_root(voc_set, tmp_path_factory):
    """A root holding VOCdevkit/VOC2012, bench/make_voc_set.py's set as the v2 wrapper reads it
    (the images without objects left out of the splits, the boxes in halves floored: the
    wrapper reads int(corner)) with a trainval split, and VOCdevkit/VOC2007, the same with
    every split's order reversed."""
    root = tmp_path_factory.mktemp("voc_root")
    voc = root / "VOCdevkit" / "VOC2012"
    shutil.copytree(voc_set, voc)
    for xml in (voc / "Annotations").iterdir():
        xml.write_text(re.sub(r">(\d+)\.5<", r">\1<", xml.read_text()))
    for kind in ("Main", "Segmentation"):
        splits = voc / "ImageSets" / kind
        for split in ("train", "val"):
            names = (splits / f"{split}.txt").read_text().split()
            if kind == "Main":
                names = [n for n in names
                         if "<object>" in (voc / "Annotations" / f"{n}.xml").read_text()]
            (splits / f"{split}.txt").write_text("".join(n + "\n" for n in names))
        (splits / "trainval.txt").write_text((splits / "train.txt").read_text() +
                                             (splits / "val.txt").read_text())
    shutil.copytree(voc, root / "VOCdevkit" / "VOC2007")
    for listing in (root / "VOCdevkit" / "VOC2007" / "ImageSets").glob("*/*.txt"):
        listing.write_text("".join(n + "\n" for n in reversed(listing.read_text().split())))
    return root
