"""torchvision's Pascal VOC datasets read natively, each sample as the dataset gives it:

- VOCDetection wrapped for v2 (``wrap_dataset_for_transforms_v2``): its split kept once as a
  ``convert voc`` dataset, the joint ``transforms`` translated, each sample (image, {"boxes":
  BoundingBoxes XYXY int64, "labels": int64}) as the wrapper makes it. The wrapper reads each
  corner with int(): its boxes are whole numbers, which stoker's float32 boxes hold exactly
  through the steps that move them by whole pixels (flips, zoom-outs, IoU crops: their areas
  too, up to 2^24); a step that scales them (torchvision rounding int64 boxes) leaves the
  dataset to its own __getitem__.
- VOCSegmentation wrapped for v2 (image, Mask [1, H, W]), and raw (PIL image, PIL mask) where
  its joint transforms only flip and convert the pair (v2 treats a PIL mask as an image) or are
  the segmentation reference's own v1 preset (image, int64 mask [H, W]): its split kept once
  as a ``convert masks`` dataset.
- VOCDetection raw (the parsed XML as a nested dict of strings): its own __getitem__, loader.plan
  saying why.

What the wrapper would fail on (an annotation that does not parse, an object without a name or
a whole-number bndbox, an image without objects, a missing image) is one ValueError line naming
the file and the object, before anything is kept."""

import hashlib
import os
import re
import sys
import xml.etree.ElementTree as ET
from typing import Callable, Optional

from stoker._joint import segmentation_v1_preset
from stoker._native_dataset import NativeDataset
from stoker._torchvision_wrapper import digest_files, grown_side, kept_natively, kinds, \
    target_keys, with_bound, wrapped_dataset
from stoker.tools import convert
from stoker.transforms import _flatten

_KEYS = ("boxes", "labels")  # the wrapper's default target keys, in its order
_CORNERS = ("xmin", "ymin", "xmax", "ymax")
# The steps that keep whole-number boxes whole (moved by whole pixels, or not at all), and
# those that do not touch the boxes.
_WHOLE_PIXEL_STEPS = {"RandomHorizontalFlip", "RandomZoomOut", "RandomIoUCrop",
                      "RandomPhotometricDistort",
                      "SanitizeBoundingBoxes", "ClampBoundingBoxes", "ConvertBoundingBoxFormat",
                      "ToImage", "PILToTensor", "ToPureTensor", "ToDtype", "Normalize"}
# The steps on a raw VOCSegmentation's (PIL image, PIL mask) that move the mask as stoker
# moves a class map (a flip while both are PIL images or tv_tensors.Image: after PILToTensor or
# ToPureTensor, v2 flips the first plain tensor alone: _image_alone).
_RAW_MASK_STEPS = {"RandomHorizontalFlip", "ToImage", "PILToTensor", "ToPureTensor"}
# The largest image side whose areas float32 holds as whole numbers (RandomIoUCrop's IoUs,
# which torchvision computes from int64 areas).
_EXACT_AREAS_SIDE = 4096
_WRAP = ("wrap_dataset_for_transforms_v2 of it is read natively (flips, zoom-outs, IoU "
         "crops, the photometric, box and type steps)")


def _other_step(transforms, v2_steps: set) -> Optional[str]:
    """The name of the first step of `transforms` that is not one of torchvision v2's
    `v2_steps` nor stoker's DecodeImage, or None."""
    for step in [] if transforms is None else _flatten(transforms):
        name, module = type(step).__name__, type(step).__module__
        if not (name in v2_steps and module.startswith("torchvision.transforms.v2") or
                name == "DecodeImage" and module == "stoker.transforms"):
            return name
    return None


_TYPE_STEPS = ("ToImage", "PILToTensor", "ToPureTensor", "ToDtype", "Normalize")


def _image_alone(transforms, plain: tuple) -> Optional[str]:
    """The first step of `transforms` that moves or changes the pair after one of `plain`
    made it plain tensors (v2 then changes the first plain tensor alone, the image), or
    None."""
    made_plain = False
    for step in [] if transforms is None else _flatten(transforms):
        name = type(step).__name__
        if made_plain and name not in _TYPE_STEPS:
            return name
        made_plain = made_plain or name in plain
    return None


