"""Which datasets stoker reads natively: stoker's own (a path or URL, stoker.Dataset,
ImageFolder, WebDataset, Parquet, Arrow) and the torchvision, webdataset and Hugging Face
datasets it recognises, each as the native loader's source with its transforms. Anything else
is read by its own ``__getitem__`` (_python_dataset.py)."""

import hashlib
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from typing import Optional

import numpy as np

from stoker._coco_segmentation import reference_coco_segmentation
from stoker._hugging_face import hugging_face_dataset
from stoker._native_dataset import NativeDataset
from stoker._torchvision_coco import reference_coco_detection, wrapped_coco_detection
from stoker._torchvision_samples import classification_form
from stoker._torchvision_voc import voc_dataset
from stoker._webdataset_pipeline import recognised_webdataset
from stoker.sources import Dataset, ImageFolder, _Source
from stoker.transforms import _flatten, plan_fields


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
    if _nothing_native(own.transforms, own.fields, dataset.transform):
        return NativeDataset(None, notes={"dataset": [
            f"torchvision's ImageFolder({dataset.root!r}) runs its own __getitem__: its "
            f"transform starts with {type(_flatten(dataset.transform)[0]).__name__}, which "
            f"stoker cannot run natively, so none of it would (and images of any size load)"]})
    return NativeDataset(own, own.transforms, {"dataset": [
        f"torchvision's ImageFolder({dataset.root!r}) is read natively: the same files, "
        "classes and order"]}, form=classification_form(dataset), collated=False,
        torchvision_steps=True)


def _nothing_native(transforms, schema, transform) -> bool:
    """Whether none of a torchvision dataset's `transform` (given) would run natively: its
    first step is one stoker cannot translate, so its own __getitem__ does all of it as well,
    with no bound on the images' size (a native decode's buffers need one)."""
    if transform is None:
        return False
    try:
        python = plan_fields(transforms, schema).python.get("image", [])
    except ValueError:  # the loader says it in one line
        return False
    return len(python) == len(_flatten(transform))


def arrays_cache_root() -> str:
    """Where in-memory datasets are kept as stoker datasets: $STOKER_CACHE/arrays, else
    $XDG_CACHE_HOME/stoker/arrays, else ~/.cache/stoker/arrays."""
    root = os.environ.get("STOKER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "stoker")
    return os.path.join(root, "arrays")


def _kept_once(name: str, write) -> str:
    """The path of the stoker dataset `name` in the arrays cache: made once by `write(out)`
    (into a temporary folder, then renamed into place, so that a crash leaves nothing
    half-written), found again by every later loader."""
    path = os.path.join(arrays_cache_root(), name)
    if os.path.exists(os.path.join(path, "manifest.json")):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    scratch = tempfile.mkdtemp(dir=os.path.dirname(path), prefix=".writing-")
    try:
        write(os.path.join(scratch, "ds"))
        os.rename(os.path.join(scratch, "ds"), path)
    except OSError:  # another process put the same dataset there first
        if not os.path.exists(os.path.join(path, "manifest.json")):
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return path


def _stored_arrays(images: np.ndarray, labels: np.ndarray, classes: list) -> str:
    """A stoker dataset of `images` (uint8 [N, C, H, W]) and `labels` (int64 [N]) kept once,
    named by a digest of their bytes."""
    from stoker.bulk_write import write_dataset

    digest = hashlib.sha256()
    for array in (images, labels):
        digest.update(str((array.dtype, array.shape)).encode())
        digest.update(np.ascontiguousarray(array).data)
    return _kept_once(digest.hexdigest()[:24], lambda out: write_dataset(
        out, {"image": images, "label": labels},
        class_names=list(classes) or None, workers=0, progress=False))


def _torchvision_arrays(dataset) -> Optional[NativeDataset]:
    """torchvision's CIFAR10/100 and MNIST family (MNIST, FashionMNIST, KMNIST), whose images
    sit in memory as uint8 arrays and reach their transform as PIL images: kept once as a
    stoker dataset (the arrays cache) and read natively, the transform translated, in the
    dataset's order."""
    datasets = sys.modules.get("torchvision.datasets")
    if datasets is None:
        return None
    base = next((kind for kind in (datasets.CIFAR10, datasets.MNIST)
                 if isinstance(dataset, kind)), None)
    if base is None or type(dataset).__getitem__ is not base.__getitem__:
        return None
    images = np.asarray(dataset.data)
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        return None
    images = images[:, None] if images.ndim == 3 else images.transpose(0, 3, 1, 2)
    labels = np.asarray(dataset.targets, dtype=np.int64)
    transforms = {} if dataset.transform is None else {"image": dataset.transform}
    if dataset.target_transform is not None:
        transforms["label"] = dataset.target_transform
    path = _stored_arrays(images, labels, getattr(dataset, "classes", []))
    name = type(dataset).__name__
    return NativeDataset(Dataset(path), transforms or None, {"dataset": [
        f"torchvision's {name} is read natively: its arrays kept once as a stoker dataset "
        f"({path})"]}, form=classification_form(dataset), collated=False,
        torchvision_steps=True)


def native_dataset(torch, dataset, transforms) -> Optional[NativeDataset]:
    """`dataset` as the native loader reads it, or None where its own __getitem__ must run
    (or a NativeDataset of source None whose notes say why: a dataset stoker recognises).
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
    if isinstance(dataset, torch.utils.data.Subset):
        inner = native_dataset(torch, dataset.dataset, None)
        if inner is None or inner.subset is not None or inner.source is None:
            return None if inner is None or inner.source is not None else inner
        notes = {"dataset": inner.notes.get("dataset", []) + [
            f"a Subset of {len(dataset.indices)} of its samples, read as explicit epochs"]}
        return replace(inner, notes=notes, subset=list(dataset.indices))
    return _torchvision_image_folder(dataset) or _torchvision_arrays(dataset) or \
        wrapped_coco_detection(dataset, _kept_once) or \
        reference_coco_detection(dataset, _kept_once) or \
        reference_coco_segmentation(dataset, _kept_once) or voc_dataset(dataset, _kept_once) or \
        recognised_webdataset(dataset) or hugging_face_dataset(dataset, arrays_cache_root())

