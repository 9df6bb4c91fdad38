"""The native operations' description in Python (pipeline/op_registry.h): stoker.transforms
builds the pixel operations' classes from it and checks their parameters through it, with the
same one-line errors as the CLI's --augment; ColorJitter through the Loader is torchvision's
adjustments of the crop, pixel for pixel, with the factors each sample's own stream draws."""

import inspect

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2
from torchvision.transforms.v2 import functional as F

import stoker
from loader_datasets import pixels
from sample_draws import SampleDraws
from stoker import _stoker
from stoker import transforms as S

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

ADJUSTMENTS = {"brightness": F.adjust_brightness, "contrast": F.adjust_contrast,
               "saturation": F.adjust_saturation, "hue": F.adjust_hue}


def jitter_draws(seed, epoch, index, **amounts):
    """ops/color_jitter.cc's draws for a field's first pixel operation (step 1): (the names of
    the four adjustments in the drawn order, {name: factor, None where its amount is 0})."""
    draws = SampleDraws(seed, epoch, index, 1)
    u = [draws.next_double() for _ in range(7)]
    factors = {}
    for name, draw in zip(ADJUSTMENTS, u[1:5]):
        amount = amounts.get(name, 0)
        low, high = (-amount, amount) if name == "hue" else (max(0.0, 1 - amount), 1 + amount)
        factors[name] = low + (high - low) * draw if amount > 0 else None
    order = ["brightness", "contrast"] if u[0] < 0.5 else ["contrast", "brightness"]
    order.insert(int(3 * u[5]), "saturation")
    order.insert(int(4 * u[6]), "hue")
    return order, factors


def torchvision_jitter(image, draws):
    order, factors = draws
    for name in order:
        if factors[name] is not None:
            image = ADJUSTMENTS[name](image, factors[name])
    return image


@pytest.fixture(scope="module")
def noise(tmp_path_factory):
    """A dataset of random RGB images, image uint8 [3, 20, 24]: (path, the images)."""
    images = np.random.default_rng(33).integers(0, 256, (16, 3, 20, 24), dtype=np.uint8)
    path = tmp_path_factory.mktemp("noise") / "ds"
    with stoker.DatasetWriter(path, {"image": ("uint8", images.shape[1:])}) as writer:
        for image in images:
            writer.append({"image": image})
    return path, torch.from_numpy(images)


def batch(path, transforms, **options):
    loader = stoker.Loader(path, batch_size=64, shuffle=False, seed=4, transforms=transforms,
                           **options, batch_format="dict")
    return next(iter(loader))["image"]


def test_the_pixel_classes_are_built_from_the_description():
    pixel = [op for op in _stoker.operations() if op["role"] == "pixel"]
    assert "color_jitter" in [op["name"] for op in pixel]
    for op in pixel:
        cls = getattr(S, op["python_class"])
        assert op["python_class"] in S.__all__
        signature = inspect.signature(cls)
        assert [(p.name, p.default) for p in signature.parameters.values()] == [
            (p["name"], p["default"]) for p in op["params"]]
        assert cls().params == {p["name"]: p["default"] for p in op["params"]}
    jitter = S.ColorJitter(0.4, contrast=np.float32(0.5))
    assert (jitter.brightness, jitter.contrast) == (0.4, 0.5)
    assert repr(jitter) == ("ColorJitter(brightness=0.4, contrast=0.5, saturation=0.0, hue=0.0, "
                            "backend='tensor')")


def test_a_wrong_parameter_is_the_clis_one_line_error():
    def message(make):
        with pytest.raises(ValueError) as raised:
            make()
        return str(raised.value)

    # cli_test.cc's `stoker train --augment color_jitter:brightness=-1` (and hue=0.6) says the
    # same.
    assert message(lambda: S.ColorJitter(brightness=-1)) == (
        "color_jitter: brightness must be a number at least 0, not -1")
    assert message(lambda: S.ColorJitter(hue=0.6)) == (
        "color_jitter: hue must be a number in [0, 0.5], not 0.6")
    assert message(lambda: S.ColorJitter(saturation=-0.5)) == (
        "color_jitter: saturation must be a number at least 0, not -0.5")
    assert message(lambda: S.ColorJitter(contrast="high")) == (
        "color_jitter: contrast must be a number at least 0, not 'high'")
    assert message(lambda: S.ColorJitter(sharpness=0.1)) == (
        "color_jitter: unknown parameter 'sharpness' (parameters: brightness, contrast, "
        "saturation, hue, backend)")
    assert message(lambda: _stoker.check_operation("normalize", {"std": []})) == (
        "normalize: std must be 1 or more finite numbers, not []")
    assert message(lambda: _stoker.check_operation("random_resized_crop", {"size": True})) == (
        "random_resized_crop: size must be a whole number in [1, 32768], not true")
    with pytest.raises(TypeError):
        S.ColorJitter(0.1, 0.2, 0.3, 0.4, "pil", 0.5)


