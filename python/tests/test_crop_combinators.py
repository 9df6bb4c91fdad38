"""Combinators of decoding crops, and pipelines whose crop the native plan cannot put first: a
RandomChoice of crops of one size runs natively (random_source_choice: each sample one option's
crop, torchvision's pixels for it); anything else runs in Python on the image decoded natively
at its own size (or on Resize's), torchvision's own steps under the sample's seed. Nothing is
refused for being unknown; stoker.transforms' own classes, which cannot run in Python, still
are, in one line."""

import io
import random

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2
from PIL import Image

import stoker
from stoker import transforms as S
from stoker._python_steps import sample_seed


def loader(path, steps, **options):
    return stoker.Loader(path, batch_size=4, seed=5, shuffle=False, batch_format="dict",
                         transforms=T.Compose(steps), **options)


def decoded(encoded):
    return [Image.open(io.BytesIO(data)).convert("RGB") for data in encoded]


def tensor_of(image):
    return torch.from_numpy(np.asarray(image).transpose(2, 0, 1).copy())


def seeded(made, epoch_batches):
    """[(sample tensor, its sample seed)] of every sample of `epoch_batches`, in order."""
    out = []
    for batch in epoch_batches:
        position = made.state_dict()["position"]
        out += [(x, sample_seed(5, 0, 0, position, slot)) for slot, x in
                enumerate(batch["image"])]
    return out


def seed_all(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)


def test_a_choice_of_crops_of_one_size_runs_natively_each_sample_one_options(images):
    path, encoded = images
    options = [T.Compose([T.Resize(30), T.CenterCrop(24)]),
               T.Compose([T.Resize(40, interpolation=T.InterpolationMode.BICUBIC),
                          T.CenterCrop(24)])]
    made = loader(path, [T.RandomChoice(options)])
    [(call, where)] = made.plan["image"]
    assert where == "native" and call.startswith("random_source_choice(ops='[center_crop:")
    chosen = []
    for x, image in zip(torch.cat([b["image"] for b in made]), decoded(encoded)):
        matches = [k for k, option in enumerate(options)
                   if torch.equal(x, tensor_of(option(image)))]
        assert matches, "a sample that is neither option's crop"
        chosen.append(matches[0])
    assert set(chosen) == {0, 1}
    # The weights: one option only; v2's class and a RandomResizedCrop option alike.
    only = loader(path, [T2.RandomChoice([T2.RandomResizedCrop(24), options[1]], p=[0, 1])])
    assert only.plan["image"][0][0].startswith(
        "random_source_choice(ops='[random_resized_crop:")
    for x, image in zip(torch.cat([b["image"] for b in only]), decoded(encoded)):
        assert torch.equal(x, tensor_of(options[1](image)))


def test_a_choice_of_crops_is_followed_by_native_steps(images):
    path, _ = images
    made = loader(path, [T.RandomChoice([T.RandomResizedCrop(24), T.RandomResizedCrop(
        24, scale=(0.5, 1))]), T.RandomHorizontalFlip(), T.ToTensor(),
        T.Normalize([0.5] * 3, [0.25] * 3)])
    assert [where for _, where in made.plan["image"]] == ["native"] * 3
    batch = next(iter(made))["image"]
    assert batch.shape == (4, 3, 24, 24) and batch.dtype == torch.float32


@pytest.mark.parametrize("steps", [
    # A crop inside RandomApply: not applied, the image keeps its size (Resize makes one).
    [T.RandomApply([T.RandomResizedCrop(24)], p=0.5), T.Resize((20, 20)), T.PILToTensor()],
    # Crops of two sizes (the example, made one size after).
    [T2.RandomChoice([T2.RandomResizedCrop(24), T2.RandomResizedCrop(18)]),
     T2.Resize((20, 20)), T2.PILToTensor()],
    # A step before the crop.
    [T2.RandomRotation(30), T.RandomResizedCrop(24), T.PILToTensor()],
])
def test_what_the_native_plan_cannot_order_runs_in_python_on_the_decoded_image(images, steps):
    path, encoded = images
    made = loader(path, steps, python_workers=0)
    assert made.plan["image"][0] == ("decode_image(max_size=1024)", "native")
    assert [where for _, where in made.plan["image"][1:]] == ["python"] * len(steps)
    assert "the image is decoded at its own size for them" in made.plan["notes"]["image"][0]
    got = seeded(made, made.epoch(0))
    assert len(got) == len(encoded)
    for (x, seed), image in zip(got, decoded(encoded)):
        seed_all(seed)
        assert torch.equal(x, T.Compose(steps)(image))
    # The same batches from Python worker processes (samples of varying size travel to them).
    pooled = loader(path, steps, python_workers=2)
    assert torch.equal(torch.cat([b["image"] for b in pooled.epoch(0)]),
                       torch.stack([x for x, _ in got]))


