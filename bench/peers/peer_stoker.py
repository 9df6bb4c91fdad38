"""stoker: `stoker.convert("imagefolder")` stores the files (JPEGs transcoded losslessly, the
same pixels), `stoker.Loader` decodes and augments in its native threads. Two modes: the exact
default (torchvision's PIL pixels) and the fast mode (`dct_scaling=True`: JPEGs decoded at 1/2 or
1/4 scale when the crop still covers the output). The detection works: `stoker.convert("coco")`
of the reference's train split, the reference's preset object as the Loader's transforms."""
import os

import stoker
from stoker import transforms as S
from torchvision.transforms import v2

import detection
import recipes
import segmentation
import work


def prepare(folder, files, store, max_side=None):
    os.makedirs(os.path.dirname(store), exist_ok=True)
    stoker.convert("imagefolder", folder, store, **({"max_side": max_side} if max_side else {}))


def _loader(store, cores, seed, transforms, shuffle=True, batch=work.BATCH, prefetch=None):
    return stoker.Loader(store, batch_size=batch, shuffle=shuffle, seed=seed, workers=cores,
                         prefetch=prefetch, transforms={"image": S.Compose(transforms)},
                         batch_format="dict")


def train_batches(store, cores, dtype, seed, fast, prefetch=None):
    """The training batches; `prefetch` as stoker.Loader's (None: its default)."""
    ops = [S.RandomResizedCrop(work.SIZE, scale=work.SCALE, ratio=work.RATIO, dct_scaling=fast),
           S.RandomHorizontalFlip()]
    if dtype == "float32":
        ops += [S.ToTensor(), S.Normalize(work.MEAN, work.STD)]
    for batch in _loader(store, cores, seed, ops, prefetch=prefetch):
        yield batch["image"], batch["label"]


def batches(store, cores, dtype, seed):
    return train_batches(store, cores, dtype, seed, fast=False)


def _recipe_loader(store, cores, seed, w):
    """The recipe's own transform object as stoker.Loader takes it (recipe: the reference's v1
    preset; timm-ra: timm's create_transform), the batch step as its batch_transform; what it
    cannot run natively runs in Python."""
    if w.name == "recipe":
        from torchvision import transforms as T
        transform = recipes.torchvision_transform(w, T)
    else:
        from timm.data import create_transform
        transform = create_transform(w.size, **recipes.timm_transform_args(w))
    classes = len(stoker.Loader(store, shuffle=True, batch_size=1, transforms={"image": None}).dataset.classes)
    return stoker.Loader(store, batch_size=recipes.BATCH, shuffle=True, seed=seed,
                         workers=cores, transforms=transform, batch_format=("image", "label"),
                         last_batch="drop", batch_transform=recipes.batch_mix(w, classes))


def recipe_batches(store, cores, w, seed):
    yield from _recipe_loader(store, cores, seed, w)


def _plan_note(loader):
    """The steps `loader` runs in Python (loader.plan), for the table."""
    python = [step.split("(")[0] for steps in loader.plan.values()
              for step, where in steps if where != "native"]
    return ("loader.plan in Python: " + ", ".join(python) if python else
            "loader.plan: every step native")


def recipe_note(store, w):
    return _plan_note(_recipe_loader(store, 1, 0, w))


def prepare_coco(folder, store):
    """`stoker convert coco` of the set's train split (detection.write_set's, kept beside)."""
    detection.write_set(folder, store)
    coco = detection.read_set(store)
    stoker.convert("coco", coco["images"], os.path.join(store, "dataset"),
                   annotations=coco["annotations"])


def _detection_loader(store, cores, seed, w):
    """The work's preset object as stoker.Loader's transforms, DecodeImage first for the
    image's capacity (the set's largest side, or the work's size if larger: lsj's canvas);
    the stored fields the reference's targets leave out (masks, area, iscrowd) left out."""
    coco = detection.read_set(store)
    preset = v2.Compose([S.DecodeImage(max_size=max(coco["largest_side"], w.size or 0)),
                         detection.preset(w)])
    return stoker.Loader(os.path.join(store, "dataset"), batch_size=detection.BATCH,
                         shuffle=True, seed=seed, workers=cores, prefetch=2,
                         transforms={"image": preset, "masks": None, "area": None,
                                     "iscrowd": None},
                         batch_format=("image", "boxes", "labels", "image_id"),
                         variable="list", last_batch="drop")


def detection_batches(store, cores, w, seed):
    """(images, targets) as the reference's collate_fn gives them."""
    for images, boxes, labels, ids in _detection_loader(store, cores, seed, w):
        yield images, [{"boxes": b, "labels": l, "image_id": i}
                       for b, l, i in zip(boxes, labels, ids.tolist())]


def detection_note(store, w):
    return _plan_note(_detection_loader(store, 1, 0, w))


def prepare_voc(folder, store):
    """`stoker convert masks` of the split's pairs (linked into two folders for it) into
    STORE/dataset; STORE/set.json the largest side an image reaches (segmentation.largest)."""
    import json
    import tempfile
    pairs = segmentation.split(folder)
    with tempfile.TemporaryDirectory() as linked:
        for sub in ("images", "masks"):
            os.makedirs(os.path.join(linked, sub))
        for image, mask in pairs:
            os.symlink(image, os.path.join(linked, "images", os.path.basename(image)))
            os.symlink(mask, os.path.join(linked, "masks", os.path.basename(mask)))
        stoker.convert("masks", os.path.join(linked, "images"), os.path.join(store, "dataset"),
                       masks=os.path.join(linked, "masks"))
    with open(os.path.join(store, "set.json"), "w") as f:
        json.dump({"largest_side": segmentation.largest(image for image, _ in pairs)}, f)


def _segmentation_loader(store, cores, seed, w):
    """The preset object as stoker.Loader's transforms, DecodeImage first for the image's
    capacity."""
    preset = v2.Compose([S.DecodeImage(max_size=detection.read_set(store)["largest_side"]),
                         segmentation.preset(w)])
    return stoker.Loader(os.path.join(store, "dataset"), batch_size=segmentation.BATCH,
                         shuffle=True, seed=seed, workers=cores, prefetch=2, transforms=preset,
                         batch_format=("image", "mask"), variable="list", last_batch="drop")


def segmentation_batches(store, cores, w, seed):
    """The batches as the reference's collate_fn gives them (every crop is the same size)."""
    import torch
    for images, masks in _segmentation_loader(store, cores, seed, w):
        yield torch.stack(images), torch.stack(masks)


def segmentation_note(store, w):
    return _plan_note(_segmentation_loader(store, 1, 0, w))


def eval_images(store, fast=False):
    """The evaluation transform of every record, in the ImageFolder order of the files."""
    ops = [S.Resize(work.EVAL_RESIZE, dct_scaling=fast), S.CenterCrop(work.SIZE)]
    for batch in _loader(store, 1, 0, ops, shuffle=False, batch=64):
        yield from batch["image"]