def test_color_jitter_is_torchvisions_adjustments_of_the_crop(images):
    path, _ = images
    crop = S.RandomResizedCrop(24)
    plain = batch(path, crop)
    # A jitter that changes nothing leaves the crop's own draws as they were.
    assert torch.equal(batch(path, S.Compose([crop, S.ColorJitter()])), plain)
    amounts = dict(brightness=0.4, contrast=0.6, saturation=0.5, hue=0.2)
    jitter = S.Compose([crop, S.RandomHorizontalFlip(0.0), S.ColorJitter(**amounts)])
    jittered = batch(path, jitter)
    for i, image in enumerate(plain):
        expected = torchvision_jitter(image, jitter_draws(4, 0, i, **amounts))
        assert torch.equal(jittered[i], expected), i
    assert torch.equal(batch(path, jitter, workers=3), jittered)
    normalised = batch(path, S.Compose([crop, S.ColorJitter(**amounts), S.ToTensor(),
                                        S.Normalize(MEAN, STD)]))
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    torch.testing.assert_close(normalised, (jittered / 255.0 - mean) / std, rtol=0, atol=0)


@pytest.mark.parametrize("amounts", [
    dict(brightness=0.8), dict(contrast=0.9), dict(saturation=1.5), dict(hue=0.5),
    dict(hue=0.02), dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
    dict(brightness=1.0, contrast=2.0, saturation=3.0, hue=0.4),
])
def test_color_jitter_of_random_images_is_torchvisions_to_the_pixel(noise, amounts):
    path, images = noise
    jittered = batch(path, S.ColorJitter(**amounts))
    changed = 0
    for i, image in enumerate(images):
        expected = torchvision_jitter(image, jitter_draws(4, 0, i, **amounts))
        assert torch.equal(jittered[i], expected), i
        changed += not torch.equal(expected, image)
    assert changed == len(images)


def test_color_jitter_on_a_stored_uint8_image(labelled):
    # One channel: saturation and hue leave it as it is, as torchvision does.
    amounts = dict(brightness=0.5, contrast=0.5, saturation=0.5, hue=0.5)
    jittered = batch(labelled, S.ColorJitter(**amounts))
    for i in range(len(jittered)):
        expected = torchvision_jitter(torch.from_numpy(pixels(i)),
                                      jitter_draws(4, 0, i, **amounts))
        assert torch.equal(jittered[i], expected), i


@pytest.mark.parametrize("module", [T, T2])
def test_torchvisions_colour_classes_translate(noise, module):
    path, _ = noise
    theirs = module.Compose([module.PILToTensor(),  # the tensor backend, which stoker's equals
                             module.ColorJitter(0.4, (0.2, 1.8), 0.3, (-0.1, 0.1)),
                             module.RandomGrayscale(0.3)])
    ours = S.Compose([S.ColorJitter(brightness=0.4, contrast=0.8, saturation=0.3, hue=0.1),
                      S.RandomGrayscale(0.3)])
    assert torch.equal(batch(path, theirs), batch(path, ours))
    translated = S._stoker_transform(module.ColorJitter(brightness=1.5, hue=0.5))
    assert translated.params == dict(brightness=1.5, contrast=0.0, saturation=0.0, hue=0.5,
                                     backend="tensor")


@pytest.mark.parametrize("jitter, message", [
    (dict(brightness=(0.5, 0.8)), "torchvision ColorJitter brightness=(0.5, 0.8): stoker draws "
     "brightness from [max(0, 1 - a), 1 + a] only; give brightness as one number a"),
    (dict(saturation=(0, 1.5)), "torchvision ColorJitter saturation=(0, 1.5): stoker draws "
     "saturation from [max(0, 1 - a), 1 + a] only; give saturation as one number a"),
    (dict(hue=(0.0, 0.2)), "torchvision ColorJitter hue=(0, 0.2): stoker draws hue from [-a, a] "
     "only; give hue as one number a"),
])
@pytest.mark.parametrize("module", [T, T2])
def test_a_torchvision_range_stoker_cannot_draw_runs_in_python(noise, module, jitter, message):
    path, images = noise
    with pytest.raises(ValueError) as raised:
        S._stoker_transform(module.ColorJitter(**jitter))
    assert str(raised.value) == message
    loader = stoker.Loader(path, shuffle=True, batch_size=64, transforms=module.ColorJitter(**jitter),
                           batch_format="dict")
    assert [where for _, where in loader.plan["image"]] == ["python"]
    assert next(iter(loader))["image"].shape == images.shape


