"""Skips a test of torchvision's tensor resize where stoker cannot give this torch's pixels.
stoker reproduces torch 2.11's antialiased kernels (uint8, and float32 as torchvision v1
resizes a tensor) and checks once a process that they give this torch's values; where they
do not (torch 2.4 sums its float32 resize in another order, values a few ulps apart, and its
uint8 bilinear differs by a level here and there), a tensor resize runs natively with PIL's
resampling and says so (test_tensor_resize.py's simulated kernels), and a test comparing
with torchvision's tensor pixels skips."""

import pytest

from stoker import transforms


def needs_torchs_tensor_resize(mode, v2: bool) -> None:
    """Skips the calling test where torchvision (`v2`: transforms.v2, else v1) resizes a uint8
    tensor in `mode` (an InterpolationMode or its name) on this torch and CPU otherwise than
    stoker can."""
    name = getattr(mode, "value", mode)
    dtype = "uint8" if v2 and transforms._v2_resizes_uint8(name) else "float32"
    if not transforms._kernel_is_torchs(name, dtype):
        pytest.skip(f"this torch's antialiased {dtype} {name} resize is not torch 2.11's, "
                    f"which stoker reproduces: stoker resamples as PIL does there, and says so")
