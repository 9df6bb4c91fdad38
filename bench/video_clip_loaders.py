#!/usr/bin/env python3
"""The loaders of the video clip benchmark (bench/video_loader.py), one run each in its own
process and environment: stoker, torchcodec, PyAV and decord in a DataLoader, SPDL's pipeline,
DALI's CPU video decoder. Each delivers batches of 8 clips [16, 3, 112, 112] float32 of the same
pipeline: training (a random clip, Resize(128) of the shorter side, RandomCrop(112),
RandomHorizontalFlip, normalised) or evaluation (the regular clip, Resize(128) +
CenterCrop(112)). The peers decode the clips of CLIPS (a JSON list of [path, label, frame
indices] that video_loader.py writes: the same clips, in the same order, for every peer) and
transform them with torchvision v2 on tensors, DALI with its own operators; stoker draws its own
clips of the same distribution from its dataset of the videos' bytes.

  video_clip_loaders.py LOADER CLIPS STOKER_DATASET PIPELINE WORKERS BATCHES THREADS [STOKER_DIR]

prints one JSON object: clips/s over BATCHES batches after a warm-up batch, and the CPU time
per clip of the process and its worker processes over them. WORKERS: the DataLoader's workers,
SPDL's decoding tasks and threads, DALI's threads, stoker's workers. THREADS: each decoder's threads. STOKER_DIR: another stoker package's folder (a baseline build).

  video_clip_loaders.py frames LOADER CLIPS COUNT OUT

saves (torch.save) the uint8 frames [T, C, H, W] that LOADER (torchcodec, pyav, decord or spdl)
decodes for the first COUNT clips of CLIPS, before any transform.
"""
import json
import sys
import time

import torch

MEAN, STD = [0.43216, 0.394666, 0.37645], [0.22803, 0.22145, 0.216989]  # the reference's
FRAMES, STEP, BATCH, RESIZE, CROP = 16, 4, 8, 128, 112


