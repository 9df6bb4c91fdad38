"""stoker.transforms through stoker.Loader: the native image transforms give torchvision's
pixels where the pipelines are the same, torchvision's own classes translate, uint8 fields
normalise by the formula, and what is not supported says what is."""

import io

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

import stoker
from loader_datasets import pixels, write_one_cut_image
from resize_kernels import needs_torchs_tensor_resize
from stoker import transforms as S

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def torchvision_batch(encoded, pipeline):
    return torch.stack([pipeline(Image.open(io.BytesIO(e)).convert("RGB")) for e in encoded])


def stoker_batch(path, transforms, **options):
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=transforms, **options,
                           batch_format="dict")
    return next(iter(loader))["image"]


def full_square_crop(image):
    """What RandomResizedCrop(scale=(1, 1), ratio=(1, 1)) always picks: torchvision's
    fallback, the central square of the shorter side."""
    return T.functional.center_crop(image, min(image.size))


@pytest.mark.parametrize("name, ours, theirs", [
    ("evaluation, float", S.Compose([S.Resize(40), S.CenterCrop(32),
                                     S.ToTensor(), S.Normalize(MEAN, STD)]),
     T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)])),
    ("evaluation, uint8", S.Compose([S.Resize(40), S.CenterCrop(32)]),
     T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])),
    # max_size: some images' longer side limited to 60, their shorter under the crop's 40,
    # which is then zero-padded (torchvision's CenterCrop), before normalisation too.
    ("Resize max_size, CenterCrop padded, float",
     T.Compose([T.Resize(44, max_size=60), T.CenterCrop(40), T.ToTensor(),
                T.Normalize(MEAN, STD)]),
     T.Compose([T.Resize(44, max_size=60), T.CenterCrop(40), T.ToTensor(),
                T.Normalize(MEAN, STD)])),
    ("Resize max_size, CenterCrop padded, uint8",
     S.Compose([S.Resize(44, max_size=60, interpolation="bicubic"), S.CenterCrop((40, 42))]),
     T.Compose([T.Resize(44, max_size=60, interpolation=T.InterpolationMode.BICUBIC),
                T.CenterCrop((40, 42)), T.PILToTensor()])),
    # A Resize smaller than the crop: CenterCrop zero-pads on every side.
    ("Resize smaller than the crop, uint8", T.Compose([T.Resize(20), T.CenterCrop((27, 33))]),
     T.Compose([T.Resize(20), T.CenterCrop((27, 33)), T.PILToTensor()])),
    ("Resize smaller than the crop, float",
     T.Compose([T.Resize(17, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(32),
                T.ToTensor(), T.Normalize(MEAN, STD)]),
     T.Compose([T.Resize(17, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(32),
                T.ToTensor(), T.Normalize(MEAN, STD)])),
    ("whole-image crop, flipped",
     S.Compose([S.RandomResizedCrop(24, scale=(1, 1), ratio=(1, 1)),
                S.RandomHorizontalFlip(1.0), S.ToTensor()]),
     T.Compose([full_square_crop, T.Resize((24, 24)), T.RandomHorizontalFlip(1.0),
                T.ToTensor()])),
    ("whole-image crop, not flipped",
     S.Compose([S.RandomResizedCrop(24, scale=(1, 1), ratio=(1, 1)),
                S.RandomHorizontalFlip(0.0), S.PILToTensor()]),
     T.Compose([full_square_crop, T.Resize((24, 24)), T.PILToTensor()])),
])
def test_images_are_torchvisions_where_the_pipelines_are_the_same(images, name, ours, theirs):
    path, encoded = images
    got = stoker_batch(path, ours)
    want = torchvision_batch(encoded, theirs)
    assert got.dtype == want.dtype and got.shape == want.shape, name
    if got.dtype == torch.uint8:
        assert torch.equal(got, want), name
    else:
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
def test_bicubic_and_bilinear_are_pils_byte_for_byte(images, interpolation):
    path, encoded = images
    mode = T.InterpolationMode(interpolation)
    evaluation = T.Compose([T.Resize(37, mode), T.CenterCrop(30), T.PILToTensor()])
    assert torch.equal(stoker_batch(path, evaluation), torchvision_batch(encoded, evaluation))
    training = T.Compose([T.RandomResizedCrop(26, scale=(1, 1), ratio=(1, 1),
                                              interpolation=mode), T.PILToTensor()])
    expected = T.Compose([full_square_crop, T.Resize((26, 26), mode), T.PILToTensor()])
    assert torch.equal(stoker_batch(path, training), torchvision_batch(encoded, expected))


