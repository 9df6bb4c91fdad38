"""The detection reference's v1 path (coco_utils.get_coco(use_v2=False) and presets.py's
DetectionPresetTrain/Eval with use_v2=False: hflip, multiscale, lsj, ssd, ssdlite, eval) read
natively by
stoker.Loader: the reference's own classes (references/detection/, not installed with
torchvision) are written here by their definition with torchvision's kernels, and stoker's
batches equal DataLoader's over them for the same draws: images, boxes clamped and the empty
ones dropped, labels, masks, image ids, area and iscrowd as ConvertCocoPolysToMask leaves
them."""

import itertools
import json
import math
import shutil

import numpy as np

import pytest
import torch
from torch.utils.data import DataLoader

import stoker

from sample_draws import SampleDraws
from test_dataloader_contract import same

torchvision = pytest.importorskip("torchvision")
coco_mask = pytest.importorskip("pycocotools.mask")
from detection_reference_v1 import (  # noqa: E402
    Compose, ConvertCocoPolysToMask, DetectionPresetEval, DetectionPresetTrain, PILToTensor,
    ToDtype, collate_fn, get_coco)

SEED = 5


def plain_counts(segmentation):
    """COCO's compact counts string as plain run-length counts (runs of 0, 1, ... down the
    columns)."""
    mask = coco_mask.decode({"size": segmentation["size"],
                             "counts": segmentation["counts"].encode()}).reshape(-1, order="F")
    ends = [k for k in range(1, len(mask)) if mask[k] != mask[k - 1]] + [len(mask)]
    counts = [b - a for a, b in zip([0] + ends[:-1], ends)]
    return [0] + counts if mask[0] else counts


