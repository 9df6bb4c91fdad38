"""The Python steps after a joint transform (stoker/_joint_python.py): a v2 step stoker does not
translate, and the steps after it, run in Python on the sample the native steps made, as
torchvision has it there; the result equals torchvision running the whole pipeline on
CocoDetection's v2-wrapped samples (or the mask folders' pairs) with the Python part seeded as
the loader seeds it; the same batches for 1 and 2 native workers, and in the iterating thread,
1 or 2 worker processes or threads, again after a resume; a raising (or hung) step is one line
naming the sample, the field and the step, or skipped, wherever it runs."""

import os
import random
import re
import time

import numpy as np
import pytest
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2

import stoker
from stoker._python_steps import sample_seed
from stoker.transforms import DecodeImage

from test_coco_import import torchvision_samples
from test_joint_transforms import (MEAN, STD, SEED, equal_to, largest_side, reference_target,
                                   segmentation_head)


def seeded(seed):
    """torch's, Python's and numpy's generators as the loader seeds them for a sample."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)


def affine_tail():
    """Detection steps after a native flip: RandomAffine (not translated) and the preset's
    rest, all in Python."""
    return [v2.RandomAffine(degrees=20, translate=(0.1, 0.1), scale=(0.8, 1.2)), v2.ToImage(),
            v2.ToDtype(torch.float, scale=True), v2.SanitizeBoundingBoxes(), v2.ToPureTensor()]


def loaded(dataset, transforms, variable="list", **options):
    """(sample {field: tensor}, its seed) of a loader's first epoch, in order."""
    loader = stoker.Loader(dataset, shuffle=False, batch_format="dict", variable=variable,
                           transforms=transforms, seed=SEED, batch_size=5, **options)
    for batch in loader:
        position = loader.state_dict()["position"]
        for k in range(len(batch["image"])):
            yield {name: value[k].clone() for name, value in batch.items()}, \
                sample_seed(SEED, 0, 0, position, k)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_an_untranslated_step_after_a_joint_flip_equals_torchvision(coco_set, coco_dataset, p):
    """The flip native, RandomAffine and the rest in Python (on the PIL image, BoundingBoxes
    and Mask): image, boxes, labels and masks equal torchvision's whole pipeline with the
    Python part seeded as the loader seeds it; the affine moves boxes."""
    reference = torchvision_samples(coco_set)
    transforms = v2.Compose([DecodeImage(max_size=largest_side(reference)),
                             v2.RandomHorizontalFlip(p), *affine_tail()])
    moved = 0
    for k, (sample, seed) in enumerate(loaded(coco_dataset, transforms)):
        image, target = reference[k]
        image, target = v2.RandomHorizontalFlip(p)(image, reference_target(image, target))
        seeded(seed)
        want = v2.Compose(affine_tail())(image, target)
        assert equal_to(sample, *want), k
        moved += sample["boxes"].shape != target["boxes"].shape or \
            not torch.equal(sample["boxes"], target["boxes"])
    assert moved > 0 and k == len(reference) - 1


def test_the_plan_says_which_steps_run_where(coco_dataset):
    loader = stoker.Loader(coco_dataset, shuffle=True, batch_size=2, transforms=v2.Compose(
        [v2.RandomHorizontalFlip(1.0), *affine_tail()]))
    rows = loader.plan["image"]
    assert rows[0] == ("joint_horizontal_flip(p=1.0)", "native")
    assert [where for _, where in rows[1:]] == ["python"] * len(affine_tail())
    assert rows[1][0].startswith("RandomAffine(")
    assert "RandomAffine and the steps after it run in Python on the whole sample (image, " \
        "boxes, labels, masks)" in loader.plan["notes"]["image"][0]
    assert {name: dtype for name, dtype, _ in loader.fields}["boxes"] is None


def test_one_or_two_workers_and_the_padded_form_give_the_same_batches(coco_dataset):
    transforms = v2.Compose([DecodeImage(max_size=1600), v2.RandomHorizontalFlip(0.5),
                             *affine_tail()])
    one, two = (list(loaded(coco_dataset, transforms, workers=n)) for n in (1, 2))
    padded = list(loaded(coco_dataset, transforms, variable="padded", workers=2))
    assert len(one) == len(two) == len(padded) > 0
    for (a, _), (b, _), (c, _) in zip(one, two, padded):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[name], b[name]) for name in a)
        for name in ("image", "boxes", "labels", "masks"):
            cut = tuple(slice(0, n) for n in c[f"{name}_sizes"].tolist())
            assert torch.equal(c[name][cut], a[name])