def _wrapped_problem(dataset) -> Optional[str]:
    """Why the joint transforms of wrapped `dataset` cannot be read natively, or None."""
    if kinds(dataset.transforms) is None:
        return "its transforms leave a PIL image (stoker gives tensors)"
    alone = _image_alone(dataset.transforms, ("ToPureTensor",))
    return None if alone is None else f"its {alone} after ToPureTensor changes the image alone"


def _declined(name: str, why: str) -> NativeDataset:
    """`name` read by its own __getitem__, loader.plan saying `why`."""
    return NativeDataset(None, notes={"dataset": [f"torchvision's {name} is read by its own "
                                                  f"__getitem__: {why}"]})


def _split(voc, folder: str, extension: str) -> Optional[tuple]:
    """(the VOC folder, the split's names) where the dataset lists the images and targets that
    folder's ImageSets/`folder`/<image_set>.txt names, as torchvision lists them; else None."""
    if not voc.images:
        return None
    root = os.path.dirname(os.path.dirname(voc.images[0]))
    try:
        with open(os.path.join(root, "ImageSets", folder, voc.image_set + ".txt")) as f:
            names = [line.strip() for line in f.readlines()]
    except OSError:
        return None
    target = "Annotations" if extension == ".xml" else "SegmentationClass"
    if not all(names) or voc.images != [os.path.join(root, "JPEGImages", n + ".jpg")
                                        for n in names] or \
            voc.targets != [os.path.join(root, target, n + extension) for n in names]:
        return None
    return root, names


def _digest(kind: str, root: str, folder: str, image_set: str, files: list) -> str:
    """Names the kept dataset: the VOC folder, the split and each of its files' size and
    modification time (a changed file gives another dataset); ValueError naming a file that
    is not there."""
    digest = hashlib.sha256(f"{kind}\0{os.path.abspath(root)}\0{image_set}\0".encode())
    try:
        digest_files(digest, root, [os.path.join("ImageSets", folder, image_set + ".txt")] +
                     files)
    except OSError as e:
        raise ValueError(f"{e.filename}: {e.strerror}") from None
    return f"{kind}-{digest.hexdigest()[:24]}"


class _WrapperFails(ValueError):
    """What torchvision's v2 wrapper of VOCDetection would fail on: one line naming the file and
    the object."""


def _check_annotation(voc, path: str, categories: dict) -> None:
    """_WrapperFails where the wrapper would fail on annotation `path`."""
    try:
        target = voc.parse_voc_xml(ET.parse(path).getroot())
    except ET.ParseError as e:
        raise _WrapperFails(f"{path}: not XML: {e}") from None
    except OSError as e:
        raise _WrapperFails(f"{path}: {e.strerror}") from None
    annotation = target.get("annotation")
    objects = annotation.get("object") if isinstance(annotation, dict) else None
    if not objects:
        raise _WrapperFails(f"{path}: no object (the v2 wrapper of VOCDetection reads each "
                            "image's objects)")
    for k, found in enumerate(objects, 1):
        found = found if isinstance(found, dict) else {}
        if found.get("name") not in categories:
            raise _WrapperFails(f"{path}: object {k}: " + (
                "no name" if "name" not in found else
                f"class {found['name']!r} is not one of VOC's 20"))
        box = found.get("bndbox")
        if not isinstance(box, dict):
            raise _WrapperFails(f"{path}: object {k}: no bndbox")
        for corner in _CORNERS:
            try:
                int(box.get(corner))
            except (TypeError, ValueError):
                raise _WrapperFails(f"{path}: object {k}: {corner} {box.get(corner)!r} is not a "
                                    "whole number (the v2 wrapper reads it with int())") from None


_SIZE = re.compile(rb"<(?:width|height)>\s*(\d+)\s*</")


def _largest_side(paths: list) -> int:
    """The largest side the annotations at `paths` give their images (the importer checked
    each against its image)."""
    largest = 1
    for path in paths:
        with open(path, "rb") as f:
            largest = max([largest] + [int(side) for side in _SIZE.findall(f.read())])
    return largest


def _tv_tensors(image_kind: str, target_kind: str, image, **targets) -> tuple:
    """`image` and `targets` (their "boxes" XYXY on the image) as the wrapper's types."""
    from torchvision import tv_tensors
    if image_kind == "image":
        image = tv_tensors.Image(image)
    if target_kind == "tv" and "boxes" in targets:
        targets["boxes"] = tv_tensors.BoundingBoxes(targets["boxes"], format="XYXY",
                                                    canvas_size=tuple(image.shape[-2:]))
    return image, targets


