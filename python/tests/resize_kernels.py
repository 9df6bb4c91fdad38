"""Skips a test of torchvision's tensor resize where stoker cannot give this torch's pixels.
stoker reproduces torch's antialiased kernels (uint8 as torch 2.11's; float32, as torchvision
v1 resizes a tensor, with the taps added as torch 2.11's wheel or torch 2.4's does) and checks
once a process which one gives this torch's values; where none does (torch 2.4's uint8
bilinear differs by a level here and there), a tensor resize runs natively with PIL's
resampling and says so (test_tensor_resize.py's simulated kernels), and a test comparing with
torchvision's tensor pixels skips."""

import pytest

from stoker import transforms


def needs_torchs_tensor_resize(mode, v2: bool) -> str:
    """stoker's backend for torchvision's (`v2`: transforms.v2, else v1) resize of a uint8
    tensor in `mode` (an InterpolationMode or its name) on this torch and CPU; skips the calling
    test where there is none."""
    name = getattr(mode, "value", mode)
    dtype = "uint8" if v2 and transforms._v2_resizes_uint8(name) else "float32"
    backend = transforms._torch_kernel(name, dtype)
    if backend is None:
        pytest.skip(f"this torch's antialiased {dtype} {name} resize is none that stoker "
                    f"reproduces: stoker resamples as PIL does there, and says so")
    return backend