@pytest.mark.parametrize("steps", [
    # Resamplings stoker has no native form of: the whole pipeline from the decoded image.
    [T.Resize(40, interpolation=T.InterpolationMode.NEAREST), T.CenterCrop(24),
     T.PILToTensor()],
    [T.Resize((30, 40)), T.CenterCrop(24), T.PILToTensor()],
])
def test_a_step_with_no_native_form_before_the_crop_runs_in_python(images, steps):
    path, encoded = images
    made = loader(path, steps)
    assert made.plan["image"][0] == ("decode_image(max_size=1024)", "native")
    for x, image in zip(torch.cat([b["image"] for b in made]), decoded(encoded)):
        assert torch.equal(x, T.Compose(steps)(image))


@pytest.mark.parametrize("head, tail, where", [
    # A pixel step after Normalize.
    ([T.RandomResizedCrop(24), T.ToTensor()], [T.ColorJitter(0.4)], ["native"] * 2),
    # A crop inside RandomApply, or beside a step that keeps the size in RandomChoice.
    ([T.RandomResizedCrop(24)], [T.RandomApply([T.RandomCrop(20)], p=0.5), T.Resize((16, 16))],
     ["native"]),
    ([T.RandomResizedCrop(24)], [T.RandomChoice([T.RandomCrop(16), T.RandomInvert(1.0)]),
                                 T.CenterCrop(16)], ["native"]),
])
def test_what_follows_the_native_start_runs_in_python_after_it(images, head, tail, where):
    path, _ = images
    made = loader(path, head + tail)
    assert [w for _, w in made.plan["image"]] == where + ["python"] * len(tail)
    native = loader(path, head)
    for (x, seed), before in zip(seeded(made, made.epoch(0)),
                                 torch.cat([b["image"] for b in native.epoch(0)])):
        seed_all(seed)
        assert torch.equal(x, T.Compose(tail)(before))


def test_python_steps_follow_resize_alone_on_each_images_resized_size(images):
    path, encoded = images
    tail = [T2.RandomRotation(20), T2.CenterCrop(16)]
    made = loader(path, [T.Resize(20)] + tail, python_workers=2)
    assert [where for _, where in made.plan["image"]] == ["native", "python", "python"]
    for (x, seed), image in zip(seeded(made, made.epoch(0)), decoded(encoded)):
        seed_all(seed)
        assert torch.equal(x, T2.Compose(tail)(tensor_of(T.Resize(20)(image))))


def test_decode_image_first_sets_the_python_inputs_largest_size(images):
    path, _ = images
    steps = [S.DecodeImage(max_size=64), T.RandomApply([T.RandomResizedCrop(24)], p=1.0)]
    made = loader(path, steps)
    assert made.plan["image"][0] == ("decode_image(max_size=64)", "native")
    with pytest.raises((ValueError, stoker.Error), match="larger than max_size 64"):
        list(made)


@pytest.mark.parametrize("steps, message", [
    # stoker.transforms' own classes run natively only: in this order they cannot.
    ([S.RandomInvert(), S.RandomResizedCrop(24)],
     "must start with RandomResizedCrop or Resize \\+ CenterCrop"),
    # What is not callable cannot run in Python either.
    ([T.RandomResizedCrop(24), T2.RandomRotation(30), 42],
     "42 cannot follow a step that runs in Python \\(RandomRotation.*\\); not callable"),
    # A wrong value: never left to Python, where every sample would fail.
    ([T.RandomResizedCrop((32, 0))], "RandomResizedCrop: size must be a positive int"),
    ([T.Resize(0), T.CenterCrop(24)], "Resize: size must be one positive int"),
    ([T.Resize(32, max_size=30), T.CenterCrop(24)], "Resize: max_size must be an int above"),
    # Crops of two sizes in a batch: torchvision's collate refuses them too.
    ([T.RandomChoice([T.RandomResizedCrop(24), T.RandomResizedCrop(18)])],
     "a batch stacks one shape and dtype"),
])
def test_what_cannot_run_is_still_one_line(images, steps, message):
    path, _ = images
    with pytest.raises((ValueError, stoker.Error), match=message):
        list(loader(path, steps))