def _detection_form(forms: tuple, keys: frozenset) -> Callable:
    """A native sample (image, boxes, labels) in the wrapper's form (its int64 boxes)."""
    import torch

    def form(sample):
        image, boxes, labels = sample
        image, target = _tv_tensors(*forms, image, boxes=boxes.to(torch.int64), labels=labels)
        return image, {key: target[key] for key in _KEYS if key in keys}

    return form


def segmentation_form(image_kind: str, mask_kind: str) -> Callable:
    """A native sample (image, mask [H, W]) as the dataset gives it: the mask [1, H, W] (as
    torchvision makes a tensor of a PIL image), a Mask, a tv_tensors.Image or a tensor; or
    [H, W] as it is (mask_kind "v1": the reference's v1 PILToTensor)."""
    from torchvision import tv_tensors

    def form(sample):
        image, mask = sample
        image, target = _tv_tensors(image_kind, "tensor", image)
        if mask_kind == "v1":
            return image, mask
        mask = mask[None]
        if mask_kind == "tv":
            mask = tv_tensors.Mask(mask)
        elif mask_kind == "image":
            mask = tv_tensors.Image(mask)
        return image, mask

    return form


def _wrapped_detection(dataset, voc, keep_once: Callable) -> NativeDataset:
    name = "VOCDetection (wrapped for v2)"
    keys = target_keys(dataset, _KEYS)
    forms = kinds(dataset.transforms)
    if not keys or not keys <= set(_KEYS):
        return _declined(name, f"its target keys {sorted(keys)} are not among {list(_KEYS)}")
    problem = _wrapped_problem(dataset)
    if problem is not None:
        return _declined(name, problem)
    other = _other_step(dataset.transforms, _WHOLE_PIXEL_STEPS)
    if other is not None:
        return _declined(name, f"{other} rounds its int64 boxes as stoker's float32 ones would "
                               "not (stoker reads it natively with flips, zoom-outs, IoU "
                               "crops, the photometric, box and type steps)")
    split = _split(voc, "Main", ".xml")
    if split is None:
        return None
    root, names = split
    categories = sys.modules["torchvision.tv_tensors._dataset_wrapper"].\
        VOC_DETECTION_CATEGORY_TO_IDX

    def write(out):  # checked once: the key names these files as they were then
        for path in voc.targets:
            _check_annotation(voc, path, categories)
        convert("voc", root, out, split=voc.image_set)

    key = _digest("voc", root, "Main", voc.image_set, [
        os.path.join(folder, n + extension) for n in names
        for folder, extension in (("Annotations", ".xml"), ("JPEGImages", ".jpg"))])
    largest = _largest_side(voc.targets)
    grown = grown_side(dataset.transforms, largest)
    if any(type(s).__name__ == "RandomIoUCrop" for s in _flatten(dataset.transforms)) and \
            (grown is None or grown > _EXACT_AREAS_SIDE):
        return _declined(name, f"RandomIoUCrop on images of up to {grown or largest} pixels a "
                               "side: torchvision's int64 areas there are past float32's "
                               f"whole numbers (up to {_EXACT_AREAS_SIDE} read natively)")
    try:
        path = keep_once(key, write)
    except _WrapperFails as e:
        raise ValueError(str(e)) from None
    except (OSError, RuntimeError, ValueError) as e:  # what stoker checks and torchvision not
        return _declined(name, f"stoker's VOC importer refuses it: {e}")
    transforms = with_bound(dataset.transforms, largest)
    native = NativeDataset(path, transforms, {"dataset": [
        f"torchvision's {name} is read natively: its {voc.image_set} split kept once as a "
        f"stoker dataset ({path}), its int64 boxes whole numbers"]})
    native.batch_format, native.form = ("image", "boxes", "labels"), _detection_form(forms, keys)
    return native