def test_non_square_outputs_are_torchvisions(images):
    path, encoded = images
    evaluation = T.Compose([T.Resize(40), T.CenterCrop((24, 31)), T.PILToTensor()])
    assert torch.equal(stoker_batch(path, evaluation), torchvision_batch(encoded, evaluation))
    crop = stoker_batch(path, T.Compose([T.RandomResizedCrop((20, 28)), T.ToTensor()]))
    assert crop.shape[1:] == (3, 20, 28)


def test_random_erasing_after_normalize_erases_one_rectangle_with_the_value(images):
    path, _ = images
    head = [T.RandomResizedCrop(24), T.ToTensor(), T.Normalize(MEAN, STD)]
    plain = stoker_batch(path, T.Compose(head), seed=3)
    value = (7.0, 8.0, 9.0)
    for erasing in (T.RandomErasing(p=1, value=value),
                    __import__("torchvision.transforms.v2").transforms.v2.RandomErasing(
                        p=1, value=value)):
        erased = stoker_batch(path, T.Compose(head + [erasing]), seed=3)
        for got, before in zip(erased, plain):
            changed = got != before
            rows = changed.any(dim=0).any(dim=1).nonzero().flatten()
            cols = changed.any(dim=0).any(dim=0).nonzero().flatten()
            assert len(rows) > 0
            box = (slice(None), slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1))
            assert torch.equal(got[box], torch.tensor(value).view(3, 1, 1).expand_as(got[box]))
            outside = torch.ones_like(changed)
            outside[box] = False
            assert torch.equal(got[outside], before[outside])
    noisy = stoker_batch(path, T.Compose(head + [T.RandomErasing(p=1, value="random")]), seed=3)
    assert abs(float((noisy - plain)[noisy != plain].std()) - 1.5) < 1.0  # N(0, 1) values


def test_flips_and_pixel_operations_translate_by_their_names(labelled):
    raw = torch.from_numpy(np.stack([pixels(i) for i in range(8)]))
    loader = stoker.Loader(labelled, batch_size=8, shuffle=False, batch_format="dict",
                           transforms={"image": T.Compose([T.RandomVerticalFlip(1.0),
                                                           T.RandomHorizontalFlip(1.0)])})
    assert torch.equal(next(iter(loader))["image"], raw.flip(-1).flip(-2))


def test_torchvision_pipelines_are_translated_with_torchvisions_pixels(images):
    path, encoded = images
    pipeline = T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)])
    torch.testing.assert_close(stoker_batch(path, pipeline),
                               torchvision_batch(encoded, pipeline), rtol=0, atol=0)
    training = T.Compose([T.RandomResizedCrop(24, scale=(1, 1), ratio=(1, 1)),
                          T.RandomHorizontalFlip(1.0), T.ToTensor()])
    expected = T.Compose([full_square_crop, T.Resize((24, 24)), T.RandomHorizontalFlip(1.0),
                          T.ToTensor()])
    torch.testing.assert_close(stoker_batch(path, {"image": training}),
                               torchvision_batch(encoded, expected), rtol=0, atol=0)


def test_dct_scaling_is_close_to_a_full_decode(images):
    path, _ = images
    exact = stoker_batch(path, S.Compose([S.Resize(40), S.CenterCrop(32), S.ToTensor()]))
    fast = stoker_batch(path, S.Compose([S.Resize(40, dct_scaling=True), S.CenterCrop(32),
                                         S.ToTensor()]))
    assert not torch.equal(exact, fast)  # the large JPEGs decoded at a reduced scale
    assert (exact - fast).abs().mean() < 0.02


def test_float_output_is_the_uint8_output_normalised(images):
    path, _ = images
    crop = S.RandomResizedCrop(28)
    as_uint8 = stoker_batch(path, S.Compose([crop, S.RandomHorizontalFlip()]), seed=4)
    normalised = stoker_batch(path, S.Compose([crop, S.RandomHorizontalFlip(), S.ToTensor(),
                                               S.Normalize(MEAN, STD)]), seed=4)
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    torch.testing.assert_close(normalised, (as_uint8 / 255.0 - mean) / std, rtol=0, atol=0)


