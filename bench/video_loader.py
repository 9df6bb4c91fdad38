#!/usr/bin/env python3
"""Video clips per second: stoker.Loader with DecodeClip against torchcodec 0.17 + torchvision
v2 in a DataLoader, the same pipeline over the same files, alternated in one run (issue 63).

Training: one random clip of 16 frames 4 apart per video, Resize(128) of the shorter side,
RandomCrop(112), RandomHorizontalFlip, float32 normalised; batches [8, 16, 3, 112, 112].
Evaluation (--pipeline eval): 1 regular clip, Resize(128) + CenterCrop(112).

The videos are bench/make_kinetics_set.py's (class folders of mp4 files); stoker reads them
from a dataset of their bytes (written once into OUT/stoker, not timed). Each round runs every
loader for --batches batches after one warm-up batch; the report is clips/s per loader and
round, the median ratio, and clips/s per worker. --baseline DIR: each round also runs the stoker
package in DIR (another build's python/ folder) in a child process, for a same-run ratio.
--threads: DecodeClip's decoder threads (0: FFmpeg's choice). stoker keeps the videos' indexes
in OUT/cache (the loader's cache_dir): from the first round on, a worker's first opening of a
video reads its index there, as a later run's does.

--openings: what a worker's first opening of a video costs in a first run (the cache folder
emptied: each index built and written) and in a later one (each read there). Each round times
one epoch of a loader whose only video field is ClipFrameIndices (each video opened and indexed,
nothing decoded) both ways, and of one whose clip is the first frame, decoded and centre-cropped
(frame_*), less an epoch of the labels alone (labels_ms), per video, each the least of three;
then the training pipeline's clips/s over --batches batches both ways
(--batches 4: every video opened once) and torchcodec's (and the baseline's, which keeps no
index across runs).

Usage: .venv/bin/python bench/video_loader.py VIDEOS --work OUT [--workers 1 2] [--rounds 3]
       [--batches 12] [--pipeline train|eval] [--threads 1] [--baseline PYTHON_DIR] [--openings]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import torch

if "--child" in sys.argv:  # a baseline's round: its stoker package, not this tree's
    sys.path.insert(0, sys.argv[sys.argv.index("--child") + 1])
import stoker  # noqa: E402

MEAN, STD = [0.43216, 0.394666, 0.37645], [0.22803, 0.22145, 0.216989]  # the reference's
FRAMES, STEP, BATCH = 16, 4, 8


def video_files(root):
    """The videos under `root`'s class folders, as torchvision's Kinetics orders them."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c))) if f.endswith(".mp4")]


def stoker_dataset(files, out):
    """A stoker dataset of the videos' bytes and labels, written once."""
    path = os.path.join(out, "stoker")
    if not os.path.exists(os.path.join(path, "manifest.json")):
        with stoker.DatasetWriter(path, {"video": "bytes", "label": "int64"}) as writer:
            for file, label in files:
                with open(file, "rb") as f:
                    writer.append({"video": f.read(), "label": label})
    return path


def stoker_loader(path, pipeline, workers, threads, cache):
    if pipeline == "train":
        clip = stoker.transforms.DecodeClip(
            num_frames_per_clip=FRAMES, num_indices_between_frames=STEP, resize=[128],
            crop=[112], flip=0.5, dtype="float32", mean=MEAN, std=STD, threads=threads)
    else:
        clip = stoker.transforms.DecodeClip(
            sampler="regular", num_frames_per_clip=FRAMES, num_indices_between_frames=STEP,
            resize=[128], crop=[112], crop_mode="center", dtype="float32", mean=MEAN, std=STD,
            threads=threads)
    return stoker.Loader(stoker.Dataset(path, transforms={"video": clip}), batch_size=BATCH,
                         shuffle=True, num_workers=workers, drop_last=True, cache_dir=cache)


