"""Resampling sources after ToImage (torchvision v2 on uint8 tensors): stoker's backend="tensor"
gives torch's antialiased uint8 resize byte for byte (the same filters as PIL's with fewer
fractional bits, set by each axis's largest weight); torchvision v1, which resizes a tensor in
float32, takes backend="tensor_float", torch's float32 resize rounded back, byte for byte."""

import io
import warnings

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2
from torchvision.transforms.v2.functional import _geometry
from PIL import Image

import stoker
from loader_datasets import encode
from resize_kernels import needs_torchs_tensor_resize
from stoker import _stoker, transforms

# Odd sizes and both orientations, none nearly square (RandomResizedCrop(scale=(1, 1),
# ratio=(1, 1)) then takes the central square, no draw); noise, so that a weight rounded
# otherwise changes pixels.
SIZES = [(97, 64), (64, 101), (80, 80), (123, 71), (51, 70), (130, 126), (33, 45), (300, 37)]
UINT8_KERNELS = _geometry._do_native_uint8_resize_on_cpu(T2.InterpolationMode.BILINEAR)


@pytest.fixture(scope="module")
def noise(tmp_path_factory):
    """(path, [PNG bytes by record]): images of random pixels, PNG so the decode is exact."""
    rng = np.random.default_rng(50)
    encoded = [encode(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "PNG") for w, h in SIZES]
    path = tmp_path_factory.mktemp("noise") / "ds"
    with stoker.DatasetWriter(path, {"image": "bytes", "label": "int64"}) as writer:
        for i, data in enumerate(encoded):
            writer.append({"image": data, "label": i})
    return path, encoded


def stoker_images(path, steps):
    loader = stoker.Loader(path, batch_size=len(SIZES), shuffle=False, batch_format="dict",
                           transforms=T2.Compose(steps))
    return loader, next(iter(loader))["image"]


def torchvision_images(encoded, steps):
    pipeline = T2.Compose(steps)
    return torch.stack([pipeline(Image.open(io.BytesIO(e)).convert("RGB")).as_subclass(
        torch.Tensor) for e in encoded])


def pipelines(mode):
    return {
        "Resize + CenterCrop": [T2.Resize(37, mode), T2.CenterCrop(30)],
        "Resize + CenterCrop, (h, w)": [T2.Resize(45, mode), T2.CenterCrop((40, 29))],
        "Resize max_size + CenterCrop padded": [T2.Resize(44, mode, max_size=60),
                                                T2.CenterCrop((40, 42))],
        "upscaling": [T2.Resize(150, mode), T2.CenterCrop(140)],
        "RandomResizedCrop of the whole square": [
            T2.RandomResizedCrop(26, scale=(1, 1), ratio=(1, 1), interpolation=mode)],
    }


@pytest.mark.parametrize("mode", [T2.InterpolationMode.BILINEAR, T2.InterpolationMode.BICUBIC])
def test_v2_sources_after_toimage_are_torchs_uint8_resize(noise, mode):
    if mode == T2.InterpolationMode.BILINEAR and not UINT8_KERNELS:
        pytest.skip("torch resizes uint8 bilinearly in float32 on this CPU")
    needs_torchs_tensor_resize(mode, v2=True)
    path, encoded = noise
    for name, steps in pipelines(mode).items():
        with_tensors = [T2.ToImage()] + steps
        loader, got = stoker_images(path, with_tensors)
        assert "notes" not in loader.plan, name
        assert "backend='tensor'" in loader.plan["image"][0][0] or \
            "backend=tensor" in loader.plan["image"][0][0], (name, loader.plan)
        want = torchvision_images(encoded, with_tensors)
        assert torch.equal(got, want), name
        # The same steps on PIL images are PIL's pixels, which differ here.
        _, on_pil = stoker_images(path, steps + [T2.PILToTensor()])
        assert torch.equal(on_pil, torchvision_images(encoded, steps + [T2.PILToTensor()])), name
        assert not torch.equal(on_pil, got), name


def test_a_choice_of_v2_crops_after_toimage_takes_the_tensor_backend(noise):
    needs_torchs_tensor_resize("bilinear", v2=True)
    path, _ = noise
    steps = [T2.ToImage(), T2.RandomChoice([T2.RandomResizedCrop(24),
                                            T2.Compose([T2.Resize(30), T2.CenterCrop(24)])])]
    loader, got = stoker_images(path, steps)
    assert got.shape == (len(SIZES), 3, 24, 24)
    assert loader.plan["image"][0][0].count("backend=tensor") == 2
    assert "notes" not in loader.plan


