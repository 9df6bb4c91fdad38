"""The translation honours the torchvision backend each native operation equals (the registry's
"backend", test_backends.py): a torchvision step runs on PIL images until the first
PILToTensor/ToImage/ToTensor/ConvertImageDtype of the user's Compose and on uint8 tensors after
it; a step whose native pixels are the other backend's runs in Python, with torchvision's own
pixels for the same draws, and loader.plan says why; a v2 resampling source after ToImage
resamples as torch does a uint8 tensor."""

import warnings

import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2
from PIL import Image

import stoker
from stoker import transforms as S
from stoker._python_steps import sample_seed
from resize_kernels import needs_torchs_tensor_resize

CROP = [T.Resize(40), T.CenterCrop(32)]  # no draws: the native pixels are torchvision's


def loader(path, steps):
    return stoker.Loader(path, batch_size=3, seed=5, shuffle=True, batch_format="dict",
                         transforms=T.Compose(steps))


def where(made) -> list:
    return [place for _, place in made.plan["image"]]


def python_pixels_are_torchvisions(path, tail, backend):
    """Every sample of `tail` in Python is torchvision's `tail` on the native crop, on a PIL
    image (backend "pil") or its uint8 tensor (after PILToTensor), with the sample's seed."""
    native = [b["image"] for b in loader(path, CROP + [T.PILToTensor()]).epoch(0)]
    made = loader(path, CROP + ([] if backend == "pil" else [T.PILToTensor()]) + tail)
    for index, batch in enumerate(made.epoch(0)):
        position = made.state_dict()["position"]
        for slot, got in enumerate(batch["image"]):
            image = native[index][slot]
            if backend == "pil":
                image = Image.fromarray(image.numpy().transpose(1, 2, 0))
            torch.manual_seed(sample_seed(5, 0, 0, position, slot))
            want = T.Compose(tail)(image)
            assert torch.equal(got, want), (index, slot)


def test_a_step_on_the_other_backend_runs_in_python_with_torchvisions_pixels(images):
    path, _ = images
    tail = [T.RandomAdjustSharpness(0.3, p=0.5)]  # stoker's is PIL's: here a tensor's
    made = loader(path, CROP + [T.PILToTensor()] + tail)
    assert where(made) == ["native", "python"]
    assert made.plan["notes"] == {"image": [
        "RandomAdjustSharpness and the steps after it run in Python: RandomAdjustSharpness on a "
        "uint8 tensor: stoker's equals torchvision's PIL kernels"]}
    python_pixels_are_torchvisions(path, tail, "tensor")


def test_the_classic_v1_pipeline_is_native_with_pils_color_jitter(images):
    """ColorJitter on a PIL image is color_jitter's PIL backend (its pixels against
    torchvision's PIL functions for the same factors: ops/color_jitter_test.cc)."""
    path, _ = images
    classic = [T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4),
               T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)]
    made = loader(path, classic)
    assert where(made) == ["native"] * 3
    assert made.plan["image"][1][0].endswith("backend='pil')")
    assert next(iter(made))["image"].shape == (3, 3, 24, 24)
    made = loader(path, CROP + [T.RandomApply([T.ColorJitter(0.4, 0.4)], p=0.8), T.ToTensor()])
    assert where(made) == ["native"] * 3
    assert "backend=pil]" in made.plan["image"][1][0]


def test_color_jitter_and_grey_take_the_backend_of_their_place(images):
    path, _ = images
    for steps in ([T.PILToTensor(), T.ColorJitter(0.4, 0.4, 0.4, 0.1)],
                  [T2.ToImage(), T2.ColorJitter(0.4, 0.4, 0.4, 0.1)],
                  [T.PILToTensor(), T.RandomGrayscale()]):
        made = loader(path, CROP + steps)
        assert where(made) == ["native", "native"]
        assert made.plan["image"][1][0].endswith("backend='tensor')")
        assert "notes" not in made.plan
    made = loader(path, CROP + [T.RandomGrayscale(), T.PILToTensor()])
    assert made.plan["image"][1][0] == "random_grayscale(p=0.1, backend='pil')"


def test_a_policy_on_a_tensor_is_native_with_the_tensor_kernels(images):
    """The reference's --backend tensor: a policy after PILToTensor/ToImage runs natively with
    backend='tensor' (its pixels against torchvision's on tensors for the same draws:
    ops/trivial_augment_wide_test.cc, rand_augment_test.cc, auto_augment_test.cc)."""
    path, _ = images
    bilinear = T2.InterpolationMode.BILINEAR
    for to_tensor, policy in ((T.PILToTensor(), T.TrivialAugmentWide()),
                              (T2.ToImage(), T2.TrivialAugmentWide(interpolation=bilinear)),
                              (T2.ToImage(), T2.RandAugment()), (T.PILToTensor(),
                                                                 T.AutoAugment(fill=[5, 6, 7]))):
        made = loader(path, CROP + [to_tensor, policy])
        assert where(made) == ["native", "native"]
        assert "backend='tensor'" in made.plan["image"][1][0]
        assert "notes" not in made.plan
        assert next(iter(made))["image"].shape == (3, 3, 32, 32)
    # On a PIL image (before PILToTensor), the policies are PIL's.
    made = loader(path, CROP + [T.TrivialAugmentWide(), T.PILToTensor()])
    assert where(made) == ["native", "native"]
    assert "backend='pil'" in made.plan["image"][1][0]


