#!/usr/bin/env python3
"""torch's own antialiased float32 resize of a uint8 image, one thread: the kernel stoker's
`backend=tensor_float` reproduces (image/torch_float_resize.h; its own time: resample_bench's
BM_TorchFloatResize, the same cases). Converted to float32, resized to 224 x 224, rounded back
to uint8, as torchvision v1 resizes a tensor.

Usage: .venv/bin/python bench/torch_resize.py [--repeat 50]
"""

import argparse
import time

import torch

# resample_bench's cases 1 and 3: (height, width) of the crop.
CASES = {"crop375x500": (500, 375), "crop1200x900": (900, 1200)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=50)
    a = p.parse_args()
    torch.set_num_threads(1)
    for name, (h, w) in CASES.items():
        x = torch.randint(0, 256, (1, 3, h, w), dtype=torch.uint8)
        for mode in ("bilinear", "bicubic"):
            def resize():
                y = torch.nn.functional.interpolate(x.float(), size=(224, 224), mode=mode,
                                                    antialias=True)
                return y.clamp(0, 255).round().to(torch.uint8)
            for _ in range(5):
                resize()
            start = time.perf_counter()
            for _ in range(a.repeat):
                resize()
            print(f"{name} {mode}: {(time.perf_counter() - start) / a.repeat * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