def test_random_crops_follow_seed_epoch_and_sample_never_workers(images):
    path, _ = images
    pipeline = S.Compose([S.RandomResizedCrop(20), S.RandomHorizontalFlip(), S.ToTensor()])

    def epoch(e, **options):
        loader = stoker.Loader(path, batch_size=3, shuffle=False, transforms=pipeline, **options,
                               batch_format="dict")
        return torch.cat([b["image"] for b in loader.epoch(e)])

    reference = epoch(1, workers=0)
    assert reference.shape == (8, 3, 20, 20)
    assert 0.0 <= reference.min() and reference.max() <= 1.0
    assert torch.equal(epoch(1, workers=2), reference)
    assert torch.equal(epoch(1, workers=3, prefetch=1), reference)
    assert not torch.equal(epoch(2, workers=0), reference)
    assert not torch.equal(epoch(1, workers=0, seed=1), reference)


def test_uint8_fields_normalise_by_the_formula(labelled):
    def first(transforms):
        loader = stoker.Loader(labelled, batch_size=8, shuffle=False, transforms=transforms,
                               batch_format="dict")
        return next(iter(loader))["image"]

    raw = torch.from_numpy(np.stack([pixels(i) for i in range(8)]))
    assert torch.equal(first(None), raw)
    assert torch.equal(first({"image": S.PILToTensor()}), raw)
    torch.testing.assert_close(first({"image": S.ToTensor()}), raw / 255.0, rtol=0, atol=0)
    expected = (raw / 255.0 - 0.5) / 0.25
    for transform in (S.Normalize(0.5, 0.25), S.Compose([S.ToTensor(), S.Normalize([0.5], [0.25])]),
                      T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.25,))])):
        torch.testing.assert_close(first({"image": transform}), expected, rtol=0, atol=0)


def test_a_field_left_out(images):
    path, _ = images
    batch = next(iter(stoker.Loader(path, batch_size=4, shuffle=False,
                                    transforms={"image": None}, batch_format="dict")))
    assert list(batch) == ["label"]
    assert batch["label"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("transforms, message", [
    (S.CenterCrop(32), "field 'image' holds encoded images of varying size: its transforms "
                       "must start with RandomResizedCrop"),
    (S.Compose([S.RandomHorizontalFlip(), S.RandomResizedCrop(32)]),
     "must start with RandomResizedCrop"),
    (S.Compose([S.RandomResizedCrop(32), S.Normalize(0, 1), S.ToTensor()]),
     "after the crop, stoker supports nothing or ToTensor and/or Normalize, then RandomErasing"),
    (S.Compose([S.RandomResizedCrop(32), S.RandomErasing(), S.ToTensor()]), "after the crop"),
    (S.RandomResizedCrop(32, scale=(0.5, 0.1)), r"field 'image': crop scale \(0.5"),
    (T.RandomResizedCrop((32, 0)), "size must be a positive int or \\(h, w\\)"),
])
def test_unsupported_image_pipelines_say_what_is_supported(images, transforms, message):
    path, _ = images
    with pytest.raises(ValueError, match=message):
        stoker.Loader(path, batch_size=256, shuffle=True, transforms=transforms, batch_format="dict")


def test_a_corrupt_image_raises_naming_it_or_is_skipped(tmp_path):
    path = write_one_cut_image(tmp_path / "ds", 6, cut=4)
    pipeline = S.Compose([S.Resize(20), S.CenterCrop(16), S.ToTensor()])
    with pytest.raises(stoker.Error, match="dataset record 4"):
        list(stoker.Loader(path, batch_size=3, shuffle=False, transforms=pipeline,
                           batch_format="dict"))
    skipping = stoker.Loader(path, batch_size=3, shuffle=False, transforms=pipeline,
                             on_error="skip", batch_format="dict")
    assert [b["label"].tolist() for b in skipping] == [[0, 1, 2], [3, 5]]


def test_sizes_are_bounded_by_the_native_limit():
    limit = stoker._stoker.MAX_IMAGE_SIZE
    sizes = {(op["name"], p["name"]): p["max"] for op in stoker._stoker.operations()
             for p in op["params"] if p["name"] in ("size", "width", "resize")}
    assert set(sizes.values()) == {limit}, sizes
    assert S.RandomResizedCrop(limit).size == (limit, limit)
    assert S.CenterCrop((limit, 1)).size == (limit, 1)
    assert S.Resize(limit).size == limit
    for make in (S.RandomResizedCrop, S.Resize, S.CenterCrop):
        with pytest.raises(ValueError, match=rf"up to {limit}"):
            make(limit + 1)


# torchvision's reference presets: dtype steps and markers ------------------------------------

import torchvision.transforms.v2 as T2  # noqa: E402


@pytest.mark.parametrize("name, pipeline", [
    ("v1 preset, PILToTensor after the crop",
     T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor(),
                T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])),
    ("v2 preset", T2.Compose([T2.Resize(40, antialias=True), T2.CenterCrop(32),
                              T2.PILToTensor(), T2.ToDtype(torch.float32, scale=True),
                              T2.Normalize(MEAN, STD), T2.ToPureTensor()])),
])
def test_torchvisions_eval_presets_are_accepted_with_their_pixels(images, name, pipeline):
    path, encoded = images
    torch.testing.assert_close(stoker_batch(path, pipeline),
                               torchvision_batch(encoded, pipeline), rtol=0, atol=0, msg=name)


