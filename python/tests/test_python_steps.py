"""Steps stoker cannot run natively run in Python after the native ones: nothing is refused for
being unknown. The same batches for any number of workers and after a resume, the callable's
draws seeded per sample as documented, errors named in one line, the iterating thread's own
random state untouched."""

import random
import re

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2

import stoker
from stoker import transforms as S
from stoker._python_steps import batch_seed, sample_seed

CROP = [T.RandomResizedCrop(24), T.RandomHorizontalFlip()]


def noisy(x):
    """A user's step that draws from torch, random and numpy."""
    shift = int(torch.randint(0, 50, ())) + random.randint(0, 50) + int(np.random.randint(50))
    return (x.to(torch.int32) + shift).clamp(0, 255).to(torch.uint8)


def loader(path, steps, **options):
    options.setdefault("batch_format", "dict")
    options.setdefault("shuffle", True)
    return stoker.Loader(path, batch_size=3, seed=5, transforms=T.Compose(steps), **options)


def images_of(path, steps, epoch=1, **options):
    return torch.cat([b["image"] for b in loader(path, steps, **options).epoch(epoch)])


def test_an_untranslated_step_runs_in_python_and_the_plan_says_so(images):
    path, _ = images
    made = loader(path, CROP + [T2.GaussianBlur(3), noisy, T.ToTensor()], python_input="tensor")
    assert [where for _, where in made.plan["image"]] == ["native", "python", "python",
                                                          "python"]
    assert made.plan["image"][0][0].startswith("random_resized_crop(size=24")
    assert made.plan["image"][2][0] == "noisy"
    assert made.plan["label"] == []
    batch = next(iter(made))
    assert batch["image"].shape == (3, 3, 24, 24) and batch["image"].dtype == torch.float32
    assert batch["label"].dtype == torch.int64
    assert dict((name, shape) for name, _, shape in made.fields)["image"] is None
    assert made.stats()["python_seconds"] > 0
    timing = made.stats()["python_step_seconds"]["image"]
    assert [name for name, _ in timing][1:] == ["noisy", "ToTensor()"]
    assert all(seconds > 0 for _, seconds in timing)


def test_the_python_steps_are_the_callable_on_the_native_sample_under_its_seed(images):
    path, _ = images
    native = [b["image"] for b in loader(path, CROP).epoch(2)]
    made = loader(path, CROP + [noisy])
    both, positions = [], []
    for batch in made.epoch(2):
        both.append(batch["image"])
        positions.append(made.state_dict()["position"])
    assert len(both) == len(native) > 1
    changed = 0
    for index, (got, before) in enumerate(zip(both, native)):
        for slot in range(len(before)):
            seed = sample_seed(5, 2, 0, positions[index], slot)
            torch.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed & 0xFFFFFFFF)
            expected = noisy(before[slot])
            assert torch.equal(got[slot], expected), (index, slot)
            changed += not torch.equal(expected, before[slot])
    assert changed > 0


def test_a_recipe_written_for_pil_gets_pil_images_and_the_recipes_pixels(images):
    from PIL import Image
    path, _ = images
    tail = [T2.RandomRotation(30), T2.PILToTensor(), T2.ToDtype(torch.float32, scale=True),
            T2.Normalize([0.5] * 3, [0.25] * 3)]
    native = [b["image"] for b in loader(path, CROP).epoch(0)]
    made = loader(path, CROP + tail)
    assert [where for _, where in made.plan["image"]] == ["native"] + ["python"] * 4
    for index, batch in enumerate(made.epoch(0)):
        position = made.state_dict()["position"]
        for slot, got in enumerate(batch["image"]):
            torch.manual_seed(sample_seed(5, 0, 0, position, slot))
            image = Image.fromarray(native[index][slot].numpy().transpose(1, 2, 0))
            assert torch.equal(got, T2.Compose(tail)(image)), (index, slot)
    with pytest.raises(ValueError, match="python_input must be None, 'tensor' or 'pil'"):
        loader(path, CROP + tail, python_input="numpy")


def test_the_same_batches_for_any_workers_and_after_a_resume(images):
    path, _ = images
    steps = CROP + [T2.RandomRotation(30), noisy]
    reference = images_of(path, steps, workers=0)
    assert torch.equal(images_of(path, steps, workers=2), reference)
    assert not torch.equal(images_of(path, steps, epoch=2, workers=0), reference)

    first = loader(path, steps, workers=2)
    iteration = first.epoch(1)
    head = next(iteration)["image"]
    state = first.state_dict()
    resumed = loader(path, steps, workers=1)
    resumed.load_state_dict(state)
    rest = torch.cat([b["image"] for b in resumed])
    assert torch.equal(torch.cat([head, rest]), reference)


def test_the_iterating_threads_random_state_is_left_as_it_was(images):
    path, _ = images
    made = loader(path, CROP + [noisy])
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    expected = (torch.rand(2), random.random(), np.random.rand())
    torch.manual_seed(11)
    random.seed(11)
    np.random.seed(11)
    next(iter(made))
    assert torch.equal(torch.rand(2), expected[0])
    assert random.random() == expected[1] and np.random.rand() == expected[2]