@pytest.mark.parametrize("transforms, message", [
    (S.Compose([S.ColorJitter(0.1), S.RandomResizedCrop(32)]), "must start with RandomResizedCrop"),
    (S.Compose([S.RandomResizedCrop(32), S.ToTensor(), S.ColorJitter(0.1)]),
     "not ToTensor \\+ ColorJitter \\(.*ColorJitter.* come right after the crop\\)"),
])
def test_pipelines_with_pixel_operations_out_of_place_say_where_they_go(images, transforms,
                                                                       message):
    path, _ = images
    with pytest.raises(ValueError, match=message):
        stoker.Loader(path, batch_size=256, shuffle=True, transforms=transforms, batch_format="dict")


@pytest.mark.parametrize("theirs", [
    T2.RandomPosterize(bits=3, p=0.5), T2.RandomSolarize(threshold=100.0, p=0.5),
    T2.RandomInvert(p=0.5), T2.RandomAutocontrast(p=0.5), T2.RandomEqualize(p=0.5),
    T2.RandomAdjustSharpness(sharpness_factor=1.7, p=0.5), T2.RandomVerticalFlip(p=0.5),
])
def test_torchvisions_pil_operations_translate_by_their_attributes(noise, theirs):
    path, images = noise
    ours = S._stoker_transform(theirs)
    assert type(ours).__name__ == type(theirs).__name__
    for name, value in ours.params.items():
        if name not in ("backend", "kernels"):  # which kernels: the step's place and version's
            assert value == pytest.approx(getattr(theirs, name)), name
    loader = stoker.Loader(path, shuffle=True, batch_size=64, transforms=theirs, batch_format="dict")
    [(step, where)] = loader.plan["image"]
    assert where == "native" and step.startswith(ours._op + "(")
    assert next(iter(loader))["image"].shape == images.shape


@pytest.mark.parametrize("module", [T, T2])
def test_torchvisions_random_choice_and_random_apply_run_natively(noise, module):
    """RandomChoice and RandomApply of image operations translate into the native combinators:
    no step in Python, and every image is what one of torchvision's choices makes of it."""
    path, images = noise
    invert, posterize = F.invert(images), F.posterize(images, 2)
    choice = module.RandomChoice([module.RandomInvert(1.0), module.RandomPosterize(2, 1.0)],
                                 p=[1, 3])
    both = module.RandomApply([module.RandomInvert(1.0), module.RandomPosterize(2, 1.0)], p=0.5)
    for transform, outcomes in ((choice, (invert, posterize)),
                                (both, (images, F.posterize(invert, 2)))):
        loader = stoker.Loader(path, batch_size=16, shuffle=False, transforms=transform,
                               batch_format="dict")
        [(step, where)] = loader.plan["image"]
        assert where == "native"
        assert step.startswith(f"random_{type(transform).__name__[6:].lower()}(")
        seen = set()
        for epoch in range(4):
            batch = next(iter(loader.epoch(epoch)))["image"]
            for k in range(len(images)):
                which = [j for j, out in enumerate(outcomes) if torch.equal(batch[k], out[k])]
                assert which, f"{type(transform).__name__}: image {k} is none of its outcomes"
                seen.update(which)
        assert seen == {0, 1}, type(transform).__name__


def test_combinators_take_stoker_operations_and_refuse_others():
    choice = S.RandomChoice(ops=[S.RandomInvert(1.0), S.RandomHorizontalFlip()], p=[2, 1])
    assert choice.params["ops"] == "[random_invert:p=1;random_horizontal_flip:p=0.5]"
    assert S.RandomApply().params == {"ops": "[]", "p": 0.5}
    with pytest.raises(ValueError, match="random_apply: ops: normalize is not a pixel operation"):
        _stoker.check_operation("random_apply", {"ops": [{"op": "normalize"}]})
    with pytest.raises(ValueError, match=r"RandomChoice runs natively around image operations "
                                         r"only .*not Normalize"):
        S._stoker_transform(T.RandomChoice([T.Normalize(MEAN, STD)]))
