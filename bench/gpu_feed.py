#!/usr/bin/env python3
"""How many CPU cores each loader needs to keep a GPU busy training an image model.

Trains torchvision's ResNet-50 and ResNet-18 (random init, bf16 autocast, channels_last, SGD
with momentum, batch 256, RandomResizedCrop + flip + normalise) fed by:
  bound       one batch resident on the device, reused every step: the rate the model allows
  stoker      stoker.Loader(device=DEVICE), float32 normalised by the native workers
  stoker_u8   stoker.Loader(device=DEVICE, normalize_on_device=True): uint8 over the bus (4x
              fewer bytes), normalised on the device by the loader (in the CPU dry run, where
              that option is refused, by this script)
  dataloader  torchvision ImageFolder (PIL) + DataLoader(num_workers=N, pin_memory=True,
              persistent_workers=True, prefetch_factor=4), copies non_blocking
  gpu_decode  DataLoader workers read the files; torchvision.io.decode_jpeg(device=DEVICE)
              decodes the batch and the crop, resize, flip and normalise run on the device
              (PNGs and CMYK JPEGs, which it cannot decode, are decoded on the CPU)
  stoker_host stoker.Loader(device="cpu"): with --models none, the loader alone, to compare
              with stoker's device path (what the copy adds)
  stoker_auto stoker.Loader(device=DEVICE, workers="auto"): the tuner against fixed workers
Model "none" runs no step: the loader alone. Each (model, feeder, cores) row runs in its own
process under `taskset -c 0-(cores-1)` with `cores` workers, and is timed in steady state
(--warmup-steps, then --steps or --seconds, whichever ends first; the warm-up stops after 3
steps once it has taken half of --seconds). The bound runs with the most
cores. --compile adds torch.compile rows (the bound and stoker, most cores) where torch has it.

Reported: images/s per row and its fraction of the model's bound, per feeder the fewest cores
reaching 95% of the bound and its images/s per core at its best, a plot of images/s against
cores (--plot: PNG and SVG, matplotlib), and everything as JSON (--out).

Run on a GPU machine (scripts/gpu/run.sh does):
  python3 bench/gpu_feed.py --images IMAGEFOLDER --dataset STOKER_DATASET --out gpu_feed.json \
      --plot gpu_feed [--models resnet50,resnet18] [--cores 2,4,8,16] [--compile]
IMAGEFOLDER: bench/make_image_set.py's OUT/train; STOKER_DATASET: its `stoker convert
imagefolder`. Dry run of every code path on the CPU, tiny model and images, under 2 minutes:
  python3 bench/gpu_feed.py --device cpu --dry-run [--out DIR/gpu_feed.json --plot DIR/plot]
No number from a dry run or from a CPU says anything about a GPU.
Exit status: 0 ok, 2 bad arguments or missing data, 1 a row failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FEEDERS = ("bound", "stoker", "stoker_u8", "dataloader", "gpu_decode", "stoker_host",
           "stoker_auto")
MODELS = ("resnet50", "resnet18", "tiny", "none")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
TARGET = 0.95
ROW_TIMEOUT_S = 600  # a row that takes longer has hung (compiling ResNet-50 takes 1-2 min)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", help="an ImageFolder (class subfolders) of the JPEGs")
    p.add_argument("--dataset", help="the same images as a stoker dataset")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--models", default="resnet50,resnet18",
                   help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--feeders", default="bound,stoker,stoker_u8,dataloader,gpu_decode",
                   help=f"comma-separated, of {', '.join(FEEDERS)}")
    p.add_argument("--cores", default="2,4,8,16", help="CPU core counts (taskset)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--classes", type=int, default=1000, help="the model's outputs")
    p.add_argument("--warmup-steps", type=int, default=15)
    p.add_argument("--steps", type=int, default=100, help="timed steps at most")
    p.add_argument("--seconds", type=float, default=10.0, help="timed seconds at most")
    p.add_argument("--compile", action="store_true", help="add torch.compile rows")
    p.add_argument("--out", help="write the results here as JSON")
    p.add_argument("--plot", help="write PLOT.png and PLOT.svg")
    p.add_argument("--dry-run", action="store_true",
                   help="toy sizes: tiny images (made in a temporary folder unless "
                        "--images/--dataset), model tiny for the ResNets, batch 8, size 64, "
                        "the cores this machine has, few steps")
    p.add_argument("--row", help=argparse.SUPPRESS)  # one row, in this process (internal)
    a = p.parse_args(argv)
    if a.row:
        return a
    available = len(os.sched_getaffinity(0))
    a.model_list = [m for m in a.models.split(",") if m]
    if a.dry_run:
        a.model_list = list(dict.fromkeys("tiny" if m.startswith("resnet") else m
                                          for m in a.model_list))
        a.batch, a.image_size, a.classes = 8, 64, 10
        a.warmup_steps, a.steps, a.seconds = 2, 4, 10.0
        a.cores = ",".join(c for c in a.cores.split(",") if c.isdigit() and int(c) <= available)
        a.cores = a.cores or str(available)
    a.feeder_list = [f for f in a.feeders.split(",") if f]
    bad = [m for m in a.model_list if m not in MODELS] + [
        f for f in a.feeder_list if f not in FEEDERS]
    if bad:
        p.error(f"unknown model or feeder: {', '.join(bad)}")
    try:
        a.core_list = sorted({int(c) for c in a.cores.split(",")})
    except ValueError:
        p.error(f"--cores: not a list of numbers: {a.cores!r}")
    if not a.core_list or a.core_list[0] < 1 or a.core_list[-1] > available:
        p.error(f"--cores: each must be in [1, {available}] (the cores this process may use)")
    if min(a.batch, a.image_size, a.classes, a.steps) < 1 or a.warmup_steps < 0:
        p.error("--batch, --image-size, --classes and --steps must be >= 1")
    if not a.dry_run and not (a.images and a.dataset):
        p.error("--images and --dataset are needed (or --dry-run)")
    for path in (a.images, a.dataset):
        if path and not os.path.isdir(path):
            p.error(f"{path}: not a directory")
    return a


# ---- one row, in its own process ----------------------------------------------------------

def build_model(torch, torchvision, name, classes):
    if name == "none":
        return None
    if name == "tiny":
        nn = torch.nn
        return nn.Sequential(nn.Conv2d(3, 8, 3, stride=4), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes))
    return getattr(torchvision.models, name)(weights=None, num_classes=classes)


def normalizer(torch, device):
    """uint8 [B,3,H,W] on the device -> normalised float32, channels_last."""
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255

    def normalize(images):
        images = images.to(memory_format=torch.channels_last).float()
        return (images - mean) / std
    return normalize


def endless(make_epoch):
    """Batches from make_epoch(epoch), epoch after epoch."""
    epoch = 0
    while True:
        yield from make_epoch(epoch)
        epoch += 1


def stoker_feeder(torch, spec, device):
    import stoker
    T = stoker.transforms
    steps = [T.RandomResizedCrop(spec["image_size"]), T.RandomHorizontalFlip()]
    target = "cpu" if spec["feeder"] == "stoker_host" else device.type
    u8 = spec["feeder"] == "stoker_u8"
    on_device = u8 and target == "cuda"
    if not u8 or on_device:
        steps.append(T.Normalize(MEAN, STD))
    loader = stoker.Loader(spec["dataset"], batch_size=spec["batch"], shuffle=True,
                           drop_last=True,
                           workers=("auto" if spec["feeder"] == "stoker_auto"
                                    else spec["workers"]),
                           transforms={"image": T.Compose(steps)}, device=target,
                           normalize_on_device=on_device, batch_format="dict")
    normalize = normalizer(torch, device) if u8 and not on_device else (lambda images: images)

    def epoch(e):
        loader.set_epoch(e)
        for batch in loader:
            yield normalize(batch["image"]), batch["label"]
    return endless(epoch)


def dataloader_feeder(torch, spec, device, dataset, collate=None):
    """DataLoader's recommended setup: pinned, persistent workers, 4 batches each ahead."""
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=spec["batch"], shuffle=True, drop_last=True,
        num_workers=spec["workers"], pin_memory=device.type == "cuda", persistent_workers=True,
        prefetch_factor=4, collate_fn=collate)
    return endless(lambda e: iter(loader))