class FailsOnce:
    """Raises (a two-line message) on its first call only."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("bad\nsample")
        return x

    def __repr__(self):
        return "FailsOnce()"


def test_a_failing_step_is_one_line_naming_field_sample_and_step(images):
    path, _ = images
    made = loader(path, CROP + [FailsOnce()], shuffle=False, python_workers=0)
    iteration = made.epoch(0)
    with pytest.raises(stoker.Error) as raised:
        next(iteration)
    # Named where its record lies, as a bad record is (the shard and record).
    assert re.fullmatch(r"\S+/shard-\d+\.stk: record 0: field 'image', sample 0 of batch 0 "
                        r"\(epoch 0\): FailsOnce\(\) raised RuntimeError: bad sample "
                        r"\(dataset record 0\)", str(raised.value)), str(raised.value)
    assert next(iteration)["image"].shape == (3, 3, 24, 24)  # the loader goes on

    skipping = loader(path, CROP + [FailsOnce()], shuffle=False, on_error="skip",
                      python_workers=0)
    batch = next(iter(skipping.epoch(0)))
    assert batch["image"].shape[0] == 2 and batch["label"].tolist() == [1, 2]
    assert skipping.stats()["python_skipped"] == 1


@pytest.mark.parametrize("step, message", [
    (lambda x: x.numpy(), "gave a ndarray, not a torch.Tensor"),
    (lambda x: x[:, : int(torch.randint(1, 24, ()))], "a batch stacks one shape and dtype"),
])
def test_a_step_giving_no_tensor_or_another_shape_is_named(images, step, message):
    path, _ = images
    with pytest.raises(stoker.Error, match=message):
        next(iter(loader(path, CROP + [step])))


@pytest.mark.parametrize("steps, message", [
    (CROP + [noisy, S.ToTensor()],
     "stoker.transforms.ToTensor cannot follow a step that runs in Python \\(noisy\\)"),
    (CROP + [42], "int is not a transform stoker.Loader runs"),
])
def test_what_cannot_run_anywhere_is_still_one_line(images, steps, message):
    path, _ = images
    with pytest.raises(ValueError, match=message):
        loader(path, steps)


def test_a_stored_field_of_any_dtype_takes_python_steps(labelled):
    made = stoker.Loader(labelled, batch_size=4, shuffle=False, batch_format="dict",
                         transforms={"label": lambda y: y * 10})
    assert made.plan["label"] == [("<lambda>", "python")]
    assert next(iter(made))["label"].tolist() == [0, 10, 20, 30]


def test_mixup_and_cutmix_on_the_batch_are_torchvisions_for_the_batch_seed(images):
    path, _ = images
    steps = CROP + [T.ToTensor()]
    plain = loader(path, steps, batch_format=("image", "label"))
    for transform in (T2.MixUp(alpha=0.2, num_classes=8), T2.CutMix(alpha=1.0, num_classes=8)):
        # Wrapped, they run in Python (stoker runs the classes themselves natively).
        mixed = loader(path, steps, batch_format=("image", "label"),
                       batch_transform=lambda images, labels, t=transform: t(images, labels))
        assert mixed.plan["batch_transform"] == [("<lambda>", "python")]
        positions = []
        got = []
        for batch in mixed.epoch(1):
            got.append(batch)
            positions.append(mixed.state_dict()["position"])
        for (image, target), (base_image, base_label), position in zip(
                got, plain.epoch(1), positions):
            torch.manual_seed(batch_seed(5, 1, 0, position))
            want_image, want_target = transform(base_image, base_label)
            assert torch.equal(image, want_image) and torch.equal(target, want_target)
            assert target.shape == (len(base_label), 8)


def test_a_batch_transform_gives_the_same_batches_for_any_workers_and_a_resume(images):
    path, _ = images
    choice = T2.RandomChoice([T2.MixUp(alpha=0.2, num_classes=8),
                              T2.CutMix(alpha=1.0, num_classes=8)])

    def run(**options):
        made = loader(path, CROP + [T.ToTensor()], batch_format=("image", "label"),
                      batch_transform=choice, **options)
        return made, [torch.cat([b[0].flatten(1), b[1]], 1) for b in made.epoch(3)]

    _, reference = run(workers=0)
    assert all(torch.equal(a, b) for a, b in zip(run(workers=2)[1], reference))
    first, _ = run(workers=1)
    next(first.epoch(3))
    resumed = loader(path, CROP + [T.ToTensor()], batch_format=("image", "label"),
                     batch_transform=choice)
    resumed.load_state_dict(first.state_dict())
    rest = [torch.cat([b[0].flatten(1), b[1]], 1) for b in resumed]
    assert all(torch.equal(a, b) for a, b in zip(rest, reference[1:]))


def test_a_failing_batch_transform_is_one_line_and_a_bad_one_refused(images):
    path, _ = images

    def broken(images, labels):
        raise RuntimeError("no\nlabels")

    made = loader(path, CROP, batch_format=("image", "label"), batch_transform=broken,
                  shuffle=False)
    with pytest.raises(stoker.Error) as raised:
        next(iter(made))
    assert str(raised.value) == ("batch 0 (epoch 0): the batch transform broken raised "
                                 "RuntimeError: no labels, given its fields as arguments "
                                 "(uint8 [3, 3, 24, 24], int64 [3]) (another form: "
                                 "stoker.Batches(batch_format=...))")
    with pytest.raises(ValueError, match="batch_transform must be callable"):
        loader(path, CROP, batch_transform=3)