def test_markers_stand_anywhere_and_dtype_steps_are_totensor(images):
    """The dtype steps are ToTensor wherever they stand; a Resize after a marker is torch's
    resize of the tensor (v1's float32, v2's uint8: test_tensor_resize.py), before one PIL's."""
    path, encoded = images
    exact = stoker_batch(path, S.Compose([S.Resize(40), S.CenterCrop(32), S.ToTensor(),
                                          S.Normalize(MEAN, STD)]))
    pil_first = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor(),
                           T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])
    assert torch.equal(stoker_batch(path, pil_first), exact)
    needs_torchs_tensor_resize("bilinear", v2=False)
    needs_torchs_tensor_resize("bilinear", v2=True)
    for marker, module in ((T.PILToTensor(), T), (T2.ToImage(), T2)):
        on_tensors = module.Compose([marker, module.Resize(40), module.CenterCrop(32)])
        as_float = module.Compose([on_tensors, module.ConvertImageDtype(torch.float32),
                                   module.Normalize(MEAN, STD)])
        # v1's ConvertImageDtype divides by 255, v2's multiplies by 1 / 255: each bit for bit
        want = torchvision_batch(encoded, as_float).as_subclass(torch.Tensor)
        torch.testing.assert_close(stoker_batch(path, as_float), want, rtol=0, atol=0)
        want = torchvision_batch(encoded, on_tensors).as_subclass(torch.Tensor)
        assert torch.equal(stoker_batch(path, on_tensors), want), module


def test_torchvisions_v2_training_preset_is_stokers_pipeline(images):
    path, _ = images
    theirs = T2.Compose([T2.RandomResizedCrop(24, antialias=True), T2.RandomHorizontalFlip(0.5),
                         T2.PILToTensor(), T2.ToDtype(torch.float, scale=True),
                         T2.Normalize(MEAN, STD), T2.ToPureTensor()])
    ours = S.Compose([S.RandomResizedCrop(24), S.RandomHorizontalFlip(0.5),
                      S.ToTensor(unit_scale="multiply"), S.Normalize(MEAN, STD)])
    assert torch.equal(stoker_batch(path, theirs, seed=3), stoker_batch(path, ours, seed=3))
    # ToDtype multiplies by 1 / 255 where ToTensor divides by 255: other float32 values
    divides = S.Compose([*ours.transforms[:2], S.ToTensor(), S.Normalize(MEAN, STD)])
    assert not torch.equal(stoker_batch(path, theirs, seed=3), stoker_batch(path, divides, seed=3))


@pytest.mark.parametrize("step, message", [
    (T2.ToDtype(torch.float32, scale=False), r"^torchvision ToDtype\(dtype=torch.float32, "
     r"scale=False\): stoker converts images to torch.float32 with scale=True only$"),
    (T2.ToDtype(torch.float16, scale=True), r"^torchvision ToDtype\(dtype=torch.float16, "
     r"scale=True\): stoker converts"),
    (T.ConvertImageDtype(torch.float64), r"^torchvision ConvertImageDtype\(torch.float64\): "
     r"stoker converts images to torch.float32 \(torch.float\) only$"),
])
def test_other_dtypes_run_in_python(images, step, message):
    path, _ = images
    with pytest.raises(ValueError, match=message):
        S._stoker_transform(step)
    native = T.Compose([T.Resize(40), T.CenterCrop(32)])
    loader = stoker.Loader(path, batch_size=256, transforms=T.Compose([native, step]), shuffle=False,
                           batch_format="dict")
    assert [where for _, where in loader.plan["image"]] == ["native", "python"]
    got = next(iter(loader))["image"]
    assert torch.equal(got, step(stoker_batch(path, native)))