@pytest.mark.parametrize("mode", [T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC])
def test_v1_sources_after_piltotensor_are_torchs_float32_resize(noise, mode):
    """torchvision v1 resizes a tensor in float32 (and so does weights.transforms() on one)."""
    backend = needs_torchs_tensor_resize(mode, v2=False)
    path, encoded = noise
    for steps in ([T.PILToTensor(), T.Resize(37, mode), T.CenterCrop(30)],
                  [T.PILToTensor(), T.Resize(45, mode, max_size=60), T.CenterCrop((50, 42))],
                  [T.PILToTensor(), T.Resize(150, mode), T.CenterCrop(140)],
                  [T.PILToTensor(),
                   T.RandomResizedCrop(26, scale=(1, 1), ratio=(1, 1), interpolation=mode)]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loader, got = stoker_images(path, steps)
        assert f"backend='{backend}'" in loader.plan["image"][0][0], steps
        assert torch.equal(got, torchvision_images(encoded, steps)), steps


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
def test_the_float_kernel_is_torchs_down_and_up_with_few_taps_and_many(interpolation):
    """stoker's float32 resize against torch's on noise, value for value, with the taps added
    as this torch adds them (torch 2.11's wheel: 1 + 4 floor((n - 1) / 4) rounded products,
    then fused; torch 2.4's: all fused), the other order differing: every size pair here, from
    1 tap to 80. Not an output 1 pixel wide: torch's float kernel then gives every row the
    first's value where the height changes too (torch 2.11; its uint8 kernel does not), which
    stoker does not copy."""
    # The order of the torches measured (scripts/test_torch.sh), not merely skipped there.
    known = {(2, 4): "tensor_float_fused", (2, 11): "tensor_float"}
    minor = tuple(int(v) for v in torch.__version__.split(".")[:2])
    if minor in known:
        assert transforms._torch_kernel(interpolation, "float32") == known[minor]
    backend = needs_torchs_tensor_resize(interpolation, v2=False)
    (other,) = set(transforms._FLOAT_BACKENDS) - {backend}
    rng = np.random.default_rng(3)
    differs = 0
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 160, 2))
        out_h, out_w = int(rng.integers(1, 120)), int(rng.integers(2, 120))
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ours = np.frombuffer(_stoker.torch_float_resize(pixels, out_h, out_w, interpolation,
                                                        backend), dtype=np.float32)
        ours = ours.reshape(out_h, out_w, 3)
        tensor = torch.from_numpy(pixels).permute(2, 0, 1)
        theirs = torch.nn.functional.interpolate(tensor[None].float(), size=(out_h, out_w),
                                                 mode=interpolation, antialias=True,
                                                 align_corners=False)[0]
        # Every float32 value, before the rounding; and torchvision v1's uint8 from them.
        assert np.array_equal(ours, theirs.permute(1, 2, 0).numpy()), (h, w, out_h, out_w)
        v1 = T.functional.resize(tensor, [out_h, out_w], T.InterpolationMode(interpolation),
                                 antialias=True)
        rounded = np.round(np.clip(ours, 0, 255) if interpolation == "bicubic" else ours)
        assert np.array_equal(rounded.astype(np.uint8), v1.permute(1, 2, 0).numpy())
        otherwise = np.frombuffer(_stoker.torch_float_resize(pixels, out_h, out_w,
                                                             interpolation, other),
                                  dtype=np.float32)
        differs += not np.array_equal(otherwise, ours.reshape(-1))
    assert differs > 30  # the two orders are told apart


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
def test_the_uint8_kernel_is_torchs_down_and_up(interpolation):
    """stoker's resize at torch's precision against torch's antialiased uint8 kernel on noise,
    byte for byte (what stoker.transforms checks once a process before it takes
    backend="tensor")."""
    if interpolation == "bilinear" and not UINT8_KERNELS:
        pytest.skip("torch resizes uint8 bilinearly in float32 on this CPU")
    needs_torchs_tensor_resize(interpolation, v2=True)
    rng = np.random.default_rng(5)
    for _ in range(40):
        h, w = (int(v) for v in rng.integers(2, 160, 2))
        out_h, out_w = (int(v) for v in rng.integers(2, 120, 2))
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ours = np.frombuffer(_stoker.torch_uint8_resize(pixels, out_h, out_w, interpolation),
                             dtype=np.uint8).reshape(3, out_h, out_w)
        theirs = torch.nn.functional.interpolate(
            torch.from_numpy(pixels).permute(2, 0, 1)[None], size=(out_h, out_w),
            mode=interpolation, antialias=True, align_corners=False)[0]
        assert np.array_equal(ours, theirs.numpy()), (h, w, out_h, out_w)


