"""Which torchvision backend each native operation's pixels equal (the registry's "backend":
"pil", "tensor" or "both"), checked against torchvision itself: every class stoker translates
runs on a PIL image and on the uint8 tensor of the same image with the same torch seed. Where
the registry says "both", the two backends' pixels must be equal for every seed; where it names
one, they must differ for some seed (else it would be "both"). That the operation equals the
backend it names is each operation's own exactness test (src/stoker/pipeline/ops/*_test.cc).
This table is what keeps the translation's routing (transforms._split) honest."""

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
import torchvision.transforms.v2 as T2
from PIL import Image

from stoker import _stoker

SEEDS = range(12)

# Every pixel operation stoker translates, by its native name: torchvision transforms with
# parameters that switch every part of it on.
CASES = {
    "color_jitter": [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ColorJitter(contrast=0.5),
                     T.ColorJitter(saturation=0.5), T.ColorJitter(hue=0.2)],
    "random_grayscale": [T.RandomGrayscale(1.0)],
    "random_horizontal_flip": [T.RandomHorizontalFlip(), T2.RandomHorizontalFlip()],
    "random_vertical_flip": [T.RandomVerticalFlip(), T2.RandomVerticalFlip()],
    "random_invert": [T.RandomInvert(), T2.RandomInvert()],
    "random_posterize": [T.RandomPosterize(3), T2.RandomPosterize(2)],
    "random_solarize": [T.RandomSolarize(100), T2.RandomSolarize(128.5)],
    "random_adjust_sharpness": [T.RandomAdjustSharpness(2.0, p=1.0),
                                T.RandomAdjustSharpness(0.3, p=1.0)],
    "random_autocontrast": [T.RandomAutocontrast(p=1.0), T2.RandomAutocontrast(p=1.0)],
    "random_equalize": [T.RandomEqualize(p=1.0)],
    "random_crop": [T.RandomCrop(20, padding=4), T.RandomCrop(20, padding=3,
                                                              padding_mode="reflect"),
                    T2.RandomCrop(40, pad_if_needed=True, padding_mode="edge")],
    "trivial_augment_wide": [T.TrivialAugmentWide(), T2.TrivialAugmentWide()],
    "rand_augment": [T.RandAugment(), T2.RandAugment()],
    "auto_augment": [T.AutoAugment(), T2.AutoAugment()],
    "augmix": [T.AugMix(), T2.AugMix()],
}

# The sources: the PIL backend resamples with PIL's filters, the tensor backend with torch's.
SOURCE_CASES = {
    "random_resized_crop": [T.RandomResizedCrop(24)],
    "center_crop": [T.Compose([T.Resize(24), T.CenterCrop(20)])],
    "resize": [T.Resize(24)],
}


@pytest.fixture(scope="module")
def picture():
    """A 37 x 31 RGB image of random pixels from 12 to 240 (autocontrast stretches them), as PIL
    and as the uint8 tensor [3, H, W]."""
    pixels = np.random.default_rng(47).integers(12, 241, (31, 37, 3), dtype=np.uint8)
    pil = Image.fromarray(pixels)
    return pil, F.pil_to_tensor(pil)


def backends():
    return {op["name"]: op["backend"] for op in _stoker.operations()}


def equal_on_both(transform, picture) -> bool:
    pil, tensor = picture
    for seed in SEEDS:
        torch.manual_seed(seed)
        from_pil = F.pil_to_tensor(transform(pil))
        torch.manual_seed(seed)
        from_tensor = transform(tensor)
        if not torch.equal(from_pil, from_tensor):
            return False
    return True


def test_every_operation_declares_a_backend():
    assert {name: backend for name, backend in backends().items()
            if backend not in ("pil", "tensor", "both")} == {}


@pytest.mark.parametrize("name", sorted({**CASES, **SOURCE_CASES}))
def test_declared_backend_is_torchvision_s(name, picture):
    declared = backends()[name]
    cases = {**CASES, **SOURCE_CASES}[name]
    same = [equal_on_both(transform, picture) for transform in cases]
    if declared == "both":
        assert all(same), f"{name} says both backends, but torchvision's differ: {cases}"
    else:
        assert not all(same), f"{name} says {declared} only, but torchvision's backends agree"


def test_every_translated_pixel_operation_is_checked():
    pixel = {op["name"] for op in _stoker.operations() if op["role"] == "pixel"
             and not op["name"].startswith("timm_") and op["name"] not in ("random_apply",
                                                                         "random_choice")}
    assert pixel == set(CASES)