def test_every_step_stoker_cannot_run_is_named_at_once(images):
    path, _ = images
    pipeline = T2.Compose([T2.RandomResizedCrop(32, interpolation=T2.InterpolationMode.BICUBIC),
                           T2.RandomHorizontalFlip(), T2.TrivialAugmentWide(fill={"others": 0}),
                           T2.PILToTensor(),
                           T2.ToDtype(torch.float32, scale=True), T2.Normalize(MEAN, STD),
                           T2.GaussianBlur(3), T2.RandomErasing(0.1)])
    schema = stoker.Loader(path, batch_size=256, shuffle=True, transforms={"image": None})._native.schema
    with pytest.raises(ValueError) as raised:
        S.field_specs(pipeline, schema)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("field 'image': 2 steps stoker.Loader cannot run: torchvision v2 "
                              "TrivialAugmentWide with a fill per type ({'others': 0}) runs in "
                              "Python")
    assert "; torchvision transform GaussianBlur is not supported" in message
    assert "; supported: Compose, ToTensor" in message
    # The loader runs them: the crop (bicubic, the flip fused) natively, the rest in Python.
    loader = stoker.Loader(path, shuffle=True, batch_size=4, transforms=pipeline, batch_format="dict")
    assert [where for _, where in loader.plan["image"]] == ["native"] + ["python"] * 6
    assert loader.plan["image"][0][0].startswith(
        "random_resized_crop(size=32, width=0, scale=[0.08, 1.0], ratio=[0.75, "
        "1.3333333333333333], flip=0.5, interpolation='bicubic'")
    assert next(iter(loader))["image"].dtype == torch.float32


# The weights' eval transforms and the reference's preset objects, passed whole ---------------

@pytest.mark.parametrize("weights", ["ResNet50_Weights.IMAGENET1K_V2",
                                     "EfficientNet_B0_Weights.IMAGENET1K_V1",
                                     "ViT_B_16_Weights.IMAGENET1K_V1"])
def test_weights_transforms_run_natively_with_torchvisions_pixels(images, weights):
    import torchvision.models as models
    path, encoded = images
    enum, member = weights.split(".")
    preset = getattr(getattr(models, enum), member).transforms()
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=preset,
                           batch_format="dict")
    assert {where for _, where in loader.plan["image"]} == {"native"}
    torch.testing.assert_close(next(iter(loader))["image"], torchvision_batch(encoded, preset),
                               rtol=0, atol=0)
    # On a tensor (the reference's --backend tensor): torchvision's float32 resize of it.
    backend = needs_torchs_tensor_resize(preset.interpolation, v2=False)
    on_tensor = T.Compose([T.PILToTensor(), preset])
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=on_tensor,
                           batch_format="dict")
    assert f"backend='{backend}'" in loader.plan["image"][0][0]
    torch.testing.assert_close(next(iter(loader))["image"],
                               torchvision_batch(encoded, on_tensor), rtol=0, atol=0)


class ReferencePresetEval:
    """Shaped as torchvision's classification reference's ClassificationPresetEval: a callable
    holding its steps in ``.transforms``."""

    def __init__(self, crop_size, resize_size, interpolation):
        self.transforms = T2.Compose([
            T2.Resize(resize_size, interpolation=interpolation, antialias=True),
            T2.CenterCrop(crop_size), T2.PILToTensor(), T2.ToDtype(torch.float, scale=True),
            T2.Normalize(mean=MEAN, std=STD), T2.ToPureTensor()])

    def __call__(self, image):
        return self.transforms(image)


def test_a_reference_preset_object_is_flattened(images):
    path, encoded = images
    preset = ReferencePresetEval(30, 37, T2.InterpolationMode.BICUBIC)
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=preset,
                           batch_format="dict")
    assert {where for _, where in loader.plan["image"]} == {"native"}
    torch.testing.assert_close(next(iter(loader))["image"], torchvision_batch(encoded, preset),
                               rtol=0, atol=0)