def _segmentation(voc, transforms, forms: tuple, name: str, keep_once: Callable):
    """The split of VOCSegmentation `voc` kept once as a ``convert masks`` dataset, read with
    `transforms` and given back as `forms` (image kind, mask kind); with mask kind "v1" (the
    segmentation reference's own preset, which no step in Python follows) only where every
    step runs natively."""
    from PIL import Image
    split = _split(voc, "Segmentation", ".png")
    if split is None:
        return None
    root, names = split
    files = [os.path.join(folder, n + extension) for n in names
             for folder, extension in (("SegmentationClass", ".png"), ("JPEGImages", ".jpg"))]
    key = _digest("voc-segmentation", root, "Segmentation", voc.image_set, files)

    def write(out):
        # The split's pairs in its order: links named by position (the importer's stem order).
        pairs = os.path.join(os.path.dirname(out), "pairs")
        for folder, paths, extension in (("images", voc.images, ".jpg"),
                                         ("masks", voc.masks, ".png")):
            os.makedirs(os.path.join(pairs, folder))
            for k, path in enumerate(paths):
                os.symlink(os.path.abspath(path),
                           os.path.join(pairs, folder, f"{k:09d}{extension}"))
        try:
            convert("masks", os.path.join(pairs, "images"), out,
                    masks=os.path.join(pairs, "masks"))
        except (RuntimeError, ValueError) as e:  # the files it names, not their links
            link = re.escape(pairs) + r"/(images|masks)/(\d{9})\.(?:jpg|png)"
            raise ValueError(re.sub(link, lambda m: getattr(voc, m[1])[int(m[2])],
                                    str(e))) from None

    try:
        path = keep_once(key, write)
    except (OSError, RuntimeError, ValueError) as e:
        return _declined(name, f"stoker's mask importer refuses it: {e}")
    largest = 1
    for image in voc.images:
        with Image.open(image) as pil:
            largest = max(largest, *pil.size)
    kept = f"its {voc.image_set} split kept once"
    if forms[1] == "v1":
        native = kept_natively(path, with_bound(transforms, largest), f"torchvision's {name}",
                               kept)
        if native.source is None:
            return native
    else:
        native = NativeDataset(path, with_bound(transforms, largest), {"dataset": [
            f"torchvision's {name} is read natively: {kept} as a stoker dataset ({path})"]})
    native.batch_format, native.form = ("image", "mask"), segmentation_form(*forms)
    return native


def voc_dataset(dataset, keep_once: Callable) -> Optional[NativeDataset]:
    """A NativeDataset for `dataset` when it is torchvision's VOCDetection or VOCSegmentation
    (not a subclass) as the module's docstring says: read natively, or by its own __getitem__
    with the reason (source None); None for any other dataset. `keep_once(name, write)` gives
    the kept dataset's path (_datasets.py)."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None:
        return None
    voc = wrapped_dataset(dataset)
    if voc is not None and type(voc) is datasets.VOCDetection:
        return _wrapped_detection(dataset, voc, keep_once)
    if voc is not None and type(voc) is datasets.VOCSegmentation:
        name = "VOCSegmentation (wrapped for v2)"
        problem = _wrapped_problem(dataset)
        if problem is not None:
            return _declined(name, problem)
        return _segmentation(voc, dataset.transforms, kinds(dataset.transforms), name,
                             keep_once)
    if type(dataset) is datasets.VOCDetection:
        return _declined("VOCDetection", "its target is the parsed XML (a nested dict of "
                                         f"strings); {_WRAP}")
    if type(dataset) is not datasets.VOCSegmentation:
        return None
    if dataset.transform is None and dataset.target_transform is None and \
            segmentation_v1_preset(_flatten(dataset.transforms)):
        return _segmentation(dataset, dataset.transforms, ("tensor", "v1"), "VOCSegmentation",
                             keep_once)
    forms = kinds(dataset.transforms)
    if forms is None or dataset.transform is not None or dataset.target_transform is not None \
            or _other_step(dataset.transforms, _RAW_MASK_STEPS) is not None \
            or _image_alone(dataset.transforms, ("PILToTensor", "ToPureTensor")) is not None:
        return _declined("VOCSegmentation", "its mask is a PIL image, which v2 transforms take "
                                            "as an image (or, once a plain tensor, leave "
                                            "alone); stoker reads it natively where they only "
                                            "flip the pair, then make tensors of it, and "
                                            "wrapped for v2 (a Mask)")
    return _segmentation(dataset, dataset.transforms, (forms[0], forms[0]), "VOCSegmentation",
                         keep_once)
