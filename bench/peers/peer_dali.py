"""NVIDIA DALI, CPU only (`device_id=None`): its file reader, the fused decode-and-random-crop
operator (libjpeg-turbo decoding only the crop's region), resize with antialias, and
crop_mirror_normalize, handed over by its PyTorch iterator."""
import nvidia.dali.fn as fn
import nvidia.dali.types as types
from nvidia.dali import pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

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
