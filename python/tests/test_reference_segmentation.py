"""The segmentation reference's datasets and presets read natively by stoker.Loader, each sample
the reference's for stoker's draws: its v1 presets (presets.py with use_v2=False,
references/segmentation/transforms.py, which torchvision does not install, written here by
their definition with torchvision's kernels) on torchvision's VOCSegmentation and on its COCO
dataset (coco_utils.get_coco: CocoDetection with its own FilterAndRemapCocoCategories and
ConvertCocoPolysToMask), and with use_v2=True that COCO dataset wrapped, its
CocoDetectionToVOCSegmentation and the v2 preset. The draws: the resize's random.randint (v2:
torch.randint), the flip's random.random (torch.rand), the crop's torch.randint; the image
resized by PIL's bilinear, v1's PIL mask by PIL's NEAREST, both padded right and bottom and
cut, the mask int64 [H, W]."""

import copy
import json
import random
import shutil

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import InterpolationMode, RandomCrop as TorchvisionRandomCrop
from torchvision.transforms import functional as F

import stoker

from detection_reference_v1 import Compose
from sample_draws import SampleDraws
from test_dataloader_contract import same
from test_reference_v1_detection import plain_counts
from test_voc_datasets import MEAN, STD

SEED = 7


# The reference's own classes, by their definition -------------------------------------------


def pad_if_smaller(image, size, fill=0):
    width, height = image.size
    if min(width, height) < size:
        image = F.pad(image, (0, 0, max(size - width, 0), max(size - height, 0)), fill=fill)
    return image


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


class FilterAndRemapCocoCategories:
    def __init__(self, categories, remap=True):
        self.categories, self.remap = categories, remap

    def __call__(self, image, anno):
        anno = [obj for obj in anno if obj["category_id"] in self.categories]
        if not self.remap:
            return image, anno
        anno = copy.deepcopy(anno)
        for obj in anno:
            obj["category_id"] = self.categories.index(obj["category_id"])
        return image, anno


class ConvertCocoPolysToMask:
    """Each object's mask (pycocotools) times its category, the largest where they overlap,
    255 where two or more do; a PIL image."""

    def __call__(self, image, anno):
        from pycocotools import mask as coco_mask
        from PIL import Image

        width, height = image.size
        if not anno:
            return image, Image.fromarray(np.zeros((height, width), dtype=np.uint8))
        masks = []
        for obj in anno:
            mask = coco_mask.decode(coco_mask.frPyObjects(obj["segmentation"], height, width))
            mask = torch.as_tensor(mask if mask.ndim == 3 else mask[..., None],
                                   dtype=torch.uint8)
            masks.append(mask.any(dim=2))
        masks = torch.stack(masks)
        cats = torch.as_tensor([obj["category_id"] for obj in anno], dtype=masks.dtype)
        target, _ = (masks * cats[:, None, None]).max(dim=0)
        target[masks.sum(0) > 1] = 255
        return image, Image.fromarray(target.numpy())


CAT_LIST = [0, 5, 2, 16, 9, 44, 6, 3, 17, 62, 21, 67, 18, 19, 4, 1, 64, 20, 63, 7, 72]


def get_coco(root, train, transforms):
    """The reference's get_coco(use_v2=False): the training set the images whose kept objects
    cover more than 1,000 pixels."""
    dataset = datasets.CocoDetection(
        root / "images", root / "annotations" / "instances.json",
        transforms=Compose([FilterAndRemapCocoCategories(CAT_LIST, remap=True),
                            ConvertCocoPolysToMask(), transforms]))
    if not train:
        return dataset
    keep = [k for k, image_id in enumerate(dataset.ids)
            if sum(a["area"] for a in dataset.coco.loadAnns(dataset.coco.getAnnIds(
                imgIds=image_id)) if a["category_id"] in CAT_LIST) > 1000]
    return torch.utils.data.Subset(dataset, keep)


# The tests ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def coco_root(coco_set, tmp_path_factory):
    """The COCO-shaped set, its compact counts made plain (pycocotools' frPyObjects, which the
    reference calls, takes plain ones only)."""
    root = tmp_path_factory.mktemp("segmentation") / "set"
    shutil.copytree(coco_set, root)
    path = root / "annotations" / "instances.json"
    data = json.loads(path.read_text())
    for a in data["annotations"]:
        if isinstance(a["segmentation"], dict) and isinstance(a["segmentation"]["counts"], str):
            a["segmentation"]["counts"] = plain_counts(a["segmentation"])
    path.write_text(json.dumps(data))
    return root


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))


class StokersDraws:
    """Sample `index`'s draws (sample_draws.py) as the reference asks for them, v1 or v2: the
    resize's random.randint(a, b) a + uniform_below(b - a + 1) (v2's torch.randint(low, high)
    low + uniform_below(high - low)) of joint step 1; the flip's random.random() (v2's
    torch.rand(1)) step 2's next_double(); the crop's torch.randint(0, n) uniform_below(n) of
    step 4 where n > 1 (0 without a draw where the side is the crop's)."""

    def __init__(self, index):
        self.resize, self.flip, self.crop = (SampleDraws(SEED, 0, index, step)
                                             for step in (1, 2, 4))

    def randint(self, low, high, size=None, **kwargs):
        if low > 0:
            return torch.tensor([low + self.resize.uniform_below(high - low)])
        return torch.tensor([self.crop.uniform_below(high) if high > 1 else 0])

    def __enter__(self):
        self.saved = random.randint, random.random, torch.randint, torch.rand
        random.randint = lambda a, b: a + self.resize.uniform_below(b - a + 1)
        random.random = self.flip.next_double
        torch.randint = self.randint
        torch.rand = lambda *size, **kwargs: torch.tensor([self.flip.next_double()])

    def __exit__(self, *exc):
        random.randint, random.random, torch.randint, torch.rand = self.saved


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


