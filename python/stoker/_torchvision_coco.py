"""The detection reference's COCO datasets read natively: the annotations and images kept once
as a ``convert coco`` dataset, the dataset's joint transforms translated, each sample given back
in the dataset's own form.

- torchvision's CocoDetection wrapped for its v2 transforms (``wrap_dataset_for_transforms_v2``,
  the reference's v2 path): boxes as the wrapper's (XYXY, x + w in float32); (image,
  {"image_id": int, "boxes": BoundingBoxes, "labels": tensor}) with the wrapper's types, keys and
  key order, and {"image_id": int} alone for an image without annotations.
- the reference's own v1 dataset (coco_utils.get_coco(use_v2=False)): a CocoDetection subclass
  of that name whose transforms start with ConvertCocoPolysToMask; kept with that step's targets
  (``convert coco``'s v1_targets); (image, {"boxes", "labels", "masks", "image_id", "area",
  "iscrowd"}) as that step and the preset after it make them."""

import hashlib
import json
import os
import sys
from typing import Callable, Optional

from stoker._native_dataset import NativeDataset
from stoker._torchvision_wrapper import digest_files, kept_natively, kinds, target_keys, \
    with_bound, wrapped_dataset
from stoker.tools import convert
from stoker.transforms import Compose, _flatten

# The target keys read natively (the wrapper's default; "masks" and COCO's raw keys are left to
# the dataset's own __getitem__), in the wrapper's order.
_KEYS = ("image_id", "boxes", "labels")
# The stored fields a sample is made from, in the batch's order (the v2 wrapper's, v1's).
_FIELDS = ("image", "image_id", "boxes", "labels")
_V1_FIELDS = _FIELDS + ("masks",)


def _annotations(coco, masks: bool = False) -> bytes:
    """What the native sample is made from, as a COCO instances file: the images (in the
    dataset's order), their objects' boxes, categories, areas and crowd flags (segmentations
    only for `masks`) and the categories."""
    index = coco.coco
    images = [index.imgs[i] for i in coco.ids]
    objects = [{key: value for key, value in annotation.items()
                if masks or key != "segmentation"}
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


def _v1_steps(dataset) -> Optional[list]:
    """The preset's steps where `dataset` is the detection reference's v1 dataset: a subclass of
    torchvision's CocoDetection named CocoDetection, its joint transforms in ``_transforms``
    (the base's none), the first of them ConvertCocoPolysToMask; else None."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None or not isinstance(dataset, datasets.CocoDetection) or \
            type(dataset) is datasets.CocoDetection or type(dataset).__name__ != "CocoDetection" \
            or any(getattr(dataset, a, None) is not None
                   for a in ("transforms", "transform", "target_transform")):
        return None
    steps = _flatten(getattr(dataset, "_transforms", None))
    if type(steps[0]).__name__ != "ConvertCocoPolysToMask":
        return None
    return steps[1:]


def _v1_readable(coco) -> bool:
    """Whether ConvertCocoPolysToMask reads every object of `coco` as the kept dataset holds
    it: a crowd flag each, no keypoints, an area and a segmentation each non-crowd one, which
    pycocotools' frPyObjects takes (polygons or plain counts, not a compact string)."""
    def segmentation_read(segmentation) -> bool:
        return not isinstance(segmentation, dict) or \
            not isinstance(segmentation.get("counts"), (str, bytes))

    return all("iscrowd" in a and "keypoints" not in a and
               (a["iscrowd"] != 0 or ("area" in a and "segmentation" in a and
                                      segmentation_read(a["segmentation"])))
               for a in coco.coco.anns.values())


def _v1_form(coco) -> Callable:
    """A native sample (image, image_id, boxes, labels, masks) in ConvertCocoPolysToMask's form:
    its area and iscrowd the non-crowd objects' as written (not filtered by the boxes' clamp,
    as that step leaves them)."""
    import torch

    annotations = coco.coco.imgToAnns

    def form(sample):
        image, image_id, boxes, labels, masks = sample
        image_id = int(image_id)
        objects = [a for a in annotations.get(image_id, []) if a["iscrowd"] == 0]
        return image, {"boxes": boxes, "labels": labels, "masks": masks, "image_id": image_id,
                       "area": torch.tensor([a["area"] for a in objects]),
                       "iscrowd": torch.tensor([a["iscrowd"] for a in objects])}

    return form


def reference_coco_detection(dataset, keep_once: Callable):
    """A NativeDataset for `dataset` when it is the detection reference's v1 COCO dataset
    (_v1_steps) whose annotations ConvertCocoPolysToMask reads and whose preset stoker runs
    natively; else None. `keep_once` as wrapped_coco_detection's."""
    steps = _v1_steps(dataset)
    if steps is None or not _v1_readable(dataset):
        return None
    annotations = _annotations(dataset, masks=True)

    def write(out):
        listed = os.path.join(os.path.dirname(out), "instances.json")
        with open(listed, "wb") as f:
            f.write(annotations)
        convert("coco", dataset.root, out, annotations=listed, v1_targets=True, progress=False)

    try:
        path = keep_once("coco-v1-" + _digest(dataset, annotations), write)
    except (OSError, RuntimeError):  # files it cannot read as listed: the dataset reads them
        return None
    largest = max([max(image["width"], image["height"])
                   for image in dataset.coco.imgs.values()], default=1)
    native = kept_natively(path, with_bound(Compose(steps), largest),
                           "the detection reference's v1 CocoDetection",
                           "its annotations and images kept once with ConvertCocoPolysToMask's "
                           "targets")
    if native.source is not None:
        native.batch_format, native.form = _V1_FIELDS, _v1_form(dataset)
    return native
