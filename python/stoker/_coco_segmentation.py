"""The segmentation reference's COCO dataset read natively (its coco_utils.get_coco, the
reference's default dataset), each sample as its preset leaves it: (image, int64 mask [H, W]).

- use_v2=False: torchvision's CocoDetection whose joint transforms are the reference's own
  FilterAndRemapCocoCategories(categories, remap), ConvertCocoPolysToMask (a class map: each
  kept object's mask times its category, 255 where objects overlap, as a PIL image) and a v1
  preset;
- use_v2=True: that CocoDetection wrapped for v2 (target keys "masks" and "labels") whose
  transforms are the reference's CocoDetectionToVOCSegmentation (the same class map from the
  wrapper's masks, as a Mask: compact run-length counts too, zeros without objects) and a v2
  preset ending in ToPureTensor.

The class maps are made once, as those steps make them (pycocotools' masks, torch's uint8
arithmetic), and kept with the images as a stoker dataset (image and PNG mask bytes); the
preset runs natively (stoker/_joint.py), or the dataset's own __getitem__ where it cannot."""

import hashlib
import io
import json
import os
import sys
from typing import Callable, Optional

from stoker._joint import segmentation_v1_preset
from stoker._native_dataset import NativeDataset
from stoker._torchvision_voc import segmentation_form
from stoker._torchvision_wrapper import digest_files, kept_natively, target_keys, with_bound, \
    wrapped_dataset
from stoker.transforms import Compose, _flatten

# The kept dataset's fields: a segmentation sample as stoker/_joint.py reads one.
_SCHEMA = {"image": "bytes", "mask": "bytes", "height": "int64", "width": "int64"}


class _Reading:
    """How the reference makes a COCO sample's class map: the CocoDetection, its `categories`
    (a category's index among them its class, with `remap`), whether compact run-length
    counts are read (v2's wrapper reads them, v1's frPyObjects not), the preset's `steps` and
    whether they are v2's."""

    def __init__(self, coco, categories: list, remap: bool, v2: bool, steps: list):
        self.coco, self.categories, self.remap = coco, categories, remap
        self.v2, self.steps = v2, steps


def _reading(dataset) -> Optional[_Reading]:
    """How `dataset` is read where it is the reference's COCO dataset (module docstring): v1's
    torchvision CocoDetection (not a subclass) led by FilterAndRemapCocoCategories then
    ConvertCocoPolysToMask, or v2's wrapped one with target keys masks and labels led by
    CocoDetectionToVOCSegmentation; else None."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None:
        return None
    coco = wrapped_dataset(dataset)
    v2 = coco is not None
    coco = coco if v2 else dataset
    if type(coco) is not datasets.CocoDetection or coco.transform is not None or \
            coco.target_transform is not None or dataset.transforms is None or \
            (v2 and target_keys(dataset, ()) != {"masks", "labels"}):
        return None
    steps = _flatten(dataset.transforms)
    names = [type(step).__name__ for step in steps[:2]]
    if v2 and names[0] == "CocoDetectionToVOCSegmentation" and \
            isinstance(getattr(steps[0], "COCO_TO_VOC_LABEL_MAP", None), dict):
        return _Reading(coco, list(steps[0].COCO_TO_VOC_LABEL_MAP), True, True, steps[1:])
    if not v2 and names == ["FilterAndRemapCocoCategories", "ConvertCocoPolysToMask"] and \
            all(hasattr(steps[0], a) for a in ("categories", "remap")):
        return _Reading(coco, list(steps[0].categories), bool(steps[0].remap), False, steps[2:])
    return None


def class_map(annotations: list, reading: _Reading, height: int, width: int):
    """The reference's target of an image's `annotations`: uint8 [height, width]."""
    import torch
    from pycocotools import mask as coco_mask

    categories = reading.categories
    kept = [a for a in annotations if a["category_id"] in categories]
    if not kept:
        return torch.zeros((height, width), dtype=torch.uint8)
    masks = []
    for a in kept:
        segmentation = a["segmentation"]
        compact = isinstance(segmentation, dict) and isinstance(segmentation["counts"], str)
        decoded = coco_mask.decode(segmentation if compact and reading.v2 else
                                   coco_mask.frPyObjects(segmentation, height, width))
        decoded = decoded if decoded.ndim == 3 else decoded[..., None]
        masks.append(torch.as_tensor(decoded, dtype=torch.uint8).any(dim=2))
    masks = torch.stack(masks)
    labels = torch.as_tensor([categories.index(a["category_id"]) if reading.remap else
                              a["category_id"] for a in kept], dtype=masks.dtype)
    target, _ = (masks * labels[:, None, None]).max(dim=0)
    target[masks.sum(0) > 1] = 255
    return target


def _write(reading: _Reading) -> Callable:
    """Writes the images in the dataset's order with their class maps (PNG) as a stoker
    dataset."""
    coco = reading.coco

    def write(out):
        from PIL import Image

        from stoker.dataset_writer import DatasetWriter

        with DatasetWriter(out, _SCHEMA) as writer:
            for image_id in coco.ids:
                path = os.path.join(coco.root, coco.coco.imgs[image_id]["file_name"])
                with open(path, "rb") as f:
                    data = f.read()
                with Image.open(io.BytesIO(data)) as image:
                    width, height = image.size
                target = class_map(coco.coco.imgToAnns.get(image_id, []), reading, height,
                                   width)
                png = io.BytesIO()
                Image.fromarray(target.numpy()).save(png, "PNG")
                writer.append({"image": data, "mask": png.getvalue(), "height": height,
                               "width": width})
    return write


def reference_coco_segmentation(dataset, keep_once: Callable) -> Optional[NativeDataset]:
    """A NativeDataset for `dataset` when it is the segmentation reference's COCO dataset
    (module docstring): read natively, or by its own __getitem__ with the reason (a preset
    stoker does not run, class maps it cannot make); None for any other dataset.
    `keep_once(name, write)` gives the kept dataset's path (_datasets.py)."""
    reading = _reading(dataset)
    if reading is None:
        return None
    coco = reading.coco
    name = f"the segmentation reference's COCO dataset ({'v2' if reading.v2 else 'v1'})"
    plain = [type(step).__name__ for step in reading.steps[-1:]] == ["ToPureTensor"]
    if not (plain if reading.v2 else segmentation_v1_preset(reading.steps)):
        return NativeDataset(None, notes={"dataset": [
            f"{name} is read by its own __getitem__: stoker reads it with its v1 preset's "
            "steps, or a v2 preset ending in ToPureTensor"]})
    annotations = [[i, coco.coco.imgToAnns.get(i, [])] for i in coco.ids]
    digest = hashlib.sha256(json.dumps([reading.categories, reading.remap, reading.v2,
                                        annotations], default=str).encode())
    root = os.path.abspath(coco.root)
    digest.update(root.encode())
    try:
        digest_files(digest, root, [coco.coco.imgs[i]["file_name"] for i in coco.ids])
        path = keep_once("coco-segmentation-" + digest.hexdigest()[:24], _write(reading))
    except (OSError, RuntimeError, ValueError, ImportError) as e:
        return NativeDataset(None, notes={"dataset": [
            f"{name} is read by its own __getitem__: its class maps cannot be kept ({e})"]})
    largest = max([max(i["width"], i["height"]) for i in coco.coco.imgs.values()], default=1)
    native = kept_natively(path, with_bound(Compose(reading.steps), largest), name,
                           "its images and class maps kept once")
    if native.source is not None:
        native.batch_format, native.form = ("image", "mask"), segmentation_form("tensor", "v1")
    return native
