#!/usr/bin/env python3
"""Video clips per second per core: stoker.Loader with DecodeClip against torchcodec, PyAV and
decord in a DataLoader, SPDL's pipeline and DALI's CPU video decoder, the same pipeline over the
same files, alternated in one run (issue 63). Installs nothing: bench/peers/setup.sh pyav decord
spdl dali does; a peer that is not installed or cannot run is a row with its one-line reason.

Training: one random clip of 16 frames 4 apart per video, Resize(128) of the shorter side,
RandomCrop(112), RandomHorizontalFlip, float32 normalised; batches [8, 16, 3, 112, 112].
Evaluation: the regular clip (frames 0-60), Resize(128) + CenterCrop(112). The peers decode the
same clips (frame indices) in the same order, drawn here; stoker draws its own of the same
distribution (bench/video_clip_loaders.py says how each loader runs).

The videos are bench/make_kinetics_set.py's (class folders of mp4 files); stoker reads them from a
dataset of their bytes (written once into OUT/stoker, not timed). Each round runs every loader in a
new process pinned with taskset to C cores with C workers, for --batches batches after a warm-up
batch, the loaders' order reversed every round; the report is clips/s per loader and round, medians
per core, the CPU time per clip of the loader's processes, and stoker's ratios to each peer and to
the fastest (per round, then the median), in clips/s and in clips per CPU second. On a machine
shared with other sessions, the scheduler gives each session a share of the cores whatever its
threads (Linux's autogroup): clips/s then says how the loader fared in that share, clips per CPU
second what a core of its own gives it. Then decoded frames per delivered frame: stoker's on the
training clips against the fewest an exact whole-frame decoder can decode
(bench/video_gop_bound.py, in the pyav environment) and the GOP's prefix a decoder decoding every
frame decodes, with K clips per video (DecodeClip num_clips=K: one decode per video). Before the
rounds, the peers that decode frames at indices decode the first clips, their frames compared with
torchcodec's. --baseline DIR: also the stoker package in DIR (another build's python/ folder), for
a same-run ratio. --threads: each decoder's threads. Writes OUT/video-report.json
(bench/video_chart.py draws it). --openings: instead, what a worker's first opening of a video
costs in a first run and a later one (bench/video_openings.py).

Usage: .venv/bin/python bench/video_loader.py VIDEOS --work OUT [--cores 1 2] [--rounds 5]
       [--batches 12] [--pipelines train eval] [--loaders stoker torchcodec ...] [--threads 1]
       [--clips-per-video 1 4 8] [--baseline PYTHON_DIR] [--openings]
"""
import argparse
import datetime
import json
import os
import random
import statistics
import subprocess
import sys

import stoker
from stoker import _stoker

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
import peer_envs  # noqa: E402
import video_openings  # noqa: E402  (this folder: the script's, first on sys.path)
FRAMES, STEP, BATCH = 16, 4, 8
SPAN = (FRAMES - 1) * STEP + 1

# name: (environment under bench/peers/setup.sh's folder, or None for the project's; what it runs)
LOADERS = {
    "stoker": (None, "stoker.Loader, DecodeClip with v2's steps folded"),
    "stoker-baseline": (None, "the --baseline build's stoker"),
    "torchcodec": (None, "torchcodec 0.17 get_frames_at + v2, DataLoader"),
    "pyav": ("pyav", "PyAV 18.1 seek + decode + v2, DataLoader"),
    "decord": ("decord", "decord 0.6 get_batch + v2, DataLoader"),
    "spdl": ("spdl", "SPDL 0.8 sample_decode_video + v2, its pipeline"),
    "dali": ("dali", "DALI 2.4 fn.decoders.video (CPU) + its operators"),
}


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


def random_starts(draw, frame_count, count):
    """`count` clip starts as torchcodec's random sampler draws them (uniform over the starts
    whose clip fits)."""
    return [draw.randrange(max(frame_count - SPAN + 1, 1)) for _ in range(count)]


def clip_frames(start, frame_count):
    return [min(start + i * STEP, frame_count - 1) for i in range(FRAMES)]