def v2_transform(pipeline):
    """torchvision v2's steps of `pipeline` on a uint8 clip [T, C, H, W]."""
    from torchvision.transforms import v2
    crop = v2.RandomCrop(CROP) if pipeline == "train" else v2.CenterCrop(CROP)
    steps = [v2.Resize(RESIZE), crop] + ([v2.RandomHorizontalFlip()] if pipeline == "train"
                                         else [])
    return v2.Compose(steps + [v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def torchcodec_clip(path, indices, threads):
    """torchcodec's VideoDecoder (exact seeking, its own index) and get_frames_at, which its
    clip samplers call: [T, C, H, W]."""
    from torchcodec.decoders import VideoDecoder
    return VideoDecoder(path, num_ffmpeg_threads=threads).get_frames_at(indices).data


def pyav_clip(path, indices, threads):
    """PyAV as its documentation seeks: the stream's frame rate gives each frame's timestamp,
    `seek` goes to the keyframe at or before the first, and decoding runs forward to the last;
    frames to RGB with `to_ndarray`: [T, C, H, W]."""
    import av
    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = threads
        per_frame = 1 / (stream.average_rate * stream.time_base)  # pts units per frame
        first = stream.start_time or 0
        slots = {}
        for slot, index in enumerate(indices):
            slots.setdefault(first + round(index * per_frame), []).append(slot)
        frames = [None] * len(indices)
        last = max(slots)
        container.seek(min(slots), stream=stream, backward=True)
        for frame in container.decode(stream):
            for slot in slots.get(frame.pts, ()):
                frames[slot] = torch.from_numpy(frame.to_ndarray(format="rgb24"))
            if frame.pts >= last:
                break
    missing = [indices[s] for s, f in enumerate(frames) if f is None]
    if missing:
        raise RuntimeError(f"{path}: PyAV gave no frame at {missing}")
    return torch.stack(frames).permute(0, 3, 1, 2)


def decord_clip(path, indices, threads):
    """decord's VideoReader (its index built on opening) and get_batch: [T, C, H, W]."""
    from decord import VideoReader, cpu
    clip = VideoReader(path, ctx=cpu(0), num_threads=threads).get_batch(indices).asnumpy()
    return torch.from_numpy(clip).permute(0, 3, 1, 2)


def spdl_clip(path, indices, threads):
    """SPDL's demuxer and `sample_decode_video` (the packets split at keyframes, each part
    decoded to its last asked frame), its frames converted to one tensor: [T, C, H, W]."""
    import spdl.io
    config = spdl.io.decode_config(decoder_options={"threads": str(threads)})
    frames = spdl.io.sample_decode_video(spdl.io.demux_video(path), indices,
                                         decode_config=config)
    return spdl.io.to_torch(spdl.io.convert_frames(frames)).permute(0, 3, 1, 2)


DECODERS = {"torchcodec": torchcodec_clip, "pyav": pyav_clip, "decord": decord_clip,
            "spdl": spdl_clip}


class PeerClips(torch.utils.data.Dataset):
    """The clips of the table, in its order, each decoded by `decode` and transformed by v2."""

    def __init__(self, table, decode, pipeline, threads):
        self.table, self.decode, self.threads = table, decode, threads
        self.transform = v2_transform(pipeline)

    def __len__(self):
        return len(self.table)

    def __getitem__(self, i):
        from torchvision import tv_tensors
        path, label, indices = self.table[i]
        clip = self.decode(path, indices, self.threads)
        return self.transform(tv_tensors.Video(clip)), label


def data_loader(name, table, pipeline, workers, threads):
    return torch.utils.data.DataLoader(
        PeerClips(table, DECODERS[name], pipeline, threads), batch_size=BATCH,
        num_workers=workers, drop_last=True, persistent_workers=workers > 0)


def spdl_batches(table, pipeline, workers, threads):
    """SPDL's pipeline as its video example builds one: the table as its source, a stage of
    `workers` concurrent tasks on `workers` threads that decodes a clip (spdl_clip) and runs
    v2's steps on it; batches aggregated, then collated."""
    from spdl.pipeline import PipelineBuilder
    from torchvision import tv_tensors
    transform = v2_transform(pipeline)

    def clip(item):
        path, label, indices = item
        return transform(tv_tensors.Video(spdl_clip(path, indices, threads))), label

    def collate(items):
        return torch.stack([c for c, _ in items]), torch.tensor([label for _, label in items])

    built = (PipelineBuilder().add_source(table)
             .pipe(clip, concurrency=workers, output_order="input")
             .aggregate(BATCH).pipe(collate).add_sink(2).build(num_threads=workers))
    with built.auto_stop():
        yield from built


def dali_batches(table, pipeline, workers, threads):
    """DALI on the CPU (`device_id=None`): the videos' bytes and the clips' frames fed by an
    external source, `fn.decoders.video` on the CPU backend, then its own resize (shorter side,
    antialiased) and crop_mirror_normalize to [T, C, H, W] float, handed over by its PyTorch
    iterator. Its CPU backend decodes VP8, VP9 and MJPEG, not H.264 (its FFmpeg is built
    without that decoder): on the H.264 set it fails in one line."""
    import numpy
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    def source():
        for start in range(0, len(table) - BATCH + 1, BATCH):
            rows = table[start:start + BATCH]
            yield ([numpy.fromfile(path, dtype=numpy.uint8) for path, _, _ in rows],
                   [numpy.array(indices, dtype=numpy.int32) for _, _, indices in rows],
                   [numpy.array(label, dtype=numpy.int64) for _, label, _ in rows])

    @pipeline_def(batch_size=BATCH, num_threads=workers, device_id=None, seed=0)
    def clips():
        encoded, frames, labels = fn.external_source(source=source, num_outputs=3, batch=True)
        video = fn.decoders.video(encoded, device="cpu", frames=frames)
        video = fn.resize(video, resize_shorter=RESIZE, antialias=True)
        train = pipeline == "train"
        video = fn.crop_mirror_normalize(
            video, crop=(CROP, CROP), dtype=types.FLOAT, output_layout="FCHW",
            crop_pos_x=fn.random.uniform(range=(0, 1)) if train else 0.5,
            crop_pos_y=fn.random.uniform(range=(0, 1)) if train else 0.5,
            mirror=fn.random.coin_flip() if train else 0,
            mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD])
        return video, labels

    del threads  # DALI's CPU decoder takes no thread count: one per sample on its pool
    for out in DALIGenericIterator(clips(), ["video", "label"]):
        yield out[0]["video"], out[0]["label"]


def stoker_batches(path, pipeline, workers, threads, cache=None):
    """stoker.Loader over the dataset of the videos' bytes: DecodeClip with v2's steps folded
    in, its own sampler (clips drawn as torchcodec draws them), shuffled; the videos' indexes
    kept in `cache` (None: the loader's default cache folder)."""
    import stoker
    common = dict(num_frames_per_clip=FRAMES, num_indices_between_frames=STEP, resize=[RESIZE],
                  crop=[CROP], dtype="float32", mean=MEAN, std=STD, threads=threads)
    if pipeline == "train":
        clip = stoker.transforms.DecodeClip(flip=0.5, **common)
    else:
        clip = stoker.transforms.DecodeClip(sampler="regular", crop_mode="center", **common)
    loader = stoker.Loader(stoker.Dataset(path, transforms={"video": clip}), batch_size=BATCH,
                           shuffle=True, num_workers=workers, drop_last=True, cache_dir=cache)
    while True:
        for batch in loader:
            yield batch["video"], batch["label"]


def batches(name, table, dataset, pipeline, workers, threads):
    """Loader `name`'s batch stream, (clips, labels)."""
    if name == "stoker":
        return stoker_batches(dataset, pipeline, workers, threads)
    if name == "spdl":
        return spdl_batches(table, pipeline, workers, threads)
    if name == "dali":
        return dali_batches(table, pipeline, workers, threads)
    return iter(data_loader(name, table, pipeline, workers, threads))


def cpu_seconds():
    """CPU seconds of this process and its children so far (a DataLoader's workers)."""
    import psutil
    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in [me] + me.children(recursive=True))