def test_a_torch_whose_uint8_kernel_differs_leaves_a_v2_resize_to_torchvision(noise, monkeypatch):
    """Where this torch's uint8 resize is not stoker's (torch 2.4's bilinear differs by a level
    here and there), a v2 Resize after ToImage is not run as backend="tensor" with other pixels:
    the plan says why. Simulated by a kernel off by one level."""
    from stoker import transforms as transforms_module

    def off_by_one(pixels, height, width, interpolation):
        return bytes((b + 1) % 256 for b in real(pixels, height, width, interpolation))

    real = _stoker.torch_uint8_resize
    monkeypatch.setattr(_stoker, "torch_uint8_resize", off_by_one)
    monkeypatch.setattr(transforms_module, "_KERNEL_CHECKED", {})
    path, _ = noise
    with pytest.warns(UserWarning, match="this torch resizes a uint8 tensor otherwise than stoker"):
        loader, _ = stoker_images(path, [T2.ToImage(), T2.Resize(37, T2.InterpolationMode.BICUBIC),
                                         T2.CenterCrop(30)])
    assert "backend='tensor'" not in loader.plan["image"][0][0]


def test_a_torch_whose_float_kernel_differs_leaves_a_v1_resize_to_pil_resampling(noise,
                                                                               monkeypatch):
    """Where this torch's float32 resize is neither order stoker reproduces, a
    v1 Resize after PILToTensor runs natively with PIL's resampling, not as
    backend="tensor_float" with other values, and says so. Simulated by a kernel off by one."""
    from stoker import transforms as transforms_module

    def off_by_one(pixels, height, width, interpolation, backend):
        values = np.frombuffer(real(pixels, height, width, interpolation, backend),
                               dtype=np.float32)
        return (values + 1).tobytes()

    real = _stoker.torch_float_resize
    monkeypatch.setattr(_stoker, "torch_float_resize", off_by_one)
    monkeypatch.setattr(transforms_module, "_KERNEL_CHECKED", {})
    path, encoded = noise
    steps = [T.PILToTensor(), T.Resize(37, T.InterpolationMode.BICUBIC), T.CenterCrop(30)]
    with pytest.warns(UserWarning, match="this torch resizes a tensor in float32 otherwise"):
        loader, got = stoker_images(path, steps)
    assert "tensor_float" not in loader.plan["image"][0][0]
    assert "backend='pil'" in loader.plan["image"][0][0]
    on_pil = [T.Resize(37, T.InterpolationMode.BICUBIC), T.CenterCrop(30), T.PILToTensor()]
    assert torch.equal(got, torchvision_images(encoded, on_pil))


def test_a_v2_resize_without_antialiasing_stays_on_pil_resampling_and_says_why(noise):
    path, _ = noise
    for antialias in (False, None):  # None is False on a tensor
        steps = [T2.ToImage(), T2.Resize(37, antialias=antialias), T2.CenterCrop(30)]
        with pytest.warns(UserWarning, match="antialias=False, torch's resize without antialias"):
            loader, _ = stoker_images(path, steps)
        assert "backend='pil'" in loader.plan["image"][0][0]


def test_stokers_own_sources_take_the_backend_as_written(noise):
    from stoker import transforms as S

    path, encoded = noise
    _, got = stoker_images(path, [S.Resize(37, backend="tensor"), S.CenterCrop(30)])
    want = torchvision_images(encoded, [T2.ToImage(), T2.Resize(37), T2.CenterCrop(30)])
    if UINT8_KERNELS:
        assert torch.equal(got, want)
    with pytest.raises(ValueError, match="Resize: backend must be pil or tensor or tensor_float "
                                         "or tensor_float_fused, not 'gpu'"):
        S.Resize(37, backend="gpu")


def test_a_float_backend_is_its_order_of_sums_rounded(tmp_path):
    """backend="tensor_float" and "tensor_float_fused", whatever this torch's: the kernel's
    values in that order, rounded; on an image large enough that the two orders, a few ulps
    apart, round some pixel apart."""
    from stoker import transforms as S

    pixels = np.random.default_rng(8).integers(0, 256, (700, 900, 3), dtype=np.uint8)
    path = tmp_path / "ds"
    with stoker.DatasetWriter(path, {"image": "bytes", "label": "int64"}) as writer:
        writer.append({"image": encode(pixels, "PNG"), "label": 0})
    got = {}
    for backend in transforms._FLOAT_BACKENDS:
        loader = stoker.Loader(path, batch_size=1, shuffle=False, batch_format="dict",
                               transforms=S.Resize(300, backend=backend, interpolation="bicubic"))
        got[backend] = next(iter(loader))["image"][0].permute(1, 2, 0).numpy()
        values = np.frombuffer(_stoker.torch_float_resize(pixels, 300, 385, "bicubic", backend),
                               dtype=np.float32).reshape(300, 385, 3)
        assert np.array_equal(got[backend], np.round(np.clip(values, 0, 255)).astype(np.uint8))
    assert not np.array_equal(got["tensor_float"], got["tensor_float_fused"])