class TorchcodecClips(torch.utils.data.Dataset):
    """torchcodec's sampler and torchvision v2's transforms, as their documentation composes
    them."""

    def __init__(self, files, pipeline):
        from torchvision.transforms import v2
        self.files = files
        self.pipeline = pipeline
        crop = v2.RandomCrop(112) if pipeline == "train" else v2.CenterCrop(112)
        steps = [v2.Resize(128), crop]
        if pipeline == "train":
            steps.append(v2.RandomHorizontalFlip())
        self.transform = v2.Compose(steps + [v2.ToDtype(torch.float32, scale=True),
                                             v2.Normalize(MEAN, STD)])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from torchcodec.decoders import VideoDecoder
        from torchcodec.samplers import clips_at_random_indices, clips_at_regular_indices
        from torchvision import tv_tensors
        path, label = self.files[i]
        sample = clips_at_random_indices if self.pipeline == "train" else clips_at_regular_indices
        clips = sample(VideoDecoder(path), num_clips=1, num_frames_per_clip=FRAMES,
                       num_indices_between_frames=STEP)
        return self.transform(tv_tensors.Video(clips.data[0])), label


def torchcodec_loader(files, pipeline, workers):
    return torch.utils.data.DataLoader(TorchcodecClips(files, pipeline), batch_size=BATCH,
                                       shuffle=True, num_workers=workers, drop_last=True,
                                       persistent_workers=workers > 0)


def clips_per_second(loader, batches):
    """Clips/s over `batches` batches after one warm-up batch (epochs restarted as needed)."""
    def batches_forever():
        while True:
            yield from loader

    stream = batches_forever()
    batch = next(stream)
    clip = batch["video"] if isinstance(batch, dict) else batch[0]
    assert tuple(clip.shape) == (BATCH, FRAMES, 3, 112, 112), clip.shape
    start = time.perf_counter()
    for _ in range(batches):
        next(stream)
    return batches * BATCH / (time.perf_counter() - start)


def decode_cost(files, clips=200):
    """Decoded frames per delivered frame of random training clips (the sampler's starts, drawn
    here with a seeded generator): stoker's decode, and the GOP prefix a decoder that decodes
    every frame from the keyframe decodes (torchcodec's)."""
    import random
    from stoker import _stoker
    draw = random.Random(0)
    ours = prefix = 0
    for k in range(clips):
        path = files[k % len(files)][0]
        index = _stoker.video_index(path)
        frames = len(index["pts"])
        start = draw.randrange(max(frames - (FRAMES - 1) * STEP, 1))
        indices = [min(start + i * STEP, frames - 1) for i in range(FRAMES)]
        ours += _stoker.video_frames_decoded(path, indices)
        key = max(k for k in index["keyframes"] if k <= indices[0])
        prefix += indices[-1] - key + 1
    return ours / (clips * FRAMES), prefix / (clips * FRAMES)


def epoch_seconds(path, fields, workers, cache):
    """Seconds of one epoch, in order, of a loader of `fields` (made before the clock starts)."""
    loader = stoker.Loader(stoker.Dataset(path, transforms=fields), batch_size=BATCH,
                           num_workers=workers, cache_dir=cache)
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def openings_round(args, files, path, workers, cache):
    """One round of --openings: ms per first opening of a video (its index built and written, or
    read), and the training pipeline's clips/s both ways and torchcodec's."""
    index = {"video": None, "frames": stoker.transforms.ClipFrameIndices(
        num_frames_per_clip=FRAMES, num_indices_between_frames=STEP)}
    frame = {"video": stoker.transforms.DecodeClip(sampler="regular", num_frames_per_clip=1,
                                                    crop=[112], crop_mode="center")}
    times = {key: [] for key in ("built", "read", "frame built", "frame read", "labels")}
    for _ in range(3):  # the least of three: an epoch of 40 openings is short
        for fields, name in ((index, "built"), (frame, "frame built")):
            shutil.rmtree(cache, ignore_errors=True)
            times[name].append(epoch_seconds(path, fields, workers, cache))
            times[name.replace("built", "read")].append(
                epoch_seconds(path, fields, workers, cache))
        times["labels"].append(epoch_seconds(path, {"video": None}, workers, cache))
    least = {key: min(values) for key, values in times.items()}
    shutil.rmtree(cache, ignore_errors=True)
    rates = {"first run": clips_per_second(
        stoker_loader(path, "train", workers, args.threads, cache), args.batches)}
    rates["later run"] = clips_per_second(
        stoker_loader(path, "train", workers, args.threads, cache), args.batches)
    rates["torchcodec+DataLoader"] = clips_per_second(torchcodec_loader(files, "train", workers),
                                                      args.batches)
    if args.baseline:
        rates["baseline"] = baseline_round(args, workers)
    per_video = 1e3 / len(files)
    opening = {f"{key}_ms".replace(" ", "_"): (least[key] - least["labels"]) * per_video
               for key in least if key != "labels"}
    return {**opening, "labels_ms": least["labels"] * per_video, **rates}