# timm's create_transform --------------------------------------------------------------------

def test_timms_eval_transform_runs_natively_with_its_pixels(images):
    import timm.data
    path, encoded = images
    for interpolation in ("bilinear", "bicubic"):
        timms = timm.data.create_transform(30, is_training=False, interpolation=interpolation)
        loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=timms,
                               batch_format="dict")
        assert {where for _, where in loader.plan["image"]} == {"native"}
        torch.testing.assert_close(next(iter(loader))["image"],
                                   torchvision_batch(encoded, timms), rtol=0, atol=0)


def test_timms_train_transforms_run_natively_or_in_python(images):
    import timm.data
    path, _ = images
    plain = timm.data.create_transform(24, is_training=True, interpolation="random")
    loader = stoker.Loader(path, shuffle=True, batch_size=4, transforms=plain, batch_format="dict")
    assert {where for _, where in loader.plan["image"]} == {"native"}
    assert "interpolation='random'" in loader.plan["image"][0][0]
    assert next(iter(loader))["image"].shape == (4, 3, 24, 24)
    # timm's RandAugment and RandomErasing: native too (test_timm_transforms.py).
    augmented = timm.data.create_transform(24, is_training=True, re_prob=0.25,
                                           auto_augment="rand-m9-mstd0.5-inc1")
    loader = stoker.Loader(path, shuffle=True, batch_size=4, transforms=augmented, batch_format="dict")
    assert {where for _, where in loader.plan["image"]} == {"native"}
    assert loader.plan["image"][-1][0].startswith("timm_random_erasing(")
    assert next(iter(loader))["image"].dtype == torch.float32


# The augmentation policies ------------------------------------------------------------------

@pytest.mark.parametrize("policy", [T.TrivialAugmentWide(), T.RandAugment(num_ops=2, magnitude=9),
                                    T.AutoAugment(T.AutoAugmentPolicy.IMAGENET, fill=[9, 9, 9]),
                                    T.AugMix(severity=5, mixture_width=2, fill=[1, 2, 3])])
def test_torchvisions_v1_and_v2_policies_run_natively(images, policy):
    path, _ = images
    recipe = T.Compose([T.RandomResizedCrop(24, interpolation=T.InterpolationMode.BICUBIC),
                        T.RandomHorizontalFlip(), policy, T.PILToTensor(),
                        T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
                        T.RandomErasing(0.1)])

    def epoch(workers):
        loader = stoker.Loader(path, shuffle=True, batch_size=3, seed=2, workers=workers, transforms=recipe,
                               batch_format="dict")
        assert {where for _, where in loader.plan["image"]} == {"native"}
        return torch.cat([b["image"] for b in loader.epoch(1)])

    reference = epoch(0)
    assert reference.shape == (8, 3, 24, 24)
    assert torch.equal(epoch(2), reference)
    v2 = getattr(T2, type(policy).__name__)()
    loader = stoker.Loader(path, shuffle=True, batch_size=3, transforms=T2.Compose([T2.RandomResizedCrop(24), v2]),
                           batch_format="dict")
    assert [where for _, where in loader.plan["image"]] == ["native", "native"]
    assert next(iter(loader))["image"].shape == (3, 3, 24, 24)


def test_torchvisions_v2_policies_translate_with_their_parameters_and_version_v2():
    # v2's classes: v1's parameters and version="v2" (ops/*_test.cc: torchvision v2's own class
    # run with stoker's draws, pixel for pixel).
    cases = [(T.TrivialAugmentWide(num_magnitude_bins=7, fill=[1, 2, 3],
                                   interpolation=T.InterpolationMode.BICUBIC),
              T2.TrivialAugmentWide(num_magnitude_bins=7, fill=[1, 2, 3],
                                    interpolation=T2.InterpolationMode.BICUBIC)),
             (T.RandAugment(num_ops=3, magnitude=4, num_magnitude_bins=5, fill=7,
                            interpolation=T.InterpolationMode.BILINEAR),
              T2.RandAugment(num_ops=3, magnitude=4, num_magnitude_bins=5, fill=7,
                             interpolation=T2.InterpolationMode.BILINEAR)),
             (T.AutoAugment(T.AutoAugmentPolicy.SVHN, fill=[9, 9, 9]),
              T2.AutoAugment(T2.AutoAugmentPolicy.SVHN, fill=[9, 9, 9]))]
    for v1, v2 in cases:
        ours_v1, ours_v2 = S._stoker_transform(v1), S._stoker_transform(v2)
        assert type(ours_v1) is type(ours_v2) and ours_v1.version == "v1"
        assert ours_v2.params == {**ours_v1.params, "version": "v2"}
        with pytest.raises(ValueError, match=r"torchvision v2 .* with a fill per type"):
            S._stoker_transform(type(v2)(fill={"others": 4}))
    assert S._stoker_transform(T2.TrivialAugmentWide()).fill == []


