"""What the native readings of torchvision's datasets wrapped for its v2 transforms
(``wrap_dataset_for_transforms_v2``) share (_torchvision_coco.py, _torchvision_voc.py): the
wrapper recognised, the image's type after the joint transforms, the image's capacity, and a
digest of the files the kept dataset is made from."""

import math
import os
import sys
from typing import Optional

from stoker._native_dataset import NativeDataset
from stoker.sources import Dataset
from stoker.transforms import Compose, DecodeImage, _flatten, plan_fields


def wrapped_dataset(dataset):
    """The dataset inside `dataset` where `dataset` is torchvision's v2 wrapper with its own
    __getitem__ and the joint ``transforms`` alone (no separate transform or target_transform);
    else None."""
    wrapper = sys.modules.get("torchvision.tv_tensors._dataset_wrapper")
    if wrapper is None or not isinstance(dataset, wrapper.VisionDatasetTVTensorWrapper) or \
            type(dataset).__getitem__ is not wrapper.VisionDatasetTVTensorWrapper.__getitem__ or \
            dataset.transform is not None or dataset.target_transform is not None:
        return None
    return dataset._dataset


def target_keys(dataset, default: tuple) -> frozenset:
    """The wrapper's target keys (`default` where it was given none; "all": none read
    natively)."""
    keys = dataset._target_keys
    return frozenset(default if keys is None else () if isinstance(keys, str) else keys)


def kinds(transforms) -> Optional[tuple]:
    """(image kind, target kind) after `transforms` ("image": tv_tensors.Image, "tensor": a
    plain tensor; the target's tv_tensors (boxes, Mask) "tv" or, after ToPureTensor,
    "tensor"), or None where the image stays a PIL image (or the steps end it as one): stoker
    gives tensors."""
    image, target = "pil", "tv"
    for step in [] if transforms is None else _flatten(transforms):
        name = type(step).__name__
        if name == "ToImage":
            image = "image"
        elif name == "PILToTensor":
            image = "tensor"
        elif name == "ToPureTensor":
            image = target = "tensor"
        elif name == "ToPILImage":
            image = "pil"
    return None if image == "pil" else (image, target)


# Steps that keep the image's size or shrink it, and RandomZoomOut, which grows it by at most
# its side_range's top: after them the largest image is the largest stored one, so grown.
_SIZE_KEEPING = {"ToImage", "PILToTensor", "ToPureTensor", "ToDtype", "Normalize",
                 "RandomHorizontalFlip", "RandomPhotometricDistort", "RandomIoUCrop",
                 "SanitizeBoundingBoxes", "ClampBoundingBoxes", "ConvertBoundingBoxFormat"}


def grown_side(transforms, largest: int) -> Optional[int]:
    """The largest image side `transforms` make from images of at most `largest` pixels a
    side, where only size-keeping steps and zoom-outs run; else None."""
    grown = float(largest)
    for step in [] if transforms is None else _flatten(transforms):
        name = type(step).__name__
        if name == "RandomZoomOut":
            grown *= step.side_range[1]
        elif name not in _SIZE_KEEPING:
            return None
    return math.ceil(grown)


def with_bound(transforms, largest: int):
    """`transforms` led by stoker's DecodeImage sized for grown_side's image; as given where a
    step bounds the output itself (a resize, a fixed-size crop) or stoker bounds it already."""
    grown = grown_side(transforms, largest)
    if grown is None:
        return transforms
    return Compose([DecodeImage(max_size=grown)] + ([] if transforms is None else
                                                    _flatten(transforms)))


def digest_files(digest, root: str, names) -> None:
    """Adds to hashlib `digest` each file's name (under `root`), size and modification time: a
    changed file gives another digest. OSError for a file that is not there."""
    for name in names:
        stat = os.stat(os.path.join(root, name))
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())


def kept_natively(path: str, transforms, name: str, kept: str) -> NativeDataset:
    """The kept dataset at `path` read with `transforms` where every step of them runs
    natively (`kept` saying how `name` was kept); else `name` read by its own __getitem__, the
    notes saying why."""
    try:
        plan_fields(transforms, Dataset(path).open().schema, allow_python=False)
    except ValueError as e:
        return NativeDataset(None, notes={"dataset": [
            f"{name} is read by its own __getitem__: {e}"]})
    return NativeDataset(path, transforms, {"dataset": [
        f"{name} is read natively: {kept} as a stoker dataset ({path})"]})
