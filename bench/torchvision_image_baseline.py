#!/usr/bin/env python3
"""Loader-only throughput of torchvision's image pipeline (the baseline for
`stoker bench loader` on an image dataset).

torchvision ImageFolder (PIL decode, convert("RGB")) + RandomResizedCrop(size) +
RandomHorizontalFlip + ToTensor + Normalize(ImageNet mean/std), batched by DataLoader,
shuffled; float32 [B,3,size,size] out. The loop touches one element of each batch (a checksum)
so no work can be skipped. No model, no training step.

Variants (--variants, comma-separated, default all):
  torchvision_w0   DataLoader(num_workers=0)
  torchvision_w2   DataLoader(num_workers=2, persistent_workers=True)
  pil_decode       PIL decode + convert("RGB") of every file, one process: the full-decode
                   rate without augmentation (what decoding alone costs PIL)

Timing: --warmup-epochs (default: 1 for variants with workers, 0 otherwise) run untimed, then
--epochs (default 1) are timed.

Run:   .venv/bin/python bench/torchvision_image_baseline.py DIR [--json] [--variants a,b]
DIR is an ImageFolder tree (e.g. bench/make_image_set.py's OUT/train).
Exit status: 0 ok, 2 missing data / bad arguments, 1 other failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_torchvision as fm  # noqa: E402  (the machine probe and report helpers)

VARIANTS = ("torchvision_w0", "torchvision_w2", "pil_decode")
N_WORKERS = {"torchvision_w0": 0, "torchvision_w2": 2, "pil_decode": 0}
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="an ImageFolder directory (class subfolders)")
    p.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    p.add_argument("--image-size", type=int, default=224, help="crop size (default 224)")
    p.add_argument("--epochs", type=int, default=1, help="timed epochs (default 1)")
    p.add_argument("--warmup-epochs", type=int, default=None,
                   help="untimed epochs first (default: 1 if the variant has workers, else 0)")
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads of the main process (default 1)")
    fm.add_common_args(p, VARIANTS)
    a = p.parse_args(argv)
    a.variant_list = fm.parse_variants(p, a.variants, VARIANTS)
    if min(a.batch, a.epochs, a.threads, a.image_size) < 1 or (a.warmup_epochs or 0) < 0:
        p.error("--batch, --epochs, --threads and --image-size must be >= 1")
    if not os.path.isdir(a.data):
        p.error(f"{a.data}: not a directory")
    return a


def make_epoch_fn(name, args, torch, torchvision):
    """Returns (epoch() -> (samples, checksum), cleanup()) for one variant."""
    from PIL import Image
    T = torchvision.transforms
    if name == "pil_decode":
        files = [path for path, _ in torchvision.datasets.ImageFolder(args.data).samples]

        def epoch():
            cs = 0
            for path in files:
                with Image.open(path) as img:
                    cs += img.convert("RGB").getpixel((0, 0))[0]
            return len(files), float(cs)
        return epoch, lambda: None

    transform = T.Compose([T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(),
                           T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(args.data, transform=transform)
    g = torch.Generator()
    g.manual_seed(args.seed)
    nw = N_WORKERS[name]
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=nw,
                                         persistent_workers=nw > 0, generator=g)

    return fm.dataloader_epoch(loader)


def run_variant(name, args, torch, torchvision):
    epoch, cleanup = make_epoch_fn(name, args, torch, torchvision)
    warm = args.warmup_epochs if args.warmup_epochs is not None else (1 if N_WORKERS[name] else 0)
    try:
        for _ in range(warm):
            epoch()
        samples, checksum = 0, 0.0
        meter = fm.CpuMeter()
        meter.start()
        t0 = time.perf_counter()
        for _ in range(args.epochs):
            n, cs = epoch()
            samples += n
            checksum += cs
        elapsed = time.perf_counter() - t0
        cpu = meter.stop(elapsed)
    finally:
        cleanup()
    return {"name": name, "samples_per_s": samples / elapsed, "seconds": elapsed,
            "epochs": args.epochs, "samples": samples, "warmup_epochs": warm,
            "num_workers": N_WORKERS[name], "checksum": checksum, **cpu}


def main(argv=None) -> int:
    args = parse_args(argv)
    env = fm.configure_threads(args.threads)  # before torch is imported
    at_start = fm.warn_if_busy()
    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    results = fm.run_variants(args, lambda name: run_variant(name, args, torch, torchvision))
    machine = fm.machine_info(env, at_start)
    out = {"machine": machine, "batch": args.batch, "image_size": args.image_size,
           "dataset": os.path.abspath(args.data), "results": results}

    def print_table():
        print(f"torch {machine['torch']}, torchvision {machine['torchvision']}, "
              f"nproc {machine['nproc']}, batch {args.batch}, size {args.image_size}")
        print(f"{'variant':<16} {'images/s':>10} {'seconds':>9} {'workers':>8}")
        for r in results:
            print(f"{r['name']:<16} {r['samples_per_s']:>10,.0f} {r['seconds']:>9.2f} "
                  f"{r['num_workers']:>8d}")

    fm.emit(out, args.json, print_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