def test_torchvisions_augmix_translates_with_its_parameters():
    theirs = T.AugMix(severity=7, mixture_width=4, chain_depth=2, alpha=0.5, all_ops=False,
                      interpolation=T.InterpolationMode.NEAREST, fill=[10, 20, 30])
    ours = S._stoker_transform(theirs)
    assert type(ours).__name__ == "AugMix"
    assert (ours.severity, ours.mixture_width, ours.chain_depth, ours.alpha, ours.all_ops,
            ours.interpolation, ours.fill) == (7, 4, 2, 0.5, False, "nearest", [10, 20, 30])
    assert S._stoker_transform(T.AugMix()).fill == []
    with pytest.raises(ValueError, match="augmix: interpolation must be one of nearest, bilinear"):
        S._stoker_transform(T.AugMix(interpolation=T.InterpolationMode.BICUBIC))
    with pytest.raises(ValueError, match="augmix: mixture_width must be a whole number in"):
        S._stoker_transform(T.AugMix(mixture_width=0))
    assert ours.kernels == "v1"
    # v2's, with its own draws and kernels (ops/augmix_test.cc: its pixels for the same draws).
    v2 = S._stoker_transform(T2.AugMix(severity=7, mixture_width=4, chain_depth=2, alpha=0.5,
                                       all_ops=False, interpolation=T2.InterpolationMode.NEAREST,
                                       fill=[10, 20, 30]))
    assert (v2.severity, v2.mixture_width, v2.chain_depth, v2.alpha, v2.all_ops,
            v2.interpolation, v2.fill, v2.kernels) == (7, 4, 2, 0.5, False, "nearest",
                                                       [10, 20, 30], "v2")
    assert S._stoker_transform(T2.AugMix(fill=4)).fill == [4]
    with pytest.raises(ValueError, match=r"torchvision v2 AugMix with a fill per type"):
        S._stoker_transform(T2.AugMix(fill={"others": 4}))


def test_random_apply_around_image_operations_is_native(images):
    for module in (T, T2):
        step = S._stoker_transform(module.RandomApply([module.RandomGrayscale(0.5)], p=0.4))
        assert type(step).__name__ == "RandomGrayscale" and step.p == pytest.approx(0.2)
    path, _ = images
    loader = stoker.Loader(path, shuffle=True, batch_size=4, batch_format="dict", transforms=T.Compose([
        T.RandomResizedCrop(24), T.RandomApply([T.RandomVerticalFlip(1.0)], p=0.3),
        T.PILToTensor(), T.RandomApply([T.ColorJitter(0.4, 0.4)], p=0.8)]))
    assert [where for _, where in loader.plan["image"]] == ["native", "native", "native"]
    assert loader.plan["image"][1][0].startswith("random_vertical_flip(p=0.3")
    # An operation without its own p runs in the native RandomApply.
    assert loader.plan["image"][2][0].startswith("random_apply(ops='[color_jitter:")
    assert next(iter(loader))["image"].shape == (4, 3, 24, 24)


def test_random_choice_of_crops_to_one_size_is_native(labelled):
    """torchvision's RandomChoice of crops that make one size runs natively (the chosen crop's
    pixels: ops/random_choice_test.cc); crops to two sizes run in Python, and a batch of
    them is one line naming the samples (torchvision's collate refuses them too)."""
    for module in (T, T2):
        loader = stoker.Loader(labelled, batch_size=8, shuffle=False, batch_format="dict",
                               transforms={"image": module.RandomChoice(
                                   [module.RandomCrop(4), module.RandomCrop(4, padding=2)])})
        assert [where for _, where in loader.plan["image"]] == ["native"]
        assert next(iter(loader))["image"].shape == (8, 1, 4, 4)
    mixed = stoker.Loader(labelled, batch_size=256, shuffle=True, batch_format="dict", transforms={"image": T.RandomChoice(
        [T.RandomCrop(4), T.RandomCrop(3)])})
    assert [where for _, where in mixed.plan["image"]] == ["python"]
    with pytest.raises(stoker.Error, match="a batch stacks one shape and dtype"):
        next(iter(mixed))


