"""The segmentation reference's v1 presets (presets.py's SegmentationPresetTrain/Eval with
use_v2=False, references/segmentation/transforms.py, which torchvision does not install, written
here by their definition with torchvision's kernels) on torchvision's VOCSegmentation, read
natively by stoker.Loader: each sample equals the reference's for stoker's draws (the resize's
random.randint, the flip's random.random, the crop's torch.randint): the image resized by PIL's
bilinear, the PIL mask by PIL's NEAREST, both padded right and bottom and cut, the mask int64
[H, W]."""

import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import InterpolationMode, RandomCrop as TorchvisionRandomCrop
from torchvision.transforms import functional as F

import stoker

from sample_draws import SampleDraws
from test_dataloader_contract import same
from test_voc_datasets import MEAN, STD

SEED = 7


# The reference's own classes, by their definition -------------------------------------------


def pad_if_smaller(image, size, fill=0):
    width, height = image.size
    if min(width, height) < size:
        image = F.pad(image, (0, 0, max(size - width, 0), max(size - height, 0)), fill=fill)
    return image


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image, target):
        for step in self.transforms:
            image, target = step(image, target)
        return image, target


class RandomResize:
    def __init__(self, min_size, max_size=None):
        self.min_size, self.max_size = min_size, min_size if max_size is None else max_size

    def __call__(self, image, target):
        size = random.randint(self.min_size, self.max_size)
        return (F.resize(image, size, antialias=True),
                F.resize(target, size, interpolation=InterpolationMode.NEAREST))


class RandomHorizontalFlip:
    def __init__(self, flip_prob=0.5):
        self.flip_prob = flip_prob

    def __call__(self, image, target):
        if random.random() < self.flip_prob:
            return F.hflip(image), F.hflip(target)
        return image, target


class RandomCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image, target):
        image = pad_if_smaller(image, self.size)
        target = pad_if_smaller(target, self.size, fill=255)
        box = TorchvisionRandomCrop.get_params(image, (self.size, self.size))
        return F.crop(image, *box), F.crop(target, *box)


class PILToTensor:
    def __call__(self, image, target):
        return F.pil_to_tensor(image), torch.as_tensor(np.array(target), dtype=torch.int64)


class ToDtype:
    def __init__(self, dtype, scale=False):
        self.dtype, self.scale = dtype, scale

    def __call__(self, image, target):
        if not self.scale:
            return image.to(dtype=self.dtype), target
        return F.convert_image_dtype(image, self.dtype), target


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, image, target):
        return F.normalize(image, mean=self.mean, std=self.std), target


class SegmentationPresetTrain:
    def __init__(self, *, base_size, crop_size, hflip_prob=0.5, mean=MEAN, std=STD):
        steps = [RandomResize(min_size=int(0.5 * base_size), max_size=int(2.0 * base_size))]
        if hflip_prob > 0:
            steps.append(RandomHorizontalFlip(hflip_prob))
        self.transforms = Compose(steps + [RandomCrop(crop_size), PILToTensor(),
                                           ToDtype(torch.float, scale=True),
                                           Normalize(mean=mean, std=std)])

    def __call__(self, image, target):
        return self.transforms(image, target)


class SegmentationPresetEval:
    def __init__(self, *, base_size, mean=MEAN, std=STD):
        self.transforms = Compose([RandomResize(min_size=base_size, max_size=base_size),
                                   PILToTensor(), ToDtype(torch.float, scale=True),
                                   Normalize(mean=mean, std=std)])

    def __call__(self, image, target):
        return self.transforms(image, target)


# The tests ----------------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))


class StokersDraws:
    """Sample `index`'s draws (sample_draws.py) as the reference asks for them: the resize's
    random.randint(a, b) a + uniform_below(b - a + 1) of joint step 1, the flip's random.random()
    step 2's next_double(), the crop's torch.randint(0, n) uniform_below(n) of step 4 where
    n > 1 (0 without a draw where the side is the crop's)."""

    def __init__(self, index):
        self.resize, self.flip, self.crop = (SampleDraws(SEED, 0, index, step)
                                             for step in (1, 2, 4))

    def __enter__(self):
        self.saved = random.randint, random.random, torch.randint
        random.randint = lambda a, b: a + self.resize.uniform_below(b - a + 1)
        random.random = self.flip.next_double
        torch.randint = lambda low, high, size=None, **kwargs: torch.tensor(
            [self.crop.uniform_below(high) if high > 1 else 0])

    def __exit__(self, *exc):
        random.randint, random.random, torch.randint = self.saved


@pytest.mark.parametrize("image_set, preset, pads", [
    ("train", SegmentationPresetTrain(base_size=40, crop_size=48), True),
    ("train", SegmentationPresetTrain(base_size=40, crop_size=24), False),
    ("val", SegmentationPresetEval(base_size=40), False)])
def test_the_v1_presets_are_the_references_for_stokers_draws(voc_root, cache, image_set,
                                                              preset, pads):
    """Natively, no step in Python; each sample the reference's for stoker's draws: resized
    (several sizes), flipped or not, padded (crop 48 over short sides of 20 to 80) or cut."""
    dataset = datasets.VOCSegmentation(voc_root, image_set=image_set, transforms=preset)
    loader = stoker.Loader(dataset, batch_size=None, order=stoker.Order(seed=SEED))
    note = loader.plan["notes"]["dataset"][0]
    assert note.startswith("torchvision's VOCSegmentation is read natively"), note
    assert all(step[1] == "native" for step in loader.plan["image"])
    sizes, padded = set(), 0
    for index, ours in enumerate(loader):
        with StokersDraws(index):
            want = dataset[index]
        same(ours, list(want))  # DataLoader's batch_size=None: a sequence sample as a list
        assert want[1].dtype == torch.int64 and want[1].ndim == 2
        sizes.add(tuple(want[1].shape))
        padded += bool((want[1] == 255).all(dim=0).any())
    assert index + 1 == len(dataset) > 4
    assert len(sizes) > 1 or image_set == "train"
    assert (padded > 0) == pads


def test_dataloader_batches_of_the_v1_eval_preset(voc_root, cache):
    """The eval preset draws nothing that matters (one size): stoker's batches of one are
    DataLoader's."""
    dataset = datasets.VOCSegmentation(voc_root, image_set="val",
                                       transforms=SegmentationPresetEval(base_size=32))
    for ours, theirs in zip(stoker.Loader(dataset, batch_size=1), DataLoader(dataset,
                                                                             batch_size=1),
                            strict=True):
        same(ours, theirs)
