"""The recipes' training work of the side-by-side benchmark (run.py --pipeline recipe or
timm-ra), beside the textbook work of work.py: float32 out, soft targets from MixUp/CutMix on
the batch, batches of BATCH (the last partial batch dropped: timm's Mixup needs whole pairs).

  recipe   torchvision's ResNet-50 v2 recipe (its classification reference, `--auto-augment
           ta_wide --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1.0
           --train-crop-size 176 --batch-size 128`): RandomResizedCrop(176) + flip +
           TrivialAugmentWide + float + Normalize + RandomErasing(0.1), then a RandomChoice of
           v2.MixUp(0.2) and v2.CutMix(1.0) on the batch (label smoothing is in its loss).
  timm-ra  timm's create_transform as DeiT's and ConvNeXt's training scripts call it by
           default, the configuration that names rand-m9-mstd0.5-inc1: 224, bicubic,
           RandAugment rand-m9-mstd0.5-inc1, Normalize, RandomErasing(0.25, mode "pixel"),
           then timm's Mixup(mixup 0.8, cutmix 1.0, switch 0.5, label smoothing 0.1).

What each peer runs (its own classes, or its closest equivalent) is in its file; the pieces
several peers share are here.
"""
import os

import work

BATCH = int(os.environ.get("STOKER_PEERS_BATCH", "128"))  # the reference's --batch-size


class Work:
    def __init__(self, name, size, interpolation, erase_p, mixup, cutmix, smoothing):
        self.name, self.size, self.interpolation = name, size, interpolation
        self.erase_p, self.mixup, self.cutmix, self.smoothing = erase_p, mixup, cutmix, smoothing


WORKS = {
    "recipe": Work("recipe", 176, "bilinear", erase_p=0.1, mixup=0.2, cutmix=1.0, smoothing=0.0),
    "timm-ra": Work("timm-ra", 224, "bicubic", erase_p=0.25, mixup=0.8, cutmix=1.0,
                    smoothing=0.1),
}
TIMM_RA = "rand-m9-mstd0.5-inc1"
# timm's closest to TrivialAugmentWide: one op per image, always applied, its magnitude uniform
# in timm's whole range (mstd > 100); timm's op set (no Identity, SolarizeAdd among them).
TIMM_TRIVIAL = "rand-n1-m10-mstd101-p1"


def num_classes(files):
    return max(label for _, label in files) + 1


def torchvision_transform(w, T):
    """The work's per-sample transform with torchvision's classes, `T` transforms (v1, on PIL
    images) or transforms.v2 (on uint8 tensors). recipe: the reference's preset exactly;
    timm-ra: torchvision's closest, RandAugment(2 ops, magnitude 9 of 11 bins as timm's 9 of
    10; each op always applied, where timm's applies each with p 0.5; no magnitude noise) and
    RandomErasing(value="random", timm's "pixel")."""
    import torch
    interpolation = T.InterpolationMode.BICUBIC if w.interpolation == "bicubic" else \
        T.InterpolationMode.BILINEAR
    ops = [T.RandomResizedCrop(w.size, interpolation=interpolation, antialias=True),
           T.RandomHorizontalFlip()]
    if w.name == "recipe":
        ops.append(T.TrivialAugmentWide())
    else:
        ops.append(T.RandAugment(num_ops=2, magnitude=9, num_magnitude_bins=11))
    if hasattr(T, "ToDtype"):  # v2, on tensors
        ops.append(T.ToDtype(torch.float32, scale=True))
    else:
        ops += [T.PILToTensor(), T.ConvertImageDtype(torch.float32)]
    ops.append(T.Normalize(work.MEAN, work.STD))
    ops.append(T.RandomErasing(w.erase_p, value=0 if w.name == "recipe" else "random"))
    return T.Compose(ops)


def timm_transform_args(w):
    """timm's create_transform (and create_loader) arguments for the work. recipe: timm's
    closest (TIMM_TRIVIAL for TrivialAugmentWide; RandomErasing "const", zeros)."""
    return dict(is_training=True, hflip=0.5, interpolation=w.interpolation,
                auto_augment=TIMM_RA if w.name == "timm-ra" else TIMM_TRIVIAL,
                mean=work.MEAN, std=work.STD, re_prob=w.erase_p,
                re_mode="pixel" if w.name == "timm-ra" else "const", re_count=1)


def timm_mix(w, classes):
    """timm's Mixup for the work (mode "batch": one draw per batch, as torchvision's)."""
    from timm.data import Mixup
    return Mixup(mixup_alpha=w.mixup, cutmix_alpha=w.cutmix, prob=1.0, switch_prob=0.5,
                 mode="batch", label_smoothing=w.smoothing, num_classes=classes)


def batch_mix(w, classes):
    """The work's batch step, (images, labels) -> (images, soft targets): recipe the
    reference's v2 RandomChoice of MixUp and CutMix, timm-ra timm's Mixup."""
    if w.name == "timm-ra":
        return timm_mix(w, classes)
    from torchvision.transforms import v2
    return v2.RandomChoice([v2.MixUp(alpha=w.mixup, num_classes=classes),
                            v2.CutMix(alpha=w.cutmix, num_classes=classes)])