def clip_table(files, counts, pipeline, epochs, seed=0):
    """[path, label, frame indices] per clip, `epochs` shuffled passes over the videos: what
    every peer decodes, in this order."""
    draw = random.Random(seed)
    table = []
    for _ in range(epochs):
        for i in draw.sample(range(len(files)), len(files)):
            path, label = files[i]
            start = random_starts(draw, counts[i], 1)[0] if pipeline == "train" else 0
            table.append([path, label, clip_frames(start, counts[i])])
    return table


def python_of(name):
    return peer_envs.env_python(LOADERS[name][0])


def not_installed(name):
    """The one-line reason loader `name` cannot run, or None."""
    return peer_envs.env_missing(LOADERS[name][0])


def one_run(name, cores, pipeline, table_file, dataset, args):
    """{"clips_per_s", "cpu_ms_per_clip"} of loader `name` in a new process on `cores` cores,
    or RuntimeError(reason)."""
    command = ["taskset", "-c", ",".join(str(c) for c in range(cores)), python_of(name),
               os.path.join(HERE, "video_clip_loaders.py"),
               "stoker" if name == "stoker-baseline" else name, table_file, dataset, pipeline,
               str(cores), str(args.batches), str(args.threads)]
    if name == "stoker-baseline":
        command.append(args.baseline)
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise RuntimeError("timed out after 600 s")
    if run.returncode != 0:
        lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
        # A library's own log line that says what it lacks beats the exception's last line.
        said = [line for line in lines if "not supported" in line]
        raise RuntimeError((said or lines or [f"exit status {run.returncode}"])[-1][:300])
    return json.loads(run.stdout.splitlines()[-1])


def measure(report, names, args, tables, dataset):
    """Alternating rounds (the order reversed every round) of every loader at every core count
    and pipeline; a loader's failure is its one-line error for that key."""
    order = list(names)
    for r in range(args.rounds):
        for cores in args.cores:
            for pipeline in args.pipelines:
                key = f"{cores}c_{pipeline}"
                for name in order:
                    entry = report[name]
                    if "error" in entry or key in entry.get("run_errors", {}):
                        continue
                    print(f"round {r + 1}/{args.rounds}: {name} {key}", file=sys.stderr)
                    try:
                        run = one_run(name, cores, pipeline, tables[pipeline], dataset, args)
                    except RuntimeError as e:
                        entry.setdefault("run_errors", {})[key] = str(e)
                        continue
                    entry.setdefault("runs", {}).setdefault(key, []).append(run)
            order.reverse()
    for entry in report.values():
        for key, runs in entry.get("runs", {}).items():
            median = {m: statistics.median(run[m] for run in runs) for m in runs[0]}
            median["clips_per_cpu_s"] = 1000 / median["cpu_ms_per_clip"]
            entry.setdefault("median", {})[key] = median


def ratios(report, key, speed):
    """{peer: median over rounds of stoker's speed / the peer's} and the median of stoker's /
    the round's fastest peer's (the rounds every peer ran), for `key`; `speed` of a run."""
    ours = [speed(run) for run in report["stoker"].get("runs", {}).get(key, [])]
    peers = {name: [speed(run) for run in entry["runs"][key]] for name, entry in report.items()
             if not name.startswith("stoker") and key in entry.get("runs", {})}
    out = {name: statistics.median(a / b for a, b in zip(ours, rates))
           for name, rates in peers.items() if ours}
    rounds = min([len(ours)] + [len(rates) for rates in peers.values()])
    if peers and rounds:
        out["fastest"] = statistics.median(
            ours[r] / max(rates[r] for rates in peers.values()) for r in range(rounds))
    return out