def classes_equal_to_the_references(loader, dataset) -> set:
    """Checks that every sample of `loader` is `dataset`'s (a Subset's: its dataset's at its
    index) for stoker's draws, every sample once; returns the classes their masks hold."""
    coco, indices = (dataset.dataset, dataset.indices) if \
        isinstance(dataset, torch.utils.data.Subset) else (dataset, range(len(dataset)))
    classes, count = set(), 0
    for index, ours in zip(indices, loader, strict=True):
        with StokersDraws(index):
            want = coco[index]
        same(ours, list(want))
        classes |= set(want[1].unique().tolist())
        count += 1
    assert count == len(dataset) > 4
    return classes


@pytest.mark.parametrize("train, preset", [
    (True, SegmentationPresetTrain(base_size=160, crop_size=200)),
    (False, SegmentationPresetEval(base_size=120))])
def test_the_references_coco_dataset_is_read_natively(coco_root, cache, train, preset):
    """get_coco(use_v2=False) with the v1 presets: its class maps kept once, each sample the
    reference's for stoker's draws (the training set a Subset)."""
    dataset = get_coco(coco_root, train, preset)
    loader = stoker.Loader(dataset, batch_size=None, order=stoker.Order(seed=SEED))
    note = " ".join(loader.plan["notes"]["dataset"])
    assert "segmentation reference's COCO dataset (v1) is read natively" in note, note
    assert all(step[1] == "native" for step in loader.plan["image"])
    classes = classes_equal_to_the_references(loader, dataset)
    assert len(classes - {0, 255}) > 2 and 255 in classes


def test_a_coco_preset_stoker_does_not_run_is_the_datasets_own_getitem(coco_root, cache):
    """A v1 preset with a step stoker does not run natively (the reference's ToDtype without
    scale): its own __getitem__, loader.plan saying why, DataLoader's batches."""
    dataset = get_coco(coco_root, False, Compose([PILToTensor(),
                                                  ToDtype(torch.float, scale=False)]))
    loader = stoker.Loader(dataset, batch_size=None)
    assert loader.plan["dataset"][0][1] == "python"
    assert "scale=True only" in loader.plan["notes"]["dataset"][0]
    same(next(iter(loader)), next(iter(DataLoader(dataset, batch_size=None))))


class CocoDetectionToVOCSegmentation:
    """The reference's v2 step (v2_extras.py): the wrapper's masks of the objects whose COCO
    category has a VOC class times that class, 255 where two or more overlap; a Mask [H, W]
    (zeros without such objects)."""

    COCO_TO_VOC_LABEL_MAP = dict(zip(CAT_LIST, range(21)))

    def __call__(self, image, target):
        from torchvision import tv_tensors
        from torchvision.transforms.v2 import functional as F2

        kept = [(k, self.COCO_TO_VOC_LABEL_MAP[label])
                for k, label in enumerate(target.get("labels", torch.zeros(0)).tolist())
                if label in self.COCO_TO_VOC_LABEL_MAP] if "masks" in target else []
        if not kept:
            return image, tv_tensors.Mask(torch.zeros(F2.get_size(image), dtype=torch.uint8))
        rows, labels = zip(*kept)
        masks = target["masks"][list(rows)].to(torch.uint8)
        labels = torch.tensor(labels, dtype=torch.uint8)
        mask, _ = (masks * labels.reshape(-1, 1, 1)).max(dim=0)
        mask[masks.sum(dim=0) > 1] = 255
        return image, tv_tensors.Mask(mask)


def v2_preset(base_size, crop_size):
    """The reference's SegmentationPresetTrain(use_v2=True, backend="pil")."""
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    from test_joint_transforms import SEGMENTATION_FILL, PadIfSmaller

    return v2.Compose([
        v2.RandomResize(min_size=int(0.5 * base_size), max_size=int(2.0 * base_size)),
        v2.RandomHorizontalFlip(0.5), PadIfSmaller(crop_size, fill=dict(SEGMENTATION_FILL)),
        v2.RandomCrop(crop_size), v2.PILToTensor(),
        v2.ToDtype({torch.Tensor: torch.float32, tv_tensors.Mask: torch.int64, "others": None},
                   scale=True),
        v2.Normalize(mean=MEAN, std=STD), v2.ToPureTensor()])


def test_the_references_v2_coco_dataset_is_read_natively(coco_set, cache):
    """get_coco(use_v2=True): CocoDetection wrapped for v2 (masks, labels), its
    CocoDetectionToVOCSegmentation then the v2 preset: each sample the reference's for stoker's
    draws (compact run-length counts read, as the wrapper reads them)."""
    transforms = Compose([CocoDetectionToVOCSegmentation(), v2_preset(160, 200)])
    dataset = datasets.wrap_dataset_for_transforms_v2(
        datasets.CocoDetection(coco_set / "images", coco_set / "annotations" / "instances.json",
                               transforms=transforms), target_keys={"masks", "labels"})
    loader = stoker.Loader(dataset, batch_size=None, order=stoker.Order(seed=SEED))
    note = " ".join(loader.plan["notes"]["dataset"])
    assert "segmentation reference's COCO dataset (v2) is read natively" in note, note
    classes = classes_equal_to_the_references(loader, dataset)
    assert len(classes - {0, 255}) > 2 and 255 in classes
