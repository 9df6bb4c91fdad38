"""Meta's SPDL: its thread-based pipeline (a source of shuffled files, a decode stage with
`cores` concurrent tasks on `cores` threads, aggregation into batches); each image demuxed and
decoded by FFmpeg with the crop, bilinear scale and flip as an FFmpeg filter, the batch converted
by `spdl.io.convert_frames` and handed to torch without a copy."""
import random

import spdl.io
import torch
from spdl.pipeline import PipelineBuilder

import work
from peer_torchvision_pil import prepare  # noqa: F401  (reads the original files)



def _train_frames(item):
    path, label, seed = item
    rng = random.Random(seed)
    packets = spdl.io.demux_image(path)
    x, y, w, h = work.random_crop_window(packets.codec.width, packets.codec.height, rng)
    flip = ",hflip" if rng.random() < 0.5 else ""
    desc = f"crop={w}:{h}:{x}:{y},scale={work.SIZE}:{work.SIZE}:flags=bilinear{flip},format=rgb24"
    return spdl.io.decode_packets(packets, filter_desc=desc), label


def _collate(dtype):
    mean = torch.tensor(work.MEAN).view(1, 3, 1, 1)
    std = torch.tensor(work.STD).view(1, 3, 1, 1)

    def collate(items):
        buffer = spdl.io.convert_frames([frames for frames, _ in items])
        images = spdl.io.to_torch(buffer).permute(0, 3, 1, 2).contiguous()  # NHWC -> NCHW
        if dtype == "float32":
            images = (images.float() / 255 - mean) / std
        return images, torch.tensor([label for _, label in items])
    return collate


def batches(store, cores, dtype, seed):
    files = work.read_file_list(store)
    rng = random.Random(seed)
    order = rng.sample(range(len(files)), len(files))
    source = [(files[i][0], files[i][1], rng.getrandbits(63)) for i in order]
    pipeline = (PipelineBuilder().add_source(source)
                .pipe(_train_frames, concurrency=cores, output_order="input")
                .aggregate(work.BATCH).pipe(_collate(dtype)).add_sink(2)
                .build(num_threads=cores))
    with pipeline.auto_stop():
        yield from pipeline


def eval_image(path):
    packets = spdl.io.demux_image(path)
    sw, sh = work.eval_size(packets.codec.width, packets.codec.height)
    x, y = int(round((sw - work.SIZE) / 2)), int(round((sh - work.SIZE) / 2))
    desc = (f"scale={sw}:{sh}:flags=bilinear,crop={work.SIZE}:{work.SIZE}:{x}:{y},"
            "format=rgb24")
    frames = spdl.io.decode_packets(packets, filter_desc=desc)
    return spdl.io.to_torch(spdl.io.convert_frames(frames)).permute(2, 0, 1).contiguous()