def frames_check(report, table_file, work, count=8):
    """Each peer with a frame-index decoder decodes the table's first `count` clips; its uint8
    frames against torchcodec's (the reference: equal to stoker's, byte for byte), as
    report[peer]["frames"]."""
    import torch
    saved = {}
    for name in ("torchcodec", "pyav", "decord", "spdl"):
        if name not in report or "error" in report[name]:
            continue
        out = os.path.join(work, f"frames-{name}.pt")
        run = subprocess.run([python_of(name), os.path.join(HERE, "video_clip_loaders.py"),
                              "frames", name, table_file, str(count), out],
                             capture_output=True, text=True)
        if run.returncode == 0:
            saved[name] = torch.load(out)
        else:
            report[name]["frames"] = "failed: " + run.stderr.strip().splitlines()[-1][:200]
    reference = saved.pop("torchcodec", None)
    for name, clips in saved.items():
        if reference is None:
            continue
        worst = max((a.int() - b.int()).abs().max().item() for a, b in zip(reference, clips))
        report[name]["frames"] = (f"equal to torchcodec's on {count} clips" if worst == 0 else
                                  f"{count} clips: at most {worst} off torchcodec's")


def gop_costs(decodes, work):
    """bench/video_gop_bound.py's counts for `decodes` ([path, indices] per decode), in the
    pyav environment; None (and a line) where it cannot run."""
    reason = not_installed("pyav")
    if reason:
        print(f"GOP bound: pyav {reason}", file=sys.stderr)
        return None
    asked = os.path.join(work, "gop-asked.json")
    with open(asked, "w") as f:
        json.dump(decodes, f)
    run = subprocess.run([python_of("pyav"), os.path.join(HERE, "video_gop_bound.py"), asked],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"GOP bound: {run.stderr.strip().splitlines()[-1]}", file=sys.stderr)
        return None
    return json.loads(run.stdout)


def stoker_decoded(path, clips, epochs, threads):
    """stoker's video_frames_decoded / video_frames_delivered over `epochs` epochs of random
    training clips, `clips` per video (DecodeClip num_clips: one decode per video)."""
    clip = stoker.transforms.DecodeClip(
        num_clips=clips, num_frames_per_clip=FRAMES, num_indices_between_frames=STEP,
        resize=[128], crop=[112], threads=threads)
    loader = stoker.Loader(stoker.Dataset(path, transforms={"video": clip}),
                           batch_size=BATCH, shuffle=True, num_workers=1)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for _ in loader:
            pass
    stats = loader.stats()
    return stats["video_frames_decoded"] / stats["video_frames_delivered"]


def decode_costs(files, counts, dataset, args):
    """Decoded frames per delivered frame of random training clips with K clips per video (K of
    --clips-per-video): stoker's (its loader's counts, its own draws), the fewest for exact
    frames and the GOP prefix (drawn here, 5 decodes per video), and stoker's decoder on the
    bound's clips."""
    out = {}
    for clips in args.clips_per_video:
        draw = random.Random(clips)
        decodes = []
        for _ in range(5):
            for (path, _), count in zip(files, counts):
                starts = random_starts(draw, count, clips)
                decodes.append([path, [i for s in starts for i in clip_frames(s, count)]])
        row = {"stoker_loader": stoker_decoded(dataset, clips, 3, args.threads),
               "stoker_same_clips": sum(_stoker.video_frames_decoded(p, i) for p, i in decodes)
               / sum(len(i) for _, i in decodes)}
        gop = gop_costs(decodes, args.work)
        if gop:
            row.update(bound=gop["bound"] / gop["asked"], prefix=gop["prefix"] / gop["asked"])
        out[str(clips)] = row
        print(f"{clips} clip(s) per video, decoded frames per delivered frame: " +
              ", ".join(f"{k} {v:.2f}" for k, v in row.items()), file=sys.stderr)
    return out


