"""Masks stored as PNGs by the detection importers (``stoker.convert("coco", ...)``): one
grayscale PNG of an image's N masks stacked, read back as torchvision's uint8 [N, H, W]."""

import io

import numpy as np

__all__ = ["decode_masks"]


def decode_masks(png, height, width):
    """The uint8 [N, H, W] tensor of the stacked masks in `png` (bytes, or a uint8 tensor as
    ``RawBytes`` loads it); empty `png` is N = 0. Raises ValueError when the PNG is not a
    whole number of `height` x `width` masks."""
    import torch  # imported here: the package imports without torch
    from PIL import Image
    height, width = int(height), int(width)
    if isinstance(png, torch.Tensor):
        png = png.numpy().tobytes()
    if len(png) == 0:
        return torch.zeros((0, height, width), dtype=torch.uint8)
    with Image.open(io.BytesIO(png)) as opened:
        pixels = np.asarray(opened)
    rows, columns = pixels.shape[:2]
    if pixels.ndim != 2 or columns != width or rows % height != 0:
        raise ValueError(f"masks: a {columns}x{rows} PNG is not a stack of {width}x{height} "
                         "masks")
    return torch.from_numpy(pixels.reshape(rows // height, height, width).copy())
