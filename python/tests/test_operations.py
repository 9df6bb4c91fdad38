"""The native operations' description in Python (pipeline/op_registry.h): stoker.transforms
builds the pixel operations' classes from it and checks their parameters through it, with the
same one-line errors as the CLI's --augment; ColorJitter through the Loader is torchvision's
adjustments of the crop, pixel for pixel, with the factors each sample's own stream draws."""

import inspect

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from torchvision.transforms.v2 import functional as F

import stoker
from loader_datasets import pixels
from stoker import _stoker
from stoker import transforms as S

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

# util/rng.h's counter-based generator, as it documents it.
MASK = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def derive_stream(a, b):
    return mix64((mix64(a) + b) & MASK)


def jitter_draws(seed, epoch, index, brightness, contrast):
    """ops/color_jitter.cc's draws for a field's first pixel operation (step 1): (brightness
    first, brightness factor or None, contrast factor or None)."""
    stream = derive_stream(derive_stream(derive_stream(0x73616D706C65, epoch), index), 1)
    key = mix64(mix64(seed) ^ stream)
    order, u_brightness, u_contrast = (
        (mix64((key + (i + 1) * GOLDEN) & MASK) >> 11) * 2.0**-53 for i in range(3))

    def factor(amount, u):
        low = max(0.0, 1 - amount)
        return low + (1 + amount - low) * u if amount > 0 else None

    return order < 0.5, factor(brightness, u_brightness), factor(contrast, u_contrast)


def torchvision_jitter(image, draws):
    brightness_first, brightness, contrast = draws
    steps = [(F.adjust_brightness, brightness), (F.adjust_contrast, contrast)]
    for adjust, factor in steps if brightness_first else reversed(steps):
        if factor is not None:
            image = adjust(image, factor)
    return image


def batch(path, transforms, **options):
    loader = stoker.Loader(path, batch_size=64, shuffle=False, seed=4, transforms=transforms,
                           **options)
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
    assert repr(jitter) == "ColorJitter(brightness=0.4, contrast=0.5)"


def test_a_wrong_parameter_is_the_clis_one_line_error():
    def message(make):
        with pytest.raises(ValueError) as raised:
            make()
        return str(raised.value)

    # cli_test.cc's `stoker train --augment color_jitter:brightness=-1` says the same.
    assert message(lambda: S.ColorJitter(brightness=-1)) == (
        "color_jitter: brightness must be a number at least 0, not -1")
    assert message(lambda: S.ColorJitter(contrast="high")) == (
        "color_jitter: contrast must be a number at least 0, not 'high'")
    assert message(lambda: S.ColorJitter(hue=0.1)) == (
        "color_jitter: unknown parameter 'hue' (parameters: brightness, contrast)")
    assert message(lambda: _stoker.check_operation("normalize", {"std": []})) == (
        "normalize: std must be 1 or more finite numbers, not []")
    assert message(lambda: _stoker.check_operation("random_resized_crop", {"size": True})) == (
        "random_resized_crop: size must be a whole number in [1, 32768], not true")
    with pytest.raises(TypeError):
        S.ColorJitter(0.1, 0.2, 0.3)


def test_color_jitter_is_torchvisions_adjustments_of_the_crop(images):
    path, _ = images
    crop = S.RandomResizedCrop(24)
    plain = batch(path, crop)
    # A jitter that changes nothing leaves the crop's own draws as they were.
    assert torch.equal(batch(path, S.Compose([crop, S.ColorJitter()])), plain)
    jitter = S.Compose([crop, S.RandomHorizontalFlip(0.0), S.ColorJitter(0.4, 0.6)])
    jittered = batch(path, jitter)
    for i, image in enumerate(plain):
        expected = torchvision_jitter(image, jitter_draws(4, 0, i, 0.4, 0.6))
        assert torch.equal(jittered[i], expected), i
    assert torch.equal(batch(path, jitter, workers=3), jittered)
    normalised = batch(path, S.Compose([crop, S.ColorJitter(0.4, 0.6), S.ToTensor(),
                                        S.Normalize(MEAN, STD)]))
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    torch.testing.assert_close(normalised, (jittered / 255.0 - mean) / std, rtol=0, atol=1e-5)


def test_color_jitter_on_a_stored_uint8_image(labelled):
    jittered = batch(labelled, S.ColorJitter(brightness=0.5, contrast=0.5))
    for i in range(len(jittered)):
        expected = torchvision_jitter(torch.from_numpy(pixels(i)), jitter_draws(4, 0, i, 0.5, 0.5))
        assert torch.equal(jittered[i], expected), i


@pytest.mark.parametrize("transforms, message", [
    (S.Compose([S.ColorJitter(0.1), S.RandomResizedCrop(32)]), "must start with RandomResizedCrop"),
    (S.Compose([S.RandomResizedCrop(32), S.ToTensor(), S.ColorJitter(0.1)]),
     "not ToTensor \\+ ColorJitter \\(.*ColorJitter.* come right after the crop\\)"),
    (T.Compose([T.RandomResizedCrop(32), T.ColorJitter(0.1)]),
     "torchvision transform ColorJitter is not supported by stoker.Loader: use "
     "stoker.transforms.ColorJitter"),
])
def test_pipelines_with_pixel_operations_out_of_place_say_where_they_go(images, transforms,
                                                                       message):
    path, _ = images
    with pytest.raises(ValueError, match=message):
        stoker.Loader(path, transforms=transforms)