def machine():
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                  if line.startswith("Model name")), "?")
    return {"cpu": model, "cpus": os.cpu_count(), "load": os.getloadavg(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def print_report(report, args):
    for cores in args.cores:
        for pipeline in args.pipelines:
            key = f"{cores}c_{pipeline}"
            for name, entry in report.items():
                runs = entry.get("runs", {}).get(key)
                if runs:
                    median = entry["median"][key]
                    print(f"{key} {name:10s} clips/s " +
                          " ".join(f"{r['clips_per_s']:6.1f}" for r in runs) +
                          f"  median {median['clips_per_s']:6.1f} "
                          f"({median['clips_per_s'] / cores:5.1f} per core), CPU ms per clip " +
                          " ".join(f"{r['cpu_ms_per_clip']:5.1f}" for r in runs) +
                          f"  median {median['cpu_ms_per_clip']:5.1f}")
                else:
                    why = entry.get("error") or entry.get("run_errors", {}).get(key, "no run")
                    print(f"{key} {name:10s} {why}")
                if key == f"{args.cores[0]}c_{args.pipelines[0]}" and "frames" in entry:
                    print(f"{'':8s} {name:10s} frames: {entry['frames']}")
            for speed, what in (("clips_per_s", "clips/s"), ("clips_per_cpu_s", "clips per CPU s")):
                print(f"{key} stoker / peer, {what}, median of rounds: " + ", ".join(
                    f"{n} {r:.2f}" for n, r in report["stoker"]["ratios"][speed][key].items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("videos")
    parser.add_argument("--work", required=True)
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--pipelines", nargs="+", choices=["train", "eval"],
                        default=["train", "eval"])
    peers = [n for n in LOADERS if n != "stoker-baseline"]
    parser.add_argument("--loaders", nargs="+", choices=peers, default=peers)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--baseline", help="another stoker package's folder, run alternating")
    parser.add_argument("--openings", action="store_true",
                        help="first openings in a first run and a later one (video_openings.py)")
    parser.add_argument("--clips-per-video", type=int, nargs="*", default=[1, 4, 8],
                        help="the decode costs' clips per video (none: no decode costs)")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    files = video_files(args.videos)
    counts = [len(_stoker.video_index(path)["pts"]) for path, _ in files]
    dataset = stoker_dataset(files, args.work)
    epochs = -(-(args.batches + 1 + 2 * max(args.cores) * 2) * BATCH // len(files)) + 1
    tables = {}
    for pipeline in args.pipelines:
        tables[pipeline] = os.path.join(args.work, f"clips-{pipeline}.json")
        with open(tables[pipeline], "w") as f:
            json.dump(clip_table(files, counts, pipeline, epochs), f)
    if args.openings:
        for workers in args.cores:
            def baseline(workers=workers):
                return one_run("stoker-baseline", workers, "train", tables["train"], dataset,
                               args)["clips_per_s"]
            with open(tables["train"]) as f:
                table = json.load(f)
            video_openings.report(args, table, dataset, workers, os.path.join(args.work, "cache"),
                                  baseline if args.baseline else None)
        return 0
    names = args.loaders + (["stoker-baseline"] if args.baseline else [])
    report = {name: {"what": LOADERS[name][1]} for name in names}
    for name in names:
        if not_installed(name):
            report[name]["error"] = not_installed(name)
    result = {"videos": len(files), "frames_per_video": sorted(set(counts)),
              "machine_start": machine(), "loaders": report}
    frames_check(report, tables[args.pipelines[0]], args.work)
    print(f"{len(files)} videos, batches of {BATCH} clips [{FRAMES}, 3, 112, 112] (frames {STEP} "
          f"apart), cores {args.cores}, {args.rounds} rounds", file=sys.stderr)
    measure(report, names, args, tables, dataset)
    keys = [f"{c}c_{p}" for c in args.cores for p in args.pipelines]
    report["stoker"]["ratios"] = {
        "clips_per_s": {k: ratios(report, k, lambda r: r["clips_per_s"]) for k in keys},
        "clips_per_cpu_s": {k: ratios(report, k, lambda r: 1000 / r["cpu_ms_per_clip"])
                            for k in keys}}
    result["machine_end"] = machine()
    result["decoded_per_delivered"] = decode_costs(files, counts, dataset, args)
    with open(os.path.join(args.work, "video-report.json"), "w") as f:
        json.dump(result, f, indent=1)
    print_report(report, args)
    print(f"report: {os.path.join(args.work, 'video-report.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
