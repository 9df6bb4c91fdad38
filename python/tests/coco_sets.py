"""A COCO-shaped set made by bench/make_coco_set.py and its stoker conversion, shared by the
COCO importer's tests and the detection and segmentation examples' tests."""

import json
import os
import pathlib
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
