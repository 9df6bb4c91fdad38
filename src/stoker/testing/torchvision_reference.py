"""torchvision's and PIL's answers for image_resample_test (run by /usr/bin/python3).

  crops SEED WIDTH HEIGHT STOKER_DRAWS [WIDTH HEIGHT STOKER_DRAWS ...]
      For each image shape, draws as many crops as STOKER_DRAWS holds (lines "x y w h fallback")
      with torchvision's RandomResizedCrop.get_params (default scale and ratio; torch.manual_seed
      (SEED) once) and compares the two samples with scipy's two-sample Kolmogorov-Smirnov test.
      Prints one line per shape:
      "area_p=P log_ratio_p=P stoker_fallbacks=N torchvision_fallbacks=N".
  resample CASES_JSON
      For each case, writes what torchvision's PIL path gives (see run_case).
"""

import json
import sys

import numpy as np
import scipy.stats
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image


def crops(width, height, stoker_path):
    stoker = np.loadtxt(stoker_path, ndmin=2)
    n = len(stoker)
    image = Image.new("RGB", (width, height))
    # A fallback is the draw that calls torch.randint zero times (an accepted attempt calls it
    # twice); count the calls around each draw.
    calls = [0]
    randint = torch.randint

    def counting_randint(*args, **kwargs):
        calls[0] += 1
        return randint(*args, **kwargs)

    torch.randint = counting_randint
    rows = []
    fallbacks = 0
    for _ in range(n):
        before = calls[0]
        i, j, h, w = T.RandomResizedCrop.get_params(image, [0.08, 1.0], [3.0 / 4.0, 4.0 / 3.0])
        fallbacks += calls[0] == before
        rows.append((j, i, w, h))
    torch.randint = randint
    ref = np.array(rows, dtype=np.float64)
    area = width * height

    def features(a):
        return a[:, 2] * a[:, 3] / area, np.log(a[:, 2] / a[:, 3])

    s_area, s_ratio = features(stoker)
    t_area, t_ratio = features(ref)
    area_p = scipy.stats.ks_2samp(s_area, t_area).pvalue
    ratio_p = scipy.stats.ks_2samp(s_ratio, t_ratio).pvalue
    print(
        f"area_p={area_p:.6g} log_ratio_p={ratio_p:.6g} "
        f"stoker_fallbacks={int(stoker[:, 4].sum())} torchvision_fallbacks={fallbacks}"
    )


def load_image(case):
    pixels = np.fromfile(case["image"], dtype=np.uint8)
    return Image.fromarray(pixels.reshape(case["height"], case["width"], 3), "RGB")


def run_case(case):
    """Writes case["out"] + ".u8" (the resized uint8 pixels, CHW) and, for "train" and "eval",
    case["out"] + ".f32" (the float32 tensor of ToTensor + Normalize, CHW).

    train: torchvision's RandomResizedCrop path for a given crop: F.resized_crop (PIL crop, then
           resize BILINEAR, or case["interpolation"]) to (out_height, out_width), F.hflip when
           flip, then to_tensor and normalize.
    eval:  Resize(resize) + CenterCrop((out_height, out_width)), then to_tensor and normalize.
    box:   PIL's Image.resize((out_width, out_height), BILINEAR, box) of the whole image.
    """
    image = load_image(case)
    size = [case["out_height"], case["out_width"]]
    mode = T.InterpolationMode(case.get("interpolation", "bilinear"))
    if case["kind"] == "train":
        x, y, w, h = case["crop"]
        out = F.resized_crop(image, y, x, h, w, size, mode)
        if case["flip"]:
            out = F.hflip(out)
    elif case["kind"] == "eval":
        out = T.CenterCrop(size)(T.Resize(case["resize"], mode)(image))
    else:
        pil = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}
        out = image.resize((size[1], size[0]), pil[mode.value], box=case["box"])
    resized = np.asarray(out, dtype=np.uint8).transpose(2, 0, 1)
    np.ascontiguousarray(resized).tofile(case["out"] + ".u8")
    if case["kind"] != "box":
        tensor = F.normalize(F.to_tensor(out), case["mean"], case["std"])
        tensor.numpy().astype(np.float32).tofile(case["out"] + ".f32")


def main(argv):
    if argv[1] == "crops":
        torch.manual_seed(int(argv[2]))
        for k in range(3, len(argv), 3):
            crops(int(argv[k]), int(argv[k + 1]), argv[k + 2])
    elif argv[1] == "resample":
        with open(argv[2]) as f:
            for case in json.load(f):
                run_case(case)
    else:
        raise SystemExit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
