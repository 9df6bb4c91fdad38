"""NVIDIA DALI, CPU only (`device_id=None`): its file reader, the fused decode-and-random-crop
operator (libjpeg-turbo decoding only the crop's region), resize with antialias, and
crop_mirror_normalize, handed over by its PyTorch iterator.

The recipe works (recipes.py): its auto_aug policies (trivial_augment_wide; rand_augment for
timm's, 2 ops at magnitude 9 of 11 bins, increasing, without timm's magnitude noise and
per-op probability 0.5) on the crop (the flip after them, in crop_mirror_normalize: the same
distribution), RandomErasing as its `erase` of a region drawn as torchvision draws it
(clamped instead of redrawn; constant 0 where timm's "pixel" mode fills noise), and
MixUp/CutMix in PyTorch on the batch: DALI has none.

The detection works (detection.py): its COCO reader (ltrb boxes, relative to the image) and
decoder, then, for lsj, its COCO example's augmentation (random_bbox_crop, the box-aware crop
of SSD, + slice, resize to the work's size), bb_flip + flip, the image to float; each batch
run through `pipe.run()` (its PyTorch iterator takes no batch of differing shapes), the boxes
scaled to pixels and the targets' dicts made in PyTorch. The segmentation work: its
operators on gray copies of the class maps (segmentation_batches)."""
import math
import os

import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali import pipeline_def
from nvidia.dali.auto_aug import rand_augment, trivial_augment
from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

import detection
import recipes
import segmentation
import work

# DALI reads the original files.
from peer_torchvision_pil import prepare  # noqa: F401,E402


def _reader(store, seed, shuffle):
    files = work.read_file_list(store)
    return fn.readers.file(files=[p for p, _ in files], labels=[label for _, label in files],
                           random_shuffle=shuffle, seed=seed, name="reader")


def _finish(images, dtype, mirror=0):
    mean = [255 * m for m in work.MEAN] if dtype == "float32" else [0.0, 0.0, 0.0]
    std = [255 * s for s in work.STD] if dtype == "float32" else [1.0, 1.0, 1.0]
    out = types.FLOAT if dtype == "float32" else types.UINT8
    return fn.crop_mirror_normalize(images, dtype=out, output_layout="CHW", mean=mean, std=std,
                                    mirror=mirror)


def batches(store, cores, dtype, seed):
    @pipeline_def(batch_size=work.BATCH, num_threads=cores, device_id=None, seed=seed,
                  prefetch_queue_depth=2)
    def train():
        jpegs, labels = _reader(store, seed, shuffle=True)
        images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                               random_area=list(work.SCALE),
                                               random_aspect_ratio=list(work.RATIO))
        images = fn.resize(images, resize_x=work.SIZE, resize_y=work.SIZE, antialias=True,
                           interp_type=types.INTERP_LINEAR)
        return _finish(images, dtype, mirror=fn.random.coin_flip()), labels

    pipe = train()
    pipe.build()
    for out in DALIGenericIterator(pipe, ["image", "label"], reader_name="reader",
                                   last_batch_policy=LastBatchPolicy.PARTIAL):
        yield out[0]["image"], out[0]["label"]


def _detection_pipeline(store, cores, w, seed):
    coco = detection.read_set(store)

    @pipeline_def(batch_size=detection.BATCH, num_threads=cores, device_id=None, seed=seed,
                  prefetch_queue_depth=2)
    def train():
        jpegs, boxes, labels = fn.readers.coco(
            file_root=coco["images"], annotations_file=coco["annotations"], ltrb=True,
            ratio=True, skip_empty=True, avoid_class_remapping=True, random_shuffle=True,
            seed=seed, name="reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        if w.augmentation == "lsj":
            begin, size, boxes, labels = fn.random_bbox_crop(
                boxes, labels, aspect_ratio=[0.5, 2.0], thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9],
                scaling=[0.3, 1.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50)
            images = fn.slice(images, begin, size, out_of_bounds_policy="trim_to_shape")
            images = fn.resize(images, resize_x=w.size, resize_y=w.size, antialias=True,
                               interp_type=types.INTERP_LINEAR)
        flip = fn.random.coin_flip(probability=0.5)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[0.0, 0.0, 0.0], std=[255.0, 255.0, 255.0],
                                          mirror=flip)
        return images, boxes, labels

    pipe = train()
    pipe.build()
    return pipe


