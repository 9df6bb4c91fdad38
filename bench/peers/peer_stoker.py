"""stoker: `stoker.convert("imagefolder")` stores the files (JPEGs transcoded losslessly, the
same pixels), `stoker.Loader` decodes and augments in its native threads. Two modes: the exact
default (torchvision's PIL pixels) and the fast mode (`dct_scaling=True`: JPEGs decoded at 1/2 or
1/4 scale when the crop still covers the output)."""
import os

import stoker
from stoker import transforms as S

import recipes
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
    classes = len(stoker.Loader(store, batch_size=1, transforms={"image": None}).dataset.classes)
    return stoker.Loader(store, batch_size=recipes.BATCH, shuffle=True, seed=seed,
                         workers=cores, transforms=transform, batch_format=("image", "label"),
                         last_batch="drop", batch_transform=recipes.batch_mix(w, classes))


def recipe_batches(store, cores, w, seed):
    yield from _recipe_loader(store, cores, seed, w)


def recipe_note(store, w):
    """The steps stoker runs in Python (loader.plan), for the table."""
    python = [step.split("(")[0] for steps in _recipe_loader(store, 1, 0, w).plan.values()
              for step, where in steps if where != "native"]
    return ("loader.plan in Python: " + ", ".join(python) if python else
            "loader.plan: every step native")


def eval_images(store, fast=False):
    """The evaluation transform of every record, in the ImageFolder order of the files."""
    ops = [S.Resize(work.EVAL_RESIZE, dct_scaling=fast), S.CenterCrop(work.SIZE)]
    for batch in _loader(store, 1, 0, ops, shuffle=False, batch=64):
        yield from batch["image"]
