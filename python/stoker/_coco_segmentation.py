"""The segmentation reference's COCO dataset read natively (its coco_utils.get_coco with
use_v2=False, the reference's default): torchvision's CocoDetection whose joint transforms are
the reference's own FilterAndRemapCocoCategories(categories, remap), ConvertCocoPolysToMask (a
class map: each kept object's mask times its category, 255 where objects overlap, as a PIL
image) and a v1 preset stoker runs natively. The class maps are made once, as that step makes
them (pycocotools' masks, torch's uint8 arithmetic), and kept with the images as a stoker
dataset (image and PNG mask bytes); each sample comes as the preset leaves it: (image, int64
mask [H, W])."""

import hashlib
import io
import json
import os
import sys
from typing import Callable, Optional

from stoker._joint import segmentation_v1_preset
from stoker._native_dataset import NativeDataset
from stoker._torchvision_voc import segmentation_form
from stoker._torchvision_wrapper import digest_files, kept_natively, with_bound
from stoker.transforms import Compose, _flatten

# The kept dataset's fields: a segmentation sample as stoker/_joint.py reads one.
_SCHEMA = {"image": "bytes", "mask": "bytes", "height": "int64", "width": "int64"}


def _steps(dataset) -> Optional[list]:
    """The joint transforms of `dataset` (flattened) where it is torchvision's CocoDetection
    (not a subclass) led by the reference's FilterAndRemapCocoCategories then
    ConvertCocoPolysToMask; else None."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None or type(dataset) is not datasets.CocoDetection or \
            dataset.transform is not None or dataset.target_transform is not None or \
            dataset.transforms is None:
        return None
    steps = _flatten(dataset.transforms)
    names = [type(step).__name__ for step in steps[:2]]
    if names != ["FilterAndRemapCocoCategories", "ConvertCocoPolysToMask"] or \
            not all(hasattr(steps[0], a) for a in ("categories", "remap")):
        return None
    return steps


def class_map(annotations: list, categories: list, remap: bool, height: int, width: int):
    """The reference's target of an image's `annotations`: uint8 [height, width]."""
    import torch
    from pycocotools import mask as coco_mask

    kept = [a for a in annotations if a["category_id"] in categories]
    if not kept:
        return torch.zeros((height, width), dtype=torch.uint8)
    masks = []
    for a in kept:
        decoded = coco_mask.decode(coco_mask.frPyObjects(a["segmentation"], height, width))
        decoded = decoded if decoded.ndim == 3 else decoded[..., None]
        masks.append(torch.as_tensor(decoded, dtype=torch.uint8).any(dim=2))
    masks = torch.stack(masks)
    labels = torch.as_tensor([categories.index(a["category_id"]) if remap else a["category_id"]
                              for a in kept], dtype=masks.dtype)
    target, _ = (masks * labels[:, None, None]).max(dim=0)
    target[masks.sum(0) > 1] = 255
    return target


def _write(coco, categories: list, remap: bool) -> Callable:
    """Writes `coco`'s images in its order with their class maps (PNG) as a stoker dataset."""
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
                target = class_map(coco.coco.imgToAnns.get(image_id, []), categories, remap,
                                   height, width)
                png = io.BytesIO()
                Image.fromarray(target.numpy()).save(png, "PNG")
                writer.append({"image": data, "mask": png.getvalue(), "height": height,
                               "width": width})
    return write


def reference_coco_segmentation(dataset, keep_once: Callable) -> Optional[NativeDataset]:
    """A NativeDataset for `dataset` when it is the segmentation reference's v1 COCO dataset
    (module docstring): read natively, or by its own __getitem__ with the reason (a preset
    stoker does not run, class maps it cannot make); None for any other dataset.
    `keep_once(name, write)` gives the kept dataset's path (_datasets.py)."""
    steps = _steps(dataset)
    if steps is None:
        return None
    name = "the segmentation reference's COCO dataset"
    if not segmentation_v1_preset(steps[2:]):
        return NativeDataset(None, notes={"dataset": [
            f"{name} is read by its own __getitem__: stoker runs its v1 presets (RandomResize, "
            "RandomHorizontalFlip, RandomCrop, PILToTensor, ToDtype, Normalize) natively"]})
    categories, remap = list(steps[0].categories), bool(steps[0].remap)
    annotations = [[i, dataset.coco.imgToAnns.get(i, [])] for i in dataset.ids]
    digest = hashlib.sha256(json.dumps([categories, remap, annotations], default=str).encode())
    root = os.path.abspath(dataset.root)
    digest.update(root.encode())
    try:
        digest_files(digest, root, [dataset.coco.imgs[i]["file_name"] for i in dataset.ids])
        path = keep_once("coco-segmentation-" + digest.hexdigest()[:24],
                         _write(dataset, categories, remap))
    except (OSError, RuntimeError, ValueError, ImportError) as e:
        return NativeDataset(None, notes={"dataset": [
            f"{name} is read by its own __getitem__: its class maps cannot be kept ({e})"]})
    largest = max([max(i["width"], i["height"]) for i in dataset.coco.imgs.values()], default=1)
    native = kept_natively(path, with_bound(Compose(steps[2:]), largest), name,
                           "its images and class maps kept once")
    if native.source is not None:
        native.batch_format, native.form = ("image", "mask"), segmentation_form("tensor", "v1")
    return native
