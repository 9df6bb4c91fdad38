#!/usr/bin/env python3
"""PIL's antialiased resize of resample_bench's cases, one core: the reference stoker's
resampler (image/resample.h) reproduces byte for byte, and torchvision's whole fused step
(resize, flip, ToTensor, Normalize) on the same crop. Random pixels, as resample_bench's; CPU
time per image (time.process_time), the median of --rounds rounds.

Usage: .venv/bin/python bench/pil_resize.py [--repeat 40] [--rounds 3]
"""

import argparse
import statistics
import time

import numpy as np
import torch
from PIL import Image
from torchvision import transforms as T

# resample_bench's BM_Resample cases: (width, height) of the crop, the output 224 x 224.
CASES = {"crop375x500": (375, 500), "crop350x350": (350, 350), "crop1200x900": (1200, 900),
         "up100x80": (100, 80)}
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def cpu_ms(step, repeat: int, rounds: int) -> float:
    step()
    times = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(repeat):
            step()
        times.append((time.process_time() - start) / repeat * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    whole = T.Compose([T.Resize((224, 224)), T.RandomHorizontalFlip(1.0), T.ToTensor(),
                       T.Normalize(MEAN, STD)])
    for name, (w, h) in CASES.items():
        image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        resize = cpu_ms(lambda: image.resize((224, 224), Image.BILINEAR), a.repeat, a.rounds)
        fused = cpu_ms(lambda: whole(image), a.repeat, a.rounds)
        print(f"{name}: PIL resize {resize:.3f} ms, torchvision resize+flip+ToTensor+Normalize "
              f"{fused:.3f} ms")


if __name__ == "__main__":
    main()