def affine_after_a_flip():
    return v2.Compose([DecodeImage(max_size=1600), v2.RandomHorizontalFlip(0.5), *affine_tail()])


def same_samples(got, want):
    assert len(got) == len(want) > 0
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[name], b[name]) for name in a), a["image_id"]


def dead(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_iterating_thread_and_one_or_two_worker_processes_give_the_same_batches(
        coco_dataset):
    """One native worker and the Python steps in the iterating thread (nothing in parallel)
    makes the batches that 1 or 2 worker processes make, and the default (2 on 2 cores), in
    either form (num_workers=2); closing the loader stops its worker processes."""
    alone = [s for s, _ in loaded(coco_dataset, affine_after_a_flip(), workers=1,
                                  python_workers=0)]
    for python_workers in (1, 2):
        same_samples([s for s, _ in loaded(coco_dataset, affine_after_a_flip(),
                                           python_workers=python_workers)], alone)
    made = stoker.Loader(coco_dataset, batch_size=5, seed=SEED, shuffle=False,
                         batch_format="dict", variable="padded", num_workers=2,
                         transforms=affine_after_a_flip())
    assert made.options["python_workers"] == 2
    padded = [{name: value[k] for name, value in batch.items()}
              for batch in made for k in range(len(batch["image"]))]
    assert len(padded) == len(alone)
    for c, a in zip(padded, alone):
        for name in ("image", "boxes", "labels", "masks"):
            cut = tuple(slice(0, n) for n in c[f"{name}_sizes"].tolist())
            assert torch.equal(c[name][cut], a[name])
        assert torch.equal(c["image_id"], a["image_id"])
    pids = made._python.pids() if made.options["python_workers"] else []
    made.close()
    assert all(dead(pid) for pid in pids)


def jitter(image, target, generator=None):
    """Moves the boxes by a draw of the generator it is given (so it may run in threads)."""
    shift = (torch.rand(2, generator=generator) * 8).repeat(2)
    return image, dict(target, boxes=tv_tensors.wrap(target["boxes"] + shift,
                                                     like=target["boxes"]))


def test_threads_give_the_batches_of_processes_and_of_the_iterating_thread(coco_dataset):
    transforms = v2.Compose([DecodeImage(max_size=1600), v2.RandomHorizontalFlip(0.5), jitter])
    alone = [s for s, _ in loaded(coco_dataset, transforms, python_workers=0)]
    flipped = [s for s, _ in loaded(coco_dataset, v2.Compose(transforms.transforms[:2] + [
        v2.ToPureTensor()]), python_workers=0)]
    assert any(not torch.equal(a["boxes"], b["boxes"]) for a, b in zip(alone, flipped))
    for options in ({"python_parallel": "threads", "python_workers": 2},
                    {"python_workers": 2}):
        same_samples([s for s, _ in loaded(coco_dataset, transforms, **options)], alone)
    with pytest.raises(ValueError, match=r"field 'image': python_parallel='threads' needs every "
                                         r"Python step to take a generator= keyword .*; "
                                         r"RandomAffine\("):
        stoker.Loader(coco_dataset, batch_size=256, shuffle=True, python_parallel="threads",
                      python_workers=2, transforms=affine_after_a_flip())


@pytest.mark.parametrize("before, after", [(0, 0), (2, 2), (0, 2), (2, 0)])
def test_a_resumed_loader_gives_the_same_batches(coco_dataset, before, after):
    """Stopped after two batches (with `before` Python worker processes) and resumed (with
    `after`): the rest of the epoch, as without the stop."""
    def loader(python_workers):
        return stoker.Loader(coco_dataset, shuffle=True, batch_size=4, seed=SEED, batch_format="dict",
                             transforms=affine_after_a_flip(), python_workers=python_workers)
    first = loader(before)
    epoch = iter(first)
    next(epoch), next(epoch)
    state = first.state_dict()
    rest = list(loader(0))[2:]
    del epoch
    second = loader(after)
    second.load_state_dict(state)
    resumed = list(second)
    assert len(resumed) == len(rest) > 0
    for a, b in zip(rest, resumed):
        assert all(torch.equal(x, y) for name in a for x, y in zip(a[name], b[name]))


def refuses(image, target):
    raise RuntimeError("not this one")


@pytest.mark.parametrize("python_workers", [0, 2])
def test_a_raising_step_is_one_line_naming_the_sample_field_and_step(coco_dataset,
                                                                     python_workers):
    loader = stoker.Loader(coco_dataset, shuffle=True, batch_size=2, batch_format="dict",
                           python_workers=python_workers,
                           transforms=v2.Compose([v2.RandomHorizontalFlip(), refuses,
                                                  v2.ToImage()]))
    with pytest.raises(stoker.Error) as raised:
        next(iter(loader))
    assert re.fullmatch(r"\S+\.stk: record \d+: field 'image', sample 0 of batch 0 \(epoch 0\): "
                        r"refuses raised RuntimeError: not this one \(dataset record \d+\)",
                        str(raised.value)), str(raised.value)


def halves(image, target):
    """Refuses about half the samples (its draw seeded per sample); adds 1 to the labels."""
    if torch.rand(1).item() < 0.5:
        raise ValueError("unlucky")
    return image, dict(target, labels=target["labels"] + 1)


@pytest.mark.parametrize("python_workers", [0, 2])
def test_skipped_samples_leave_every_field_of_their_batch(coco_dataset, python_workers):
    def steps(*python):
        return v2.Compose([DecodeImage(max_size=1600), v2.RandomHorizontalFlip(0.0), *python,
                           v2.ToImage()])
    plain = {int(s["image_id"]): (s, seed) for s, seed in loaded(coco_dataset, steps())}
    lucky = set()
    for image_id, (_, seed) in plain.items():  # the samples the step keeps
        torch.manual_seed(seed)
        if torch.rand(1).item() >= 0.5:
            lucky.add(image_id)
    kept = set()
    for sample, _ in loaded(coco_dataset, steps(halves), on_error="skip",
                            python_workers=python_workers):
        before = plain[int(sample["image_id"])][0]
        assert torch.equal(sample["labels"], before["labels"] + 1)
        assert torch.equal(sample["area"], before["area"])  # the sample's other fields
        assert torch.equal(sample["image"], before["image"])
        kept.add(int(sample["image_id"]))
    assert kept == lucky and 0 < len(kept) < len(plain)


def image_alone(image, target):
    return image


@pytest.mark.parametrize("python_workers", [0, 2])
def test_a_step_that_gives_no_target_is_named(coco_dataset, python_workers):
    loader = stoker.Loader(coco_dataset, shuffle=True, batch_size=2, batch_format="dict",
                           python_workers=python_workers,
                           transforms=v2.Compose([v2.RandomHorizontalFlip(), image_alone]))
    with pytest.raises(stoker.Error, match=r"^\S+: record \d+: field 'image', sample 0 of batch 0 "
                                           r"\(epoch 0\): image_alone gave a Image, not "
                                           r"\(image, target\) \(dataset record \d+\)$"):
        next(iter(loader))


class Stall:
    """Passes a sample through, except where a draw of torch's (under the sample's seed) is
    below 1/4: then it raises, or hangs."""

    def __init__(self, does):
        self.does = does

    def __call__(self, image, target):
        if float(torch.rand(())) >= 0.25:
            return image, target
        if self.does == "hang":
            time.sleep(3600)
        raise RuntimeError("stalled")

    def __repr__(self):
        return f"Stall({self.does!r})"


def test_a_hung_step_is_named_its_worker_replaced_and_skipped_as_a_raising_one(coco_dataset):
    def steps(does):
        return v2.Compose([DecodeImage(max_size=1600), v2.RandomHorizontalFlip(0.5),
                           Stall(does), v2.ToImage()])
    want = [s for s, _ in loaded(coco_dataset, steps("raise"), python_workers=0,
                                 on_error="skip")]
    made = stoker.Loader(coco_dataset, batch_size=5, seed=SEED, shuffle=False,
                         transforms=steps("hang"), python_workers=2, python_timeout=2)
    with pytest.raises(stoker.Error, match=r"^\S+: record \d+: field 'image', sample \d of batch "
                                           r"\d \(epoch 0\): Stall\('hang'\) ran longer than "
                                           r"python_timeout=2 s: its worker process \(pid \d+\) "
                                           r"was killed and replaced \(dataset record \d+\)$"):
        list(made)
    got = [s for s, _ in loaded(coco_dataset, steps("hang"), python_workers=2,
                                python_timeout=2, on_error="skip")]
    same_samples(got, want)
    assert len(want) < 24


def test_a_step_that_cannot_go_to_a_process_runs_in_the_iterating_thread_or_is_named(
        coco_dataset):
    def local(image, target):
        return image, target
    transforms = v2.Compose([DecodeImage(max_size=1600), v2.RandomHorizontalFlip(0.5),
                             *affine_tail()[:1], local, *affine_tail()[1:]])
    made = stoker.Loader(coco_dataset, batch_size=5, seed=SEED, shuffle=False,
                         batch_format="dict", transforms=transforms)
    assert made.options["python_workers"] == 0
    same_samples([{name: value[k] for name, value in batch.items()}
                  for batch in made for k in range(len(batch["image"]))],
                 [s for s, _ in loaded(coco_dataset, affine_after_a_flip(), python_workers=2)])
    with pytest.raises(ValueError, match=r"^field 'image': the Python step local cannot be sent "
                                         r"to a worker process \("):
        stoker.Loader(coco_dataset, batch_size=256, shuffle=True, python_workers=2, transforms=transforms)


def segmentation_python_tail():
    """GaussianBlur and RandomRotation (not translated), then the segmentation preset's
    conversion and normalisation, in Python."""
    return [v2.GaussianBlur(5, sigma=(0.5, 2.0)), v2.RandomRotation(15, fill={
        tv_tensors.Mask: 255, "others": 0}), v2.PILToTensor(),
        v2.ToDtype({torch.Tensor: torch.float32, tv_tensors.Mask: torch.int64, "others": None},
                   scale=True), v2.Normalize(MEAN, STD), v2.ToPureTensor()]


@pytest.mark.parametrize("python_workers", [0, 2])
def test_untranslated_steps_on_a_segmentation_sample_equal_torchvision(mask_folders, tmp_path,
                                                                       python_workers):
    """RandomResize and flip native, the rest in Python on (PIL image, Mask): equal to
    torchvision's whole pipeline seeded as the loader seeds the Python part."""
    from PIL import Image
    stoker.convert("masks", mask_folders / "images", tmp_path / "ds",
                   masks=mask_folders / "masks")
    transforms = v2.Compose([DecodeImage(max_size=1600), *segmentation_head(56, 1.0),
                             *segmentation_python_tail()])
    names = sorted(path.name for path in (mask_folders / "images").iterdir())
    rotated = 0
    for k, (sample, seed) in enumerate(loaded(tmp_path / "ds", transforms,
                                              python_workers=python_workers)):
        with Image.open(mask_folders / "images" / names[k]) as pil:
            image = pil.convert("RGB")
        with Image.open(mask_folders / "masks" / names[k].replace(".jpg", ".png")) as pil:
            mask = tv_tensors.Mask(torch.from_numpy(np.asarray(pil).copy()))
        image, mask = v2.Compose(segmentation_head(56, 1.0))(image, mask)
        seeded(seed)
        want_image, want_mask = v2.Compose(segmentation_python_tail())(image, mask)
        assert torch.equal(sample["image"], want_image), k
        assert torch.equal(sample["mask"], want_mask), k
        rotated += bool((sample["mask"] == 255).any())
    assert rotated > 0 and k == len(names) - 1


def says_types(image, target):
    """Raises, naming the types (and the image's dtype) it was given."""
    def name(x):
        return f"{type(x).__module__.split('.')[0]}.{type(x).__name__}"
    raise TypeError(" ".join([name(image), str(getattr(image, "dtype", "")),
                              *(name(target[key]) for key in ("boxes", "masks"))]))


@pytest.mark.parametrize("before, given", [
    ([], "PIL.Image torchvision.BoundingBoxes torchvision.Mask"),
    ([v2.ToImage()], "torchvision.Image torch.uint8 torchvision.BoundingBoxes torchvision.Mask"),
    ([v2.PILToTensor()], "torch.Tensor torch.uint8 torchvision.BoundingBoxes torchvision.Mask"),
    ([v2.ToPureTensor()], "PIL.Image torch.Tensor torch.Tensor"),
    ([v2.ToImage(), v2.ToPureTensor()], "torch.Tensor torch.uint8 torch.Tensor torch.Tensor"),
    ([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)],
     "torchvision.Image torch.float32 torchvision.BoundingBoxes torchvision.Mask"),
])
def test_the_python_steps_get_the_types_torchvision_has_there(coco_dataset, before, given):
    """A PIL image until ToImage (Image) or PILToTensor (a tensor); BoundingBoxes and Mask until
    ToPureTensor, which leaves a PIL image as it is."""
    loader = stoker.Loader(coco_dataset, shuffle=True, batch_size=1, transforms=v2.Compose(
        [DecodeImage(max_size=1600), v2.RandomHorizontalFlip(), *before, says_types]))
    with pytest.raises(stoker.Error, match=f"says_types raised TypeError: {given} "
                                           r"\(dataset record \d+\)$"):
        next(iter(loader))
