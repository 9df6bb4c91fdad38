"""bench/video_loader.py --openings: what a worker's first opening of a video costs in a first
run (the cache folder emptied: each index built and written) and in a later one (each read
there). Each round times one epoch of a loader whose only video field is ClipFrameIndices (each
video opened and indexed, nothing decoded) both ways, and of one whose clip is the first frame,
decoded and centre-cropped (frame_*), less an epoch of the labels alone (labels_ms), per video,
each the least of three; then the training pipeline's clips/s over --batches batches both ways
(--batches 4: every video opened once) and torchcodec's (and the baseline's, which keeps no index
across runs). Runs in the bench's process, on its first --cores count of workers, unpinned."""
import shutil
import statistics
import time

import stoker

import video_clip_loaders as loaders

FRAMES, STEP = loaders.FRAMES, loaders.STEP


def epoch_seconds(path, fields, workers, cache):
    """Seconds of one epoch, in order, of a loader of `fields` (made before the clock starts)."""
    loader = stoker.Loader(stoker.Dataset(path, transforms=fields), batch_size=loaders.BATCH,
                           num_workers=workers, cache_dir=cache)
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def one_round(args, table, dataset, workers, cache, baseline):
    """ms per first opening of a video (its index built and written, or read), and the training
    pipeline's clips/s both ways and torchcodec's (and `baseline()`'s)."""
    index = {"video": None, "frames": stoker.transforms.ClipFrameIndices(
        num_frames_per_clip=FRAMES, num_indices_between_frames=STEP)}
    frame = {"video": stoker.transforms.DecodeClip(sampler="regular", num_frames_per_clip=1,
                                                    crop=[112], crop_mode="center")}
    times = {key: [] for key in ("built", "read", "frame built", "frame read", "labels")}
    for _ in range(3):  # the least of three: an epoch of 40 openings is short
        for fields, name in ((index, "built"), (frame, "frame built")):
            shutil.rmtree(cache, ignore_errors=True)
            times[name].append(epoch_seconds(dataset, fields, workers, cache))
            times[name.replace("built", "read")].append(
                epoch_seconds(dataset, fields, workers, cache))
        times["labels"].append(epoch_seconds(dataset, {"video": None}, workers, cache))
    least = {key: min(values) for key, values in times.items()}
    shutil.rmtree(cache, ignore_errors=True)

    def rate(stream):
        return loaders.clips_per_second(stream, args.batches)["clips_per_s"]
    rates = {"first run": rate(loaders.stoker_batches(dataset, "train", workers, args.threads,
                                                      cache))}
    rates["later run"] = rate(loaders.stoker_batches(dataset, "train", workers, args.threads,
                                                     cache))
    rates["torchcodec+DataLoader"] = rate(iter(loaders.data_loader(
        "torchcodec", table, "train", workers, args.threads)))
    if baseline:
        rates["baseline"] = baseline()
    per_video = 1e3 / len(set(path for path, _, _ in table))
    opening = {f"{key}_ms".replace(" ", "_"): (least[key] - least["labels"]) * per_video
               for key in least if key != "labels"}
    return {**opening, "labels_ms": least["labels"] * per_video, **rates}


def report(args, table, dataset, workers, cache, baseline=None):
    rounds = [one_round(args, table, dataset, workers, cache, baseline)
              for _ in range(args.rounds)]
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
