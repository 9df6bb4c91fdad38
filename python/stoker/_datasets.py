"""Which datasets stoker reads natively: stoker's own (a path or URL, stoker.Dataset,
ImageFolder, WebDataset, Parquet) and the torchvision datasets it recognises, each as the
native loader's source with its transforms. Anything else is read by its own ``__getitem__``
(_python_dataset.py)."""

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from stoker.sources import ImageFolder, _Source


@dataclass
class NativeDataset:
    """A dataset as the native loader takes it: `source` (a path or a stoker source),
    `transforms` ({field: transform} or one for "image"), `notes` for loader.plan."""

    source: Any
    transforms: Any = None
    notes: dict = field(default_factory=dict)


def _torchvision_image_folder(dataset) -> Optional[NativeDataset]:
    """A torchvision ImageFolder whose samples stoker's own listing of its root gives (same
    files, same classes, same order) and which loads them as ImageFolder does (PIL, RGB):
    read natively, its transform on "image" and target_transform on "label"."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None or not isinstance(dataset, datasets.ImageFolder):
        return None
    folder = datasets.folder
    if type(dataset).__getitem__ is not folder.DatasetFolder.__getitem__ or \
            dataset.loader not in (folder.default_loader, folder.pil_loader):
        return None
    own = ImageFolder(dataset.root, dataset.transform, dataset.target_transform)
    try:
        same = [(os.path.abspath(p), c) for p, c in own.samples] == \
            [(os.path.abspath(p), c) for p, c in dataset.samples]
    except Exception:  # a root stoker cannot list: the dataset's own __getitem__ reads it
        return None
    if not same:
        return None
    return NativeDataset(own, own.transforms, {"dataset": [
        f"torchvision's ImageFolder({dataset.root!r}) is read natively: the same files, "
        "classes and order"]})


def native_dataset(torch, dataset, transforms) -> Optional[NativeDataset]:
    """`dataset` as the native loader reads it, or None where its own __getitem__ must run.
    `transforms`: the loader's transforms keyword (for a path; a source carries its own)."""
    if isinstance(dataset, (str, bytes, os.PathLike)):
        return NativeDataset(dataset, transforms)
    if isinstance(dataset, _Source):
        if transforms is not None and dataset.transforms is not None:
            raise ValueError(f"{dataset!r} has its own transforms: leave out the loader's "
                             "transforms")
        return NativeDataset(dataset, transforms if transforms is not None
                             else dataset.transforms)
    if not (hasattr(dataset, "__getitem__") or hasattr(dataset, "__iter__")):
        raise TypeError(f"dataset must be a path, a stoker dataset or a dataset object (with "
                        f"__getitem__ and __len__, or __iter__), not {type(dataset).__name__}")
    if transforms is not None:
        raise ValueError(f"transforms= is for a dataset stoker reads natively (a path, "
                         f"stoker.Dataset, ...); a {type(dataset).__name__} applies its own")
    return _torchvision_image_folder(dataset)