def report_openings(args, files, path, workers, cache):
    rounds = [openings_round(args, files, path, workers, cache) for _ in range(args.rounds)]
    for key in [k for k in rounds[0] if k.endswith("_ms")]:
        values = [r[key] for r in rounds]
        print(f"workers={workers} {key:22s} per video " + " ".join(f"{v:6.2f}" for v in values)
              + f"  median {statistics.median(values):6.2f}")
    names = [n for n in rounds[0] if not n.endswith("_ms")]
    for name in names:
        values = [r[name] for r in rounds]
        print(f"workers={workers} {name:22s} clips/s " + " ".join(f"{v:6.1f}" for v in values)
              + f"  median {statistics.median(values):6.1f}")
    for a, b in [("later run", "first run"), ("first run", "torchcodec+DataLoader"),
                 ("later run", "torchcodec+DataLoader"), ("first run", "baseline")]:
        if b in names:
            ratios = [r[a] / r[b] for r in rounds]
            print(f"workers={workers} ratio {a}/{b.split('+')[0]} " +
                  " ".join(f"{v:.2f}" for v in ratios) + f"  median {statistics.median(ratios):.2f}")


def baseline_round(args, workers):
    """Clips/s of the stoker package in args.baseline, in a child process."""
    child = [sys.executable, os.path.abspath(__file__), args.videos, "--work", args.work,
             "--workers", str(workers), "--batches", str(args.batches), "--pipeline",
             args.pipeline, "--threads", str(args.threads), "--child", args.baseline]
    run = subprocess.run(child, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("videos")
    parser.add_argument("--work", required=True)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--pipeline", choices=["train", "eval"], default="train")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--baseline", help="another stoker package's folder, run alternating")
    parser.add_argument("--openings", action="store_true",
                        help="first openings in a first run and a later one (above)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a baseline round (from this folder)
    args = parser.parse_args()
    torch.set_num_threads(1)
    files = video_files(args.videos)
    path = stoker_dataset(files, args.work)
    cache = os.path.join(args.work, "cache")
    if args.child:
        print(json.dumps(clips_per_second(
            stoker_loader(path, args.pipeline, args.workers[0], args.threads, cache),
            args.batches)))
        return 0
    print(f"{len(files)} videos, pipeline {args.pipeline}, batches of {BATCH} clips "
          f"[{FRAMES}, 3, 112, 112] (frames {STEP} apart)")
    if args.openings:
        for workers in args.workers:
            report_openings(args, files, path, workers, cache)
        return 0
    ours, prefix = decode_cost(files)
    print(f"decoded frames per delivered frame (random clips): stoker {ours:.2f}, "
          f"the GOP prefix {prefix:.2f}")
    for workers in args.workers:
        rates = {"stoker": [], "torchcodec+DataLoader": []}
        if args.baseline:
            rates["baseline"] = []
        for _ in range(args.rounds):  # alternated: the machine's noise hits all alike
            rates["stoker"].append(clips_per_second(
                stoker_loader(path, args.pipeline, workers, args.threads, cache), args.batches))
            rates["torchcodec+DataLoader"].append(clips_per_second(
                torchcodec_loader(files, args.pipeline, workers), args.batches))
            if args.baseline:
                rates["baseline"].append(baseline_round(args, workers))
        for name, values in rates.items():
            print(f"workers={workers} {name:22s} clips/s " +
                  " ".join(f"{v:6.1f}" for v in values) +
                  f"  median {statistics.median(values):6.1f} "
                  f"({statistics.median(values) / workers:5.1f} per worker)")
        for name in [n for n in rates if n != "stoker"]:
            ratios = [a / b for a, b in zip(rates["stoker"], rates[name])]
            print(f"workers={workers} ratio stoker/{name.split('+')[0]} " +
                  " ".join(f"{r:.2f}" for r in ratios) +
                  f"  median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