def test_random_crop_of_any_size_is_native_and_torchvisions_pixels(labelled):
    def loader(transform):
        return stoker.Loader(labelled, batch_size=8, shuffle=False, batch_format="dict",
                             transforms={"image": transform})

    for crop in (S.RandomCrop((4, 4), padding=1, padding_mode="reflect"), T.RandomCrop(4, padding=1),
                 T2.RandomCrop(4, padding=1)):
        native = loader(crop)
        assert [where for _, where in native.plan["image"]] == ["native"]
        assert next(iter(native))["image"].shape == (8, 1, 4, 4)
    # Smaller and larger than the image, the size after it its steps' and the batch's.
    smaller = loader(T.Compose([T.RandomCrop(3), T.ToTensor()]))
    assert next(iter(smaller))["image"].shape == (8, 1, 3, 3)
    larger = loader(T2.RandomCrop((5, 9), pad_if_needed=True, padding_mode="edge"))
    assert next(iter(larger))["image"].shape == (8, 1, 5, 9)
    # A crop as large as the padded image has one place: torchvision's pixels, v1 and v2 (whose
    # padding is [left, right, top, bottom]), padding left 1, top 0, right 2, bottom 3.
    records = [pixels(i) for i in range(8)]
    for mode in ("constant", "edge", "reflect", "symmetric"):
        v1 = T.RandomCrop((7, 7), padding=(1, 0, 2, 3), fill=5, padding_mode=mode)
        expected = np.stack([np.asarray(v1(Image.fromarray(r[0])))[None] for r in records])
        for crop in (v1, T2.RandomCrop((7, 7), padding=(1, 0, 2, 3), fill=5, padding_mode=mode)):
            assert np.array_equal(next(iter(loader(crop)))["image"].numpy(), expected), (crop,
                                                                                        mode)
    # v2 pads pad_if_needed's part in one step with the padding (pad_once, natively; its pixels
    # against torchvision v2's: ops/random_crop_test.cc).
    v2 = loader(T2.RandomCrop(7, padding=1, pad_if_needed=True, padding_mode="symmetric"))
    assert [where for _, where in v2.plan["image"]] == ["native"]
    assert v2.plan["image"][0][0].endswith("pad_once=True, fill=[0.0], padding_mode='symmetric')")
    assert next(iter(v2))["image"].shape == (8, 1, 7, 7)
    with pytest.raises(ValueError, match="random_crop: the crop 7 x 7 is larger than the padded "
                                         "image 6 x 6"):
        loader(S.RandomCrop((7, 7), padding=1))


def test_saturation_and_hue_on_one_channel_warn_and_leave_it_as_torchvision(tmp_path):
    """ColorJitter's saturation and hue leave a 1-channel image unchanged, as torchvision's do:
    stoker says so once at construction (also inside RandomApply); brightness alone, or 3
    channels, say nothing."""
    import warnings
    import numpy as np
    import torchvision.transforms as T
    gray = tmp_path / "gray"
    stoker.write_dataset(gray, [{"image": np.full((1, 6, 6), 7 * i, np.uint8), "label": i}
                                for i in range(4)])
    for jitter in (T.ColorJitter(saturation=0.4), T.ColorJitter(hue=0.1),
                   T.RandomApply([T.ColorJitter(0.2, 0.2, 0.2, 0.1)], p=0.5)):
        with pytest.warns(UserWarning, match="'image' has 1 channel: ColorJitter's saturation"):
            stoker.Loader(gray, shuffle=True, batch_size=2, transforms=T.Compose([T.PILToTensor(), jitter]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stoker.Loader(gray, shuffle=True, batch_size=2, transforms=T.ColorJitter(brightness=0.4))
        color = tmp_path / "color"
        stoker.write_dataset(color, [{"image": np.zeros((3, 6, 6), np.uint8), "label": 0}] * 2)
        stoker.Loader(color, shuffle=True, batch_size=2, transforms=T.ColorJitter(saturation=0.4, hue=0.1))
