"""FFCV: a .beton written by its DatasetWriter at its documented settings (`RGBImageField` in
"jpg" mode: every image decoded and re-encoded as JPEG at quality 90, at full size; FFCV cannot
store the original bytes), read by its Loader with `RandomResizedCropRGBImageDecoder`, flip,
`ToTorchImage` and (float32) `NormalizeImage`, `cores` worker threads, random order."""
import os

import numpy as np
import torch
from ffcv.fields import IntField, RGBImageField
from ffcv.fields.basics import IntDecoder
from ffcv.fields.rgb_image import CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder
from ffcv.loader import Loader, OrderOption
from ffcv.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
from ffcv.writer import DatasetWriter
from PIL import Image

import work

BETON = "images.beton"


class _Files:
    """(RGB PIL image, label) per file: what DatasetWriter.from_indexed_dataset takes."""

    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        with Image.open(path) as img:
            return img.convert("RGB"), label


def prepare(folder, files, store, max_side=None):
    """Full size: every image as a JPEG at quality 90. With max_side, FFCV's ImageNet setting
    (its write_imagenet.sh: `max_resolution`, "proportion" mode with compress_probability 0.5,
    quality 90): images over max_side resized, half of them stored as raw pixels."""
    os.makedirs(store)
    field = RGBImageField(write_mode="jpg", jpeg_quality=90)
    if max_side:
        field = RGBImageField(write_mode="proportion", max_resolution=max_side,
                              compress_probability=0.5, jpeg_quality=90)
    writer = DatasetWriter(os.path.join(store, BETON), {"image": field, "label": IntField()},
                           num_workers=os.cpu_count())
    writer.from_indexed_dataset(_Files(files))


def _loader(store, cores, order, seed, image_pipeline, batch=work.BATCH):
    labels = [IntDecoder(), ToTensor(), Squeeze()]
    return Loader(os.path.join(store, BETON), batch_size=batch, num_workers=cores, order=order,
                  seed=seed, drop_last=False, os_cache=True,
                  pipelines={"image": image_pipeline, "label": labels})


def batches(store, cores, dtype, seed):
    image = [RandomResizedCropRGBImageDecoder((work.SIZE, work.SIZE), scale=work.SCALE,
                                              ratio=work.RATIO), RandomHorizontalFlip()]
    if dtype == "float32":  # on the CPU, NormalizeImage works on the numpy batch (jitted)
        image += [NormalizeImage(np.array(work.MEAN) * 255, np.array(work.STD) * 255,
                                 np.float32)]
    image += [ToTensor(), ToTorchImage()]
    for images, labels in _loader(store, cores, OrderOption.RANDOM, seed, image):
        yield images.contiguous(), labels  # ToTorchImage gives a channels-last view


def eval_images(store):
    # FFCV's documented evaluation decoder: a centre crop of ratio 224/256, then resized.
    crop = CenterCropRGBImageDecoder((work.SIZE, work.SIZE), ratio=work.SIZE / work.EVAL_RESIZE)
    image = [crop, ToTensor(), ToTorchImage()]
    for images, _ in _loader(store, 1, OrderOption.SEQUENTIAL, 0, image, batch=64):
        yield from torch.unbind(images.contiguous())