def torchvision_feeder(torch, torchvision, spec, device):
    T = torchvision.transforms
    transform = T.Compose([T.RandomResizedCrop(spec["image_size"]), T.RandomHorizontalFlip(),
                           T.ToTensor(), T.Normalize(MEAN, STD)])
    dataset = torchvision.datasets.ImageFolder(spec["images"], transform=transform)
    for images, labels in dataloader_feeder(torch, spec, device, dataset):
        yield images.to(device, non_blocking=True), labels.to(device, non_blocking=True)


class EncodedFiles:
    """(image, label, encoded) of each ImageFolder file: the file's bytes as a uint8 tensor
    where the GPU can decode it (encoded True), else decoded here (PIL, uint8 [3, H, W])."""

    def __init__(self, torchvision, root):
        self.samples = torchvision.datasets.ImageFolder(root).samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        import io

        import torch
        from PIL import Image
        path, label = self.samples[i]
        with open(path, "rb") as f:
            data = f.read()
        image = Image.open(io.BytesIO(data))
        # nvJPEG decodes baseline and progressive JPEGs, grey or YCbCr; not PNG, not CMYK.
        if image.format == "JPEG" and image.mode in ("RGB", "L"):
            return torch.frombuffer(bytearray(data), dtype=torch.uint8), label, True
        rgb = torch.from_numpy(np.asarray(image.convert("RGB")).copy())
        return rgb.permute(2, 0, 1), label, False