@pytest.fixture(scope="module")
def edge_set(coco_set, tmp_path_factory):
    """The COCO-shaped set with the cases ConvertCocoPolysToMask decides: boxes reaching past
    the right and bottom edges (clamped), one of no width and one starting at the right edge
    (left out), an image of crowds only, an image whose areas are whole numbers (int64)."""
    out = tmp_path_factory.mktemp("v1") / "set"
    shutil.copytree(coco_set, out)
    path = out / "annotations" / "instances.json"
    data = json.loads(path.read_text())
    sizes = {image["id"]: (image["width"], image["height"]) for image in data["images"]}
    by_image = {}
    for a in data["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    ids = sorted(i for i, objects in by_image.items() if len(objects) >= 4)
    edges, crowds, whole = (by_image[i] for i in ids[:3])
    width, height = sizes[ids[0]]
    edges[0]["bbox"] = [width - 10.25, 3.5, 10.75, 20.0]
    edges[1]["bbox"] = [5.0, height - 4.5, 8.0, 5.0]
    edges[2]["bbox"] = [7.0, 7.0, 0.0, 9.0]
    edges[3]["bbox"] = [float(width), 2.0, 0.5, 4.0]
    for a in crowds:
        a["iscrowd"] = 1
    for a in data["annotations"]:  # frPyObjects takes plain counts, not compact ones
        if isinstance(a["segmentation"], dict) and isinstance(a["segmentation"]["counts"], str):
            a["segmentation"]["counts"] = plain_counts(a["segmentation"])
    for a in whole:
        a["area"] = int(a["area"])
    path.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("train, p", [(True, 0.0), (True, 1.0), (False, None)])
def test_the_v1_datasets_are_read_natively_as_dataloader_reads_them(edge_set, tmp_path,
                                                                   monkeypatch, train, p):
    """The training set (a Subset, the hflip preset) and the evaluation set (the eval preset):
    stoker's batches are DataLoader's, with no step in Python."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    preset = DetectionPresetTrain(p) if train else DetectionPresetEval()
    dataset = get_coco(edge_set, train, preset)
    loader = stoker.Loader(dataset, batch_size=3, num_workers=2, collate_fn=collate_fn)
    assert "v1 CocoDetection is read natively" in " ".join(loader.plan["notes"]["dataset"])
    assert [step for step in loader.plan["image"] if step[1] != "native"] == []
    theirs = DataLoader(dataset, batch_size=3, collate_fn=collate_fn)
    count = 0
    for ours, want in zip(loader, theirs, strict=True):
        same(ours, want)
        count += len(ours[0])
    assert count == len(dataset)


def test_one_flip_draw_moves_image_boxes_and_masks(edge_set, tmp_path, monkeypatch):
    """hflip at p = 0.5: stoker's draw for each sample (sample_draws.py) given to the
    reference's RandomHorizontalFlip as torch.rand's: the same samples, some flipped, some
    not."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    dataset = get_coco(edge_set, True, DetectionPresetTrain(0.5))
    loader = stoker.Loader(dataset, batch_size=4, collate_fn=collate_fn,
                           order=stoker.Order(seed=SEED))
    flips = []
    ours = [sample for images, targets in loader for sample in zip(images, targets)]
    rand = torch.rand
    try:
        for position, (image, target) in enumerate(ours):
            draws = SampleDraws(SEED, 0, dataset.indices[position], 1)
            value = draws.next_float()
            torch.rand = lambda *size, **kwargs: torch.tensor([value])
            same((image, target), dataset[position])
            flips.append(value < 0.5)
    finally:
        torch.rand = rand
    assert 0 < sum(flips) < len(flips)


def test_a_preset_stoker_cannot_run_natively_is_read_by_the_datasets_getitem(
        edge_set, tmp_path, monkeypatch):
    """A v1 step stoker does not translate (the reference's ToDtype without scale): the
    dataset's own __getitem__ runs, loader.plan says why, the batches are still DataLoader's."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    preset = Compose([PILToTensor(), ToDtype(torch.float, scale=False)])
    dataset = get_coco(edge_set, False, preset)
    loader = stoker.Loader(dataset, batch_size=3, collate_fn=collate_fn)
    assert loader.plan["dataset"][0][1] == "python"
    assert "scale=True" in " ".join(loader.plan["notes"]["dataset"])
    same(next(iter(loader)), next(iter(DataLoader(dataset, batch_size=3,
                                                  collate_fn=collate_fn))))


def test_convert_coco_v1_targets_are_convert_coco_polys_to_masks(edge_set, tmp_path):
    """`convert coco --v1-targets` (v1_targets=True) stores the boxes, labels and masks
    ConvertCocoPolysToMask makes, image by image."""
    out = tmp_path / "ds"
    stoker.convert("coco", edge_set / "images", out,
                   annotations=edge_set / "annotations" / "instances.json", v1_targets=True)
    reference = get_coco(edge_set, False, None)
    dataset = stoker.Dataset(out, transforms={"image": None,
                                              "masks": stoker.transforms.RawBytes(1 << 20)})
    loader = stoker.Loader(dataset, batch_size=None,
                           batches=stoker.Batches(batch_format="dict"))
    for k, sample in enumerate(loader):
        _, target = reference[k]
        assert torch.equal(sample["boxes"], target["boxes"])
        assert torch.equal(sample["labels"], target["labels"])
        height, width = int(sample["height"]), int(sample["width"])
        masks = stoker.decode_masks(sample["masks"], height, width)
        assert torch.equal(torch.as_tensor(masks), target["masks"])


class Drawing:
    """`step` run with the draws stoker's operation made (sample_draws.py): torch.rand's
    float32 ones, torch.randint's pick of n int(u * n) of a double u, torch.randperm(3)'s
    permutation number int(6 u) in lexicographic order, ColorJitter.get_params' factor of range
    [lo, hi] float32(lo + (hi - lo) u)."""

    def __init__(self, step, draws):
        self.step, self.draws = step, draws

    def __call__(self, image, target):
        draws = self.draws

        def rand(*size, **kwargs):
            shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple) else size
            return torch.tensor([draws.next_float() for _ in range(math.prod(shape))],
                                dtype=torch.float32).reshape(shape)

        def randint(*args, high=None, **kwargs):
            n = high if high is not None else args[0]
            return torch.tensor([int(draws.next_double() * n)])

        def randperm(n, **kwargs):
            assert n == 3
            return torch.tensor(list(itertools.permutations(range(3)))[
                int(6 * draws.next_double())])

        def factor(lo_hi):
            if lo_hi is None:
                return None
            low, high = lo_hi
            return float(np.float32(low + (high - low) * draws.next_double()))

        def get_params(brightness, contrast, saturation, hue):
            return (torch.arange(4), factor(brightness), factor(contrast), factor(saturation),
                    factor(hue))

        jitter = torchvision.transforms.ColorJitter
        saved = torch.rand, torch.randint, torch.randperm, jitter.get_params
        torch.rand, torch.randint, torch.randperm = rand, randint, randperm
        jitter.get_params = staticmethod(get_params)
        try:
            return self.step(image, target)
        finally:
            torch.rand, torch.randint, torch.randperm = saved[:3]
            jitter.get_params = staticmethod(saved[3])


@pytest.mark.parametrize("policy, size", [("multiscale", None), ("lsj", 128), ("lsj", 320)])
def test_the_v1_resizing_presets_equal_the_references_for_the_same_draws(
        edge_set, tmp_path, monkeypatch, policy, size):
    """multiscale (RandomShortestSize) and lsj (ScaleJitter, FixedSizeCrop: cuts and pads) then
    a flip, natively: each sample is the reference's given stoker's draws. An image without
    objects (N = 0 masks), which torch's nearest resize refuses in the reference, stoker
    gives with its empty target."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    dataset = get_coco(edge_set, True, DetectionPresetTrain(0.5, policy, size or 0))
    loader = stoker.Loader(dataset, batch_size=4, collate_fn=collate_fn,
                           order=stoker.Order(seed=SEED))
    assert [step for step in loader.plan["image"] if step[1] != "native"] == []
    ours = [sample for images, targets in loader for sample in zip(images, targets)]
    assert len(ours) == len(dataset)
    coco = dataset.dataset
    steps = coco._transforms.transforms[1].transforms.transforms  # the preset's
    refused = 0
    for position, sample in enumerate(ours):
        index = dataset.indices[position]
        drawn = [Drawing(step, SampleDraws(SEED, 0, index, k + 1)) for k, step in
                 enumerate(steps)]
        coco._transforms = Compose([ConvertCocoPolysToMask(), Compose(drawn)])
        try:
            want = coco[index]
        except RuntimeError as e:
            assert "Non-empty 4D data tensor expected" in str(e)
            assert len(sample[1]["boxes"]) == len(sample[1]["masks"]) == 0
            refused += 1
            continue
        same(sample, want)
    assert 0 < refused < len(ours) // 2


@pytest.mark.parametrize("policy", ["ssd", "ssdlite"])
def test_the_v1_ssd_presets_equal_the_references_for_the_same_draws(edge_set, tmp_path,
                                                                    monkeypatch, policy):
    """ssd (RandomPhotometricDistort, RandomZoomOut, RandomIoUCrop) and ssdlite (RandomIoUCrop)
    then a flip, natively: each sample is the reference's given stoker's draws. The masks stay
    as stored (flipped with the image), area and iscrowd unfiltered, as the reference leaves
    them; zooms, crops that drop boxes, and uncropped samples occur."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    dataset = get_coco(edge_set, True, DetectionPresetTrain(0.5, policy))
    loader = stoker.Loader(dataset, batch_size=4, collate_fn=collate_fn,
                           order=stoker.Order(seed=SEED))
    assert "v1 CocoDetection is read natively" in " ".join(loader.plan["notes"]["dataset"])
    assert [step for step in loader.plan["image"] if step[1] != "native"] == []
    ours = [sample for images, targets in loader for sample in zip(images, targets)]
    assert len(ours) == len(dataset)
    coco = dataset.dataset
    steps = coco._transforms.transforms[1].transforms.transforms  # the preset's
    dropped = resized = 0
    for position, sample in enumerate(ours):
        index = dataset.indices[position]
        drawn = [Drawing(step, SampleDraws(SEED, 0, index, k + 1)) for k, step in
                 enumerate(steps)]
        coco._transforms = Compose([ConvertCocoPolysToMask()])
        _, stored = coco[index]
        coco._transforms = Compose([ConvertCocoPolysToMask(), Compose(drawn)])
        want = coco[index]
        same(sample, want)
        dropped += len(want[1]["boxes"]) < len(stored["boxes"])
        resized += want[0].shape[1:] != stored["masks"].shape[1:]
    assert dropped > 0 and 0 < resized < len(ours)
