"""torchvision's CocoDetection wrapped for its v2 transforms (``wrap_dataset_for_transforms_v2``,
as the detection reference's v2 path makes it), read natively: the annotations and images kept
once as a ``convert coco`` dataset (its boxes are the wrapper's: XYXY, x + w in float32), the
dataset's joint ``transforms`` translated, and each sample given back in the wrapper's form:
(image, {"image_id": int, "boxes": BoundingBoxes, "labels": tensor}) with the wrapper's types,
keys and key order, and {"image_id": int} alone for an image without annotations."""

import hashlib
import json
import os
import sys
from typing import Callable

from stoker._native_dataset import NativeDataset
from stoker._torchvision_wrapper import digest_files, kinds, target_keys, with_bound, \
    wrapped_dataset
from stoker.tools import convert

# The target keys read natively (the wrapper's default; "masks" and COCO's raw keys are left to
# the dataset's own __getitem__), in the wrapper's order.
_KEYS = ("image_id", "boxes", "labels")
# The stored fields a sample is made from, in the batch's order.
_FIELDS = ("image", "image_id", "boxes", "labels")


def _annotations(coco) -> bytes:
    """What the native sample is made from, as a COCO instances file: the images (in the
    dataset's order), their objects' boxes, categories, areas and crowd flags (no segmentation:
    "masks" is not read) and the categories."""
    index = coco.coco
    images = [index.imgs[i] for i in coco.ids]
    objects = [{key: value for key, value in annotation.items() if key != "segmentation"}
               for image_id in coco.ids for annotation in index.imgToAnns.get(image_id, [])]
    return json.dumps({"images": [{key: image[key] for key in ("id", "file_name", "width",
                                                              "height")} for image in images],
                       "annotations": objects,
                       "categories": [{"id": c["id"], "name": c["name"]}
                                      for c in index.dataset.get("categories", [])]}).encode()


def _digest(coco, annotations: bytes) -> str:
    """Names the kept dataset: the annotations, the images' folder, and each listed image's
    size and modification time (a changed file gives another dataset)."""
    digest = hashlib.sha256(annotations)
    root = os.path.abspath(coco.root)
    digest.update(root.encode())
    digest_files(digest, root, [coco.coco.imgs[image_id]["file_name"] for image_id in coco.ids])
    return digest.hexdigest()[:24]


def _form(forms: tuple, keys: frozenset, empty: set) -> Callable:
    """A native sample (image, image_id, boxes, labels) in the wrapper's form."""
    from torchvision import tv_tensors

    image_kind, boxes_kind = forms

    def form(sample):
        image, image_id, boxes, labels = sample
        if image_kind == "image":
            image = tv_tensors.Image(image)
        image_id = int(image_id)
        if image_id in empty:
            return image, {"image_id": image_id}
        if boxes_kind == "tv":
            boxes = tv_tensors.BoundingBoxes(boxes, format="XYXY",
                                             canvas_size=tuple(image.shape[-2:]))
        values = {"image_id": image_id, "boxes": boxes, "labels": labels}
        return image, {key: values[key] for key in _KEYS if key in keys}

    return form


def wrapped_coco_detection(dataset, keep_once: Callable):
    """A NativeDataset for `dataset` when it is torchvision's CocoDetection (not a subclass)
    wrapped for v2 with target keys among image_id, boxes and labels, joint transforms (or
    none) that leave a tensor image; else None. `keep_once(name, write)` gives the kept
    dataset's path (_datasets.py)."""
    coco = wrapped_dataset(dataset)
    datasets = sys.modules.get("torchvision.datasets")
    if coco is None or type(coco) is not datasets.CocoDetection:
        return None
    keys = target_keys(dataset, _KEYS)
    forms = kinds(dataset.transforms)
    if not keys or not keys <= set(_KEYS) or forms is None:
        return None
    annotations = _annotations(coco)

    def write(out):
        listed = os.path.join(os.path.dirname(out), "instances.json")
        with open(listed, "wb") as f:
            f.write(annotations)
        convert("coco", coco.root, out, annotations=listed, progress=False)

    try:
        path = keep_once("coco-" + _digest(coco, annotations), write)
    except (OSError, RuntimeError):  # files it cannot read as listed: the dataset reads them
        return None
    empty = {image_id for image_id in coco.ids if not coco.coco.imgToAnns.get(image_id)}
    largest = max([max(image["width"], image["height"]) for image in coco.coco.imgs.values()],
                  default=1)
    native = NativeDataset(path, with_bound(dataset.transforms, largest), {"dataset": [
        "torchvision's CocoDetection (wrapped for v2) is read natively: its annotations and "
        f"images kept once as a stoker dataset ({path})"]})
    native.batch_format, native.form = _FIELDS, _form(forms, keys, empty)
    return native