def clips_per_second(stream, count):
    """{"clips_per_s", "cpu_ms_per_clip"} over `count` batches after a warm-up batch (the
    CPU of the process and its workers); every batch's shape checked."""
    def take():
        clips, labels = next(stream)
        if tuple(clips.shape) != (BATCH, FRAMES, 3, CROP, CROP) or clips.dtype != torch.float32:
            raise RuntimeError(f"a batch of {clips.dtype} {tuple(clips.shape)}, expected "
                               f"float32 {(BATCH, FRAMES, 3, CROP, CROP)}")
        if len(labels) != BATCH:
            raise RuntimeError(f"{len(labels)} labels for {BATCH} clips")

    take()
    start, cpu = time.perf_counter(), cpu_seconds()
    for _ in range(count):
        take()
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"clips_per_s": count * BATCH / wall, "cpu_ms_per_clip": 1000 * cpu / (count * BATCH)}


def save_frames(name, table_file, count, out):
    with open(table_file) as f:
        table = json.load(f)[:int(count)]
    torch.save([DECODERS[name](path, indices, 1) for path, _, indices in table], out)
    return 0


def main(argv):
    if argv[0] == "frames":
        return save_frames(*argv[1:])
    name, table_file, dataset, pipeline, workers, count, threads = argv[:7]
    if len(argv) > 7:  # another build's stoker package
        sys.path.insert(0, argv[7])
    torch.set_num_threads(1)
    with open(table_file) as f:
        table = json.load(f)
    stream = batches(name, table, dataset, pipeline, int(workers), int(threads))
    print(json.dumps(clips_per_second(stream, int(count))))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as e:  # one line for the report: the peer could not run the work
        lines = [line for line in str(e).splitlines() if line.strip()]
        print(f"{type(e).__name__}: {lines[-1] if lines else ''}"[:300], file=sys.stderr)
        sys.exit(1)