def gpu_decode_feeder(torch, torchvision, spec, device):
    io = torchvision.io
    F = torch.nn.functional
    rgb = io.ImageReadMode.RGB
    version = tuple(int(v) for v in torchvision.__version__.split(".")[:2])
    # decode_jpeg takes a list on a GPU from torchvision 0.19, on the CPU from 0.20.
    batched = version >= (0, 20) or (version >= (0, 19) and str(device).startswith("cuda"))
    size = spec["image_size"]
    crop = torchvision.transforms.RandomResizedCrop.get_params
    normalize = normalizer(torch, device)
    dataset = EncodedFiles(torchvision, spec["images"])

    def collate(samples):
        return samples

    def decode(samples):
        jpegs = [data for data, _, encoded in samples if encoded]
        decoded = iter(io.decode_jpeg(jpegs, mode=rgb, device=device) if batched and jpegs
                       else [io.decode_jpeg(d, mode=rgb, device=device) for d in jpegs])
        return [next(decoded) if encoded else image.to(device, non_blocking=True)
                for image, _, encoded in samples]

    for samples in dataloader_feeder(torch, spec, device, dataset, collate):
        out = []
        for image in decode(samples):
            top, left, h, w = crop(image, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
            patch = image[None, :, top:top + h, left:left + w].float()
            patch = F.interpolate(patch, size=(size, size), mode="bilinear",
                                  align_corners=False, antialias=True)
            out.append(patch.flip(-1) if torch.rand(()) < 0.5 else patch)
        images = torch.cat(out).round_().clamp_(0, 255)
        labels = torch.tensor([label for _, label, _ in samples]).to(device, non_blocking=True)
        yield normalize(images), labels


def bound_feeder(torch, spec, device):
    gen = torch.Generator(device=device).manual_seed(0)
    shape = (spec["batch"], 3, spec["image_size"], spec["image_size"])
    images = torch.randn(shape, generator=gen, device=device).to(
        memory_format=torch.channels_last)
    labels = torch.randint(0, spec["classes"], (spec["batch"],), generator=gen, device=device)
    while True:
        yield images, labels


def make_feeder(torch, torchvision, spec, device):
    feeder = spec["feeder"]
    if feeder == "bound":
        return bound_feeder(torch, spec, device)
    if feeder.startswith("stoker"):
        return stoker_feeder(torch, spec, device)
    if feeder == "dataloader":
        return torchvision_feeder(torch, torchvision, spec, device)
    return gpu_decode_feeder(torch, torchvision, spec, device)


def make_step(torch, model, spec, device):
    """step(images, labels): one training step (nothing for model "none")."""
    if model is None:
        return lambda images, labels: None
    model = model.to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    forward = torch.compile(model) if spec["compile"] else model

    def step(images, labels):
        images = images.to(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = loss_fn(forward(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def run_row(spec):
    """Trains one row and returns its measurement (a dict)."""
    import torch
    import torchvision

    device = torch.device(spec["device"])
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = build_model(torch, torchvision, spec["model"], spec["classes"])
    step = make_step(torch, model, spec, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    batches = make_feeder(torch, torchvision, spec, device)
    # Warm-up: the first steps build the workers' pipelines, choose cuDNN's kernels and
    # compile; later ones only fill the queues, so past half the timed budget 3 are enough.
    t_setup = time.perf_counter()
    for i in range(spec["warmup_steps"]):
        step(*next(batches))
        if i >= 2 and time.perf_counter() - t_setup > spec["seconds"] / 2:
            break
    sync()
    warm = time.perf_counter() - t_setup
    cpu0, t0 = os.times(), time.perf_counter()
    steps = 0
    while steps < spec["steps"] and (steps < 3 or time.perf_counter() - t0 < spec["seconds"]):
        step(*next(batches))
        steps += 1
    sync()
    elapsed = time.perf_counter() - t0
    cpu1 = os.times()
    row = {k: spec[k] for k in ("model", "feeder", "cores", "workers", "compile")}
    row.update(images_per_s=steps * spec["batch"] / elapsed, steps=steps, seconds=elapsed,
               warmup_seconds=warm,
               main_process_cpu_s=(cpu1.user + cpu1.system) - (cpu0.user + cpu0.system))
    if device.type == "cuda":
        row["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return row


# ---- the orchestrating process ------------------------------------------------------------

def row_command(spec):
    """The command for one row: this script, pinned to the row's cores."""
    cores = f"0-{spec['cores'] - 1}"
    return ["taskset", "-c", cores, sys.executable, os.path.abspath(__file__),
            "--row", json.dumps(spec)]


def run_rows(specs, scratch):
    """Runs each row in its own process, which writes its measurement to a file (not to a
    pipe, which its DataLoader workers would hold open after it exits)."""
    rows = []
    for i, spec in enumerate(specs):
        label = (f"{spec['model']:<9} {spec['feeder']:<11} {spec['cores']:>2} cores"
                 + (" compiled" if spec["compile"] else ""))
        print(f"gpu_feed: {label} ...", file=sys.stderr, flush=True)
        spec = {**spec, "result": os.path.join(scratch, f"row-{i}.json")}
        try:
            code = subprocess.run(row_command(spec), timeout=ROW_TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            code = f"killed after {ROW_TIMEOUT_S} s"
        if code != 0 or not os.path.exists(spec["result"]):
            rows.append({**spec, "error": f"exit status {code}"})
            print(f"gpu_feed: {label} FAILED (exit status {code})", file=sys.stderr)
            continue
        with open(spec["result"]) as f:
            row = json.load(f)
        rows.append(row)
        print(f"gpu_feed: {label} {row['images_per_s']:,.0f} images/s", file=sys.stderr)
    return rows


def plan(args, images, dataset):
    """The rows to run, in order: each model's bound first."""
    base = {"device": args.device, "batch": args.batch, "image_size": args.image_size,
            "classes": args.classes, "warmup_steps": args.warmup_steps, "steps": args.steps,
            "seconds": args.seconds, "images": images, "dataset": dataset, "compile": False}
    most = args.core_list[-1]
    specs = []
    for model in args.model_list:
        for feeder in args.feeder_list:
            if feeder == "bound":
                if model != "none":
                    specs.append({**base, "model": model, "feeder": feeder, "cores": most,
                                  "workers": 0})
                continue
            for cores in args.core_list:
                specs.append({**base, "model": model, "feeder": feeder, "cores": cores,
                              "workers": cores})
        if args.compile and model not in ("none",):
            for feeder in ("bound", "stoker"):
                specs.append({**base, "model": model, "feeder": feeder, "cores": most,
                              "workers": 0 if feeder == "bound" else most, "compile": True})
    return specs


def summarize(rows):
    """Adds fraction_of_bound to each row; returns per (model, feeder, compile) summaries."""
    bound = {(r["model"], r["compile"]): r["images_per_s"] for r in rows
             if r["feeder"] == "bound" and "error" not in r}
    summary = []
    for key in dict.fromkeys((r["model"], r["feeder"], r["compile"]) for r in rows):
        model, feeder, compiled = key
        mine = [r for r in rows if (r["model"], r["feeder"], r["compile"]) == key
                and "error" not in r]
        ref = bound.get((model, compiled))
        for r in mine:
            r["fraction_of_bound"] = r["images_per_s"] / ref if ref else None
        if feeder == "bound" or not mine:
            continue
        best = max(mine, key=lambda r: r["images_per_s"])
        enough = [r["cores"] for r in mine if ref and r["images_per_s"] >= TARGET * ref]
        summary.append({"model": model, "feeder": feeder, "compile": compiled,
                        "cores_to_95": min(enough) if enough else None,
                        "best_images_per_s": best["images_per_s"], "best_cores": best["cores"],
                        "best_images_per_s_per_core": best["images_per_s"] / best["cores"],
                        "bound_images_per_s": ref})
    return summary


def plot(rows, path, title):
    """images/s against cores, one panel per model, the bound as a dashed line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows if not r["compile"]))
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
    for ax, model in zip(axes[0], models):
        mine = [r for r in rows if r["model"] == model and not r["compile"] and "error" not in r]
        for feeder in dict.fromkeys(r["feeder"] for r in mine):
            points = sorted((r["cores"], r["images_per_s"]) for r in mine
                            if r["feeder"] == feeder)
            if feeder == "bound":
                ax.axhline(points[0][1], linestyle="--", color="grey", label="bound (resident)")
                ax.axhline(TARGET * points[0][1], linestyle=":", color="grey", label="95%")
            else:
                ax.plot(*zip(*points), marker="o", label=feeder)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["cores"] for r in mine}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("CPU cores (taskset; workers = cores)")
        ax.set_ylabel("images/s")
        ax.set_title(model)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{path}.{ext}", dpi=110)
    plt.close(fig)


def dry_run_data(folder):
    """A tiny ImageFolder (bench/make_image_set.py, 4 images a class) and its stoker dataset."""
    images = os.path.join(folder, "images")
    subprocess.run([sys.executable, os.path.join(HERE, "make_image_set.py"), images,
                    "--per-class", "4", "--val-per-class", "0", "--workers", "2"], check=True)
    import stoker
    dataset = os.path.join(folder, "dataset")
    stoker.convert("imagefolder", os.path.join(images, "train"), dataset, progress=False)
    return os.path.join(images, "train"), dataset


def print_table(rows, summary):
    print(f"{'model':<9} {'feeder':<11} {'cores':>5} {'compile':>7} {'images/s':>10} "
          f"{'of bound':>8}")
    for r in rows:
        rate = f"{r['images_per_s']:>10,.0f}" if "error" not in r else f"{'FAILED':>10}"
        frac = r.get("fraction_of_bound")
        print(f"{r['model']:<9} {r['feeder']:<11} {r['cores']:>5} {str(r['compile']):>7} "
              f"{rate} {'' if frac is None else f'{frac:>8.1%}'}")
    print(f"\n{'model':<9} {'feeder':<11} {'compile':>7} {'cores to 95%':>12} "
          f"{'best images/s':>13} {'per core':>9}")
    for s in summary:
        cores = ("no bound" if s["bound_images_per_s"] is None
                 else "never" if s["cores_to_95"] is None else str(s["cores_to_95"]))
        print(f"{s['model']:<9} {s['feeder']:<11} {str(s['compile']):>7} {cores:>12} "
              f"{s['best_images_per_s']:>13,.0f} {s['best_images_per_s_per_core']:>9,.0f}")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.row:
        spec = json.loads(args.row)
        row = run_row(spec)
        with open(spec["result"], "w") as f:
            json.dump(row, f)
        print(json.dumps(row), flush=True)
        sys.stderr.flush()
        os._exit(0)  # no teardown of workers and CUDA: the measurement is written
    import torch
    import torchvision

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_feed: --device cuda but torch.cuda.is_available() is False (use --device "
              "cpu --dry-run here)", file=sys.stderr)
        return 2
    if args.compile and not hasattr(torch, "compile"):
        print(f"gpu_feed: torch {torch.__version__} has no torch.compile: --compile ignored",
              file=sys.stderr)
        args.compile = False
    with tempfile.TemporaryDirectory(prefix="gpu_feed-") as scratch:
        images, dataset = args.images, args.dataset
        if args.dry_run and not (images and dataset):
            images, dataset = dry_run_data(scratch)
        specs = plan(args, os.path.abspath(images), os.path.abspath(dataset))
        rows = run_rows(specs, scratch)
    summary = summarize(rows)
    machine = {"torch": torch.__version__, "torchvision": torchvision.__version__,
               "device": (torch.cuda.get_device_name() if args.device.startswith("cuda")
                          else "cpu"),
               "cores": len(os.sched_getaffinity(0)), "dry_run": args.dry_run}
    result = {"machine": machine, "batch": args.batch, "image_size": args.image_size,
              "rows": rows, "summary": summary}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    title = (f"{machine['device']}, torch {machine['torch']}, batch {args.batch}, "
             f"size {args.image_size}" + (" (DRY RUN: no meaning)" if args.dry_run else ""))
    if args.plot:
        plot(rows, args.plot, title)
    print(title)
    print_table(rows, summary)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