def test_a_policy_on_a_tensor_its_kernels_lack_runs_in_python(images):
    """A fill past 255 on a tensor runs in Python, with torchvision's tensor pixels for the
    sample's seed, and the plan says why; so does bicubic, where torchvision itself refuses a
    tensor (its error, named with the sample)."""
    path, _ = images
    over = T.TrivialAugmentWide(fill=[300])
    made = loader(path, CROP + [T.PILToTensor(), over])
    assert where(made) == ["native", "python"]
    assert made.plan["notes"]["image"] == [
        "TrivialAugmentWide and the steps after it run in Python: TrivialAugmentWide on a uint8 "
        "tensor with fill [300.0]: stoker's tensor kernels fill from 0 to 255"]
    python_pixels_are_torchvisions(path, [over], "tensor")
    bicubic = T2.TrivialAugmentWide(interpolation=T2.InterpolationMode.BICUBIC)
    made = loader(path, CROP + [T2.ToImage(), bicubic])
    assert where(made) == ["native", "python"]
    assert "TrivialAugmentWide bicubic on a uint8 tensor: stoker's tensor kernels sample " \
        "nearest or bilinear" in made.plan["notes"]["image"][0]
    with pytest.raises(stoker.Error, match=r"sample \d+ of batch 0 .*'bicubic' is unsupported "
                                           r"with Tensor input"):
        list(made)


def test_operations_equal_on_both_backends_are_native_anywhere(images):
    path, _ = images
    both = [T.RandomHorizontalFlip(), T.RandomInvert(), T.RandomPosterize(3),
            T.RandomSolarize(100), T.RandomAutocontrast(), T.RandomEqualize()]
    for steps in (both + [T.PILToTensor()], [T.PILToTensor()] + both):
        assert set(where(loader(path, CROP + steps))) == {"native"}
    # A combinator is as its operations are: sharpness (PIL) in one on a tensor is Python's.
    made = loader(path, CROP + [T.PILToTensor(),
                                T.RandomChoice([T.RandomInvert(), T.RandomAdjustSharpness(2)])])
    assert where(made) == ["native", "python"]
    assert "RandomChoice on a uint8 tensor: stoker's equals torchvision's PIL kernels" in \
        made.plan["notes"]["image"][0]


def test_autocontrast_on_a_tensor_is_native_with_that_versions_tensor_kernels(images):
    """RandomAutocontrast after PILToTensor: torchvision's tensor kernels (v1's and v2's round
    otherwise, and PIL's otherwise again), native, pixel for pixel."""
    path, _ = images
    crops = [b["image"] for b in loader(path, CROP + [T.PILToTensor()]).epoch(0)]
    stretched = 0
    for module in (T, T2):
        made = loader(path, CROP + [T.PILToTensor(), module.RandomAutocontrast(p=1.0)])
        assert set(where(made)) == {"native"}
        for batch, native in zip(made.epoch(0), crops):
            for got, crop in zip(batch["image"], native):
                want = module.functional.autocontrast(crop)
                assert torch.equal(got, want)
                stretched += not torch.equal(want, crop)
    assert stretched > 0


def test_stokers_own_classes_are_taken_as_written(images):
    path, _ = images
    made = loader(path, [S.Resize(40), S.CenterCrop(32), S.ColorJitter(0.4, 0.4),
                         S.TrivialAugmentWide()])
    assert set(where(made)) == {"native"}


def test_a_v2_crop_after_toimage_resamples_as_torch_does_a_tensor(images):
    """Its pixels against torchvision's: test_tensor_resize.py."""
    backend = needs_torchs_tensor_resize("bilinear", v2=True)
    path, _ = images
    steps = [T2.ToImage(), T2.RandomResizedCrop(24), T2.RandomHorizontalFlip(),
             T2.ToDtype(torch.float32, scale=True)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = loader(path, steps)
    assert set(where(made)) == {"native"}
    assert f"backend='{backend}'" in made.plan["image"][0][0]
    assert "notes" not in made.plan
    before = loader(path, [T2.RandomResizedCrop(24), T2.ToImage()])  # on the PIL image
    assert "backend='pil'" in before.plan["image"][0][0]