def detection_batches(store, cores, w, seed):
    """Whole batches of the epoch (the reader's size over the batch), as the reference's
    collate_fn gives them."""
    import torch
    pipe = _detection_pipeline(store, cores, w, seed)
    for _ in range(pipe.epoch_size("reader") // detection.BATCH):
        images, boxes, labels = pipe.run()
        out, targets = [], []
        for k in range(len(images)):
            image = torch.from_numpy(images.at(k))
            height, width = image.shape[1:]
            scale = torch.tensor([width, height, width, height], dtype=torch.float32)
            out.append(image)
            targets.append({"boxes": torch.from_numpy(boxes.at(k)).reshape(-1, 4) * scale,
                            "labels": torch.from_numpy(labels.at(k)).reshape(-1).long()})
        yield tuple(out), tuple(targets)


def _gray_class_maps(store):
    """[(image, class map)] of the segmentation split with each class map as a gray PNG of its
    indices (STORE-dali-masks/, made once): its decoders.image gives a palette PNG's colours,
    not its indices."""
    import numpy as np
    from PIL import Image
    folder = store.rstrip("/") + "-dali-masks"
    pairs = []
    for image, mask in work.read_file_list(store):
        gray = os.path.join(folder, os.path.basename(mask))
        if not os.path.exists(gray):
            os.makedirs(folder, exist_ok=True)
            with Image.open(mask) as png:
                Image.fromarray(np.array(png), mode="L").save(gray + ".part.png")
            os.replace(gray + ".part.png", gray)
        pairs.append((image, gray))
    return pairs


def segmentation_batches(store, cores, w, seed):
    """The class maps' gray copies made (before the timing starts: this call is not lazy),
    then the batches of _segmentation_stream."""
    return _segmentation_stream(_gray_class_maps(store), cores, seed)


def _segmentation_stream(pairs, cores, seed):
    """The preset with its operators: a shorter side drawn from RandomResize's integers, the
    image and class map resized to it (bilinear with antialias; nearest), flipped, cropped to
    CROP at a uniform position (padded with 0 and 255 where smaller), normalised; the class
    map as int64. Two file readers, one seed: the same order."""
    @pipeline_def(batch_size=segmentation.BATCH, num_threads=cores, device_id=None,
                  seed=seed, prefetch_queue_depth=2)
    def train():
        jpegs, _ = fn.readers.file(files=[i for i, _ in pairs], random_shuffle=True,
                                   seed=seed, name="reader")
        pngs, _ = fn.readers.file(files=[m for _, m in pairs], random_shuffle=True, seed=seed)
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        masks = fn.decoders.image(pngs, device="cpu", output_type=types.GRAY)
        short = fn.random.uniform(values=list(range(segmentation.BASE_SIZE // 2,
                                                    2 * segmentation.BASE_SIZE)))
        images = fn.resize(images, resize_shorter=short, antialias=True,
                           interp_type=types.INTERP_LINEAR)
        masks = fn.resize(masks, resize_shorter=short, interp_type=types.INTERP_NN)
        flip = fn.random.coin_flip()
        x, y = fn.random.uniform(range=[0, 1]), fn.random.uniform(range=[0, 1])
        crop = (segmentation.CROP, segmentation.CROP)
        images = fn.crop(fn.flip(images, horizontal=flip), crop=crop, crop_pos_x=x,
                         crop_pos_y=y, out_of_bounds_policy="pad", fill_values=0)
        masks = fn.crop(fn.flip(masks, horizontal=flip), crop=crop, crop_pos_x=x,
                        crop_pos_y=y, out_of_bounds_policy="pad", fill_values=255)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[255 * m for m in segmentation.MEAN],
                                          std=[255 * s for s in segmentation.STD])
        return images, fn.cast(masks, dtype=types.INT64)

    pipe = train()
    pipe.build()
    for out in DALIGenericIterator(pipe, ["image", "mask"], reader_name="reader",
                                   last_batch_policy=LastBatchPolicy.DROP):
        yield out[0]["image"], out[0]["mask"].squeeze(-1)


def _random_erasing(images, p):
    """torchvision's RandomErasing on CHW images, with probability p: area 2-33 %, aspect
    ratio 0.3-3.3 (log-uniform), the region clamped to the image, filled with 0."""
    area = fn.random.uniform(range=[0.02, 0.33])
    ratio = dmath.exp(fn.random.uniform(range=[math.log(0.3), math.log(3.3)]))
    erase = fn.cast(fn.random.coin_flip(probability=p), dtype=types.FLOAT)
    h = dmath.min(dmath.sqrt(area * ratio), 1.0) * erase
    w = dmath.min(dmath.sqrt(area / ratio), 1.0) * erase
    anchor = fn.stack(fn.random.uniform(range=[0, 1]) * (1 - h),
                      fn.random.uniform(range=[0, 1]) * (1 - w))
    return fn.erase(images, anchor=anchor, shape=fn.stack(h, w), axis_names="HW",
                    normalized_anchor=True, normalized_shape=True, fill_value=0)


def recipe_batches(store, cores, w, seed):
    files = work.read_file_list(store)

    @pipeline_def(batch_size=recipes.BATCH, num_threads=cores, device_id=None, seed=seed,
                  prefetch_queue_depth=2, enable_conditionals=True)
    def train():
        jpegs, labels = _reader(store, seed, shuffle=True)
        images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                               random_area=list(work.SCALE),
                                               random_aspect_ratio=list(work.RATIO))
        interp = types.INTERP_CUBIC if w.interpolation == "bicubic" else types.INTERP_LINEAR
        images = fn.resize(images, resize_x=w.size, resize_y=w.size, antialias=True,
                           interp_type=interp)
        if w.name == "recipe":  # torchvision's fill (0) and interpolation (nearest)
            images = trivial_augment.trivial_augment_wide(images, fill_value=0,
                                                          interp_type=types.INTERP_NN)
        else:
            images = rand_augment.rand_augment(images, n=2, m=9, num_magnitude_bins=11,
                                               monotonic_mag=True)
        images = _finish(images, "float32", mirror=fn.random.coin_flip())
        return _random_erasing(images, w.erase_p), labels

    pipe = train()
    pipe.build()
    mix = recipes.batch_mix(w, recipes.num_classes(files))
    for out in DALIGenericIterator(pipe, ["image", "label"], reader_name="reader",
                                   last_batch_policy=LastBatchPolicy.DROP):
        yield mix(out[0]["image"], out[0]["label"].view(-1).long())


def eval_images(store):
    @pipeline_def(batch_size=64, num_threads=1, device_id=None, seed=0)
    def evaluate():
        jpegs, labels = _reader(store, 0, shuffle=False)
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_shorter=work.EVAL_RESIZE, antialias=True,
                           interp_type=types.INTERP_LINEAR)
        images = fn.crop(images, crop=(work.SIZE, work.SIZE))
        return _finish(images, "uint8"), labels

    pipe = evaluate()
    pipe.build()
    for out in DALIGenericIterator(pipe, ["image", "label"], reader_name="reader",
                                   last_batch_policy=LastBatchPolicy.PARTIAL):
        yield from out[0]["image"]
