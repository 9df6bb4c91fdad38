#!/usr/bin/env python3
"""stoker's Python loader side by side in one run: stoker.Loader's iteration rate against the
C++ `stoker bench loader` in the same configuration and against PyTorch's DataLoader, and the
classic training experiment in Python fed by each.

Sections (--sections, comma-separated, default overhead,loader,train, plus images with
--images):
  overhead  The Python side's cost per batch of the loader section's configuration (two
          fields, batch 256), with the batches already built: the prefetch window is let fill,
          then 60 batches are taken, best of 3 (what Python adds to the C++ loop).
  loader  Fashion-MNIST train, batch 256, shuffled, uint8 and float32 (Normalize(0.2860,
          0.3530)) out. `stoker bench loader --json` (C++; its epochs, workers and prefetch
          are then used for Python), stoker.Loader iterated in Python over the same epochs
          from epoch 0 (the first verifies every record, as in C++), and torchvision's
          FashionMNIST through DataLoader with 0 and 2 workers (torch_loader_baseline.py's
          variants, in this process). Ratios: Python / C++ (the issue's target >= 0.90) and
          Python / the best DataLoader (target >= 100).
  train   The MLP 784-128-64-10, batch 64, Adam 1e-3, one epoch, in torch_train_baseline.py's
          loop (in this process): DataLoader with 0 workers, 2, 2 + pin_memory, one resident
          batch (compute only), and stoker.Loader (float32, normalised by its workers).
          Ratios: stoker / resident (target <= 1.10), best DataLoader / stoker (target >= 4).
  images  A stoker dataset of JPEGs (--images, e.g. `stoker convert imagefolder` of
          bench/make_image_set.py's set): RandomResizedCrop(224) + flip + Normalize, batch 64,
          `stoker bench loader` against stoker.Loader with the same transforms (target: Python
          >= 0.95 of C++).

The Python loop counts samples per batch and reads nothing (a batch is complete when it is
yielded); the C++ loop reads one byte per batch. Threads: the main process computes with one
thread (OMP/OpenBLAS too), as the baselines do.

Run it with a Python that has the stoker package (the README's venv) and torch:
  build-python/venv/bin/python bench/python_loader.py [--stoker build/stoker] [--json]
      [--sections loader,train] [--images DATASET] [--workers N] [--smoke]
--smoke runs every path briefly (one epoch, short training) to check that it works; its
numbers mean nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fashion_mnist_torchvision as fm  # noqa: E402
import torch_loader_baseline as loader_baseline  # noqa: E402
import torch_train_baseline as train_baseline  # noqa: E402
from compare_loader import run_json  # noqa: E402

SECTIONS = ("overhead", "loader", "train", "images")
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stoker", default=os.path.join(HERE, "..", "build", "stoker"),
                   help="the C++ CLI (default build/stoker)")
    p.add_argument("--sections", default=None,
                   help="comma-separated subset of overhead, loader, train, images (default "
                        "all but images, and images if --images is given)")
    p.add_argument("--images", default=None, help="a stoker dataset of encoded images")
    p.add_argument("--workers", type=int, default=-1, help="loader threads (default auto)")
    p.add_argument("--epochs", type=int, default=3, help="epochs of each loader run (default 3)")
    p.add_argument("--min-seconds", type=float, default=1.0,
                   help="C++ runs shorter than this are repeated with more epochs (default 1)")
    p.add_argument("--smoke", action="store_true", help="a quick run of every path")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a = p.parse_args(argv)
    default = "overhead,loader,train" + (",images" if a.images else "")
    a.section_list = [s.strip() for s in (a.sections or default).split(",") if s.strip()]
    bad = [s for s in a.section_list if s not in SECTIONS]
    if bad:
        p.error(f"unknown section(s) {bad}; choose from {', '.join(SECTIONS)}")
    if "images" in a.section_list and not a.images:
        p.error("the images section needs --images DATASET")
    if a.smoke:
        a.epochs, a.min_seconds = 1, 0.0
    return a


def progress(args, text):
    if not args.json:
        print(text, file=sys.stderr, flush=True)


def cpp_loader(args, data, batch, *flags):
    """`stoker bench loader --json` on `data` (None: its default Fashion-MNIST)."""
    cmd = [args.stoker, "bench", "loader", "--json", "--batch", str(batch), "--epochs",
           str(args.epochs), "--workers", str(args.workers), "--min-seconds",
           str(args.min_seconds), *flags]
    if data:
        cmd += ["--data", data]
    return run_json(cmd)


def python_loader(stoker, cpp, transforms):
    """stoker.Loader in the C++ run's configuration, over as many epochs from epoch 0."""
    loader = stoker.Loader(cpp["data"], shuffle=True, batch_size=cpp["batch"], workers=cpp["workers"],
                           prefetch=cpp["prefetch"], verify=cpp["verify"],
                           transforms=transforms, batch_format="dict")
    meter = fm.CpuMeter()
    meter.start()
    samples = 0
    start = time.perf_counter()
    for e in range(cpp["epochs"]):
        for batch in loader.epoch(e):
            samples += batch["label"].shape[0]
    seconds = time.perf_counter() - start
    return {"samples_per_s": samples / seconds, "seconds": seconds, "epochs": cpp["epochs"],
            "samples": samples, **meter.stop(seconds)}


def overhead_section(args, stoker, data_dir):
    rows = []
    for output in ("uint8", "float32"):
        progress(args, f"overhead {output} ...")
        transforms = None if output == "uint8" else {
            "image": stoker.transforms.Normalize(fm.MEAN, fm.STD)}
        loader = stoker.Loader(data_dir, shuffle=True, batch_size=256, prefetch=64, transforms=transforms,
                               batch_format="dict")
        for _ in loader:  # the first epoch verifies every record
            pass
        best = float("inf")
        for e in range(1, 4):
            batches = loader.epoch(e)
            time.sleep(0.2 if args.smoke else 1.0)  # the 64-batch window fills
            start = time.perf_counter()
            for _ in range(60):
                next(batches)
            best = min(best, (time.perf_counter() - start) / 60)
            batches.close()
        rows.append({"name": f"stoker Python {output}", "us_per_batch": best * 1e6})
    return rows


def fashion_dir(args):
    """stoker's Fashion-MNIST train set: a one-epoch C++ run converts it on first use and says
    where it is."""
    quick = argparse.Namespace(**{**vars(args), "epochs": 1, "min_seconds": 0.0})
    return cpp_loader(quick, None, 256)["data"]


def loader_section(args, stoker, torch):
    rows = []
    for output in ("uint8", "float32"):
        progress(args, f"loader {output}: C++ ...")
        cpp = cpp_loader(args, None, 256, *(["--uint8"] if output == "uint8" else []))
        transforms = None if output == "uint8" else {
            "image": stoker.transforms.Normalize(fm.MEAN, fm.STD)}
        progress(args, f"loader {output}: Python ...")
        py = python_loader(stoker, cpp, transforms)
        rows.append({"name": f"stoker C++ {output}", "samples_per_s": cpp["samples_per_s"],
                     "seconds": cpp["seconds"], "epochs": cpp["epochs"],
                     "workers": cpp["workers"], "prefetch": cpp["prefetch"]})
        rows.append({"name": f"stoker Python {output}", **py, "workers": cpp["workers"],
                     "prefetch": cpp["prefetch"],
                     "python_over_cpp": py["samples_per_s"] / cpp["samples_per_s"]})
    baseline_args = loader_baseline.parse_args(
        ["--variants", "torchvision_w0,torchvision_w2"] +
        (["--epochs", "1", "--warmup-epochs", "0", "--min-seconds", "0"] if args.smoke else []))
    data_u8, labels = fm.load_uint8(train=True, cache=baseline_args.cache)
    for name in baseline_args.variant_list:
        progress(args, f"loader: DataLoader {name} ...")
        r = loader_baseline.run_variant(name, baseline_args, torch, data_u8, labels)
        rows.append({**r, "name": f"pytorch {name}"})
    best_torch = max(r["samples_per_s"] for r in rows if r["name"].startswith("pytorch"))
    for r in rows:
        if r["name"].startswith("stoker Python"):
            r["python_over_best_dataloader"] = r["samples_per_s"] / best_torch
    return rows, cpp["data"]


class Pairs:
    """(image, label) of each batch of a stoker.Loader, for the baseline's training loop."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        return ((b["image"], b["label"]) for b in self.loader)


def train_section(args, stoker, torch, data_dir):
    train_args = train_baseline.parse_args(
        ["--max-steps", "20", "--warmup-batches", "2"] if args.smoke else [])
    cuda = bool(torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    fm.prepare_root(train_args.cache, quiet=True)
    ds = fm.fashion_mnist(train=True, transform=fm.standard_transform(), cache=train_args.cache)
    rows = []
    for name in ("w0", "w2", "w2_pin", "compute_only"):
        progress(args, f"train: DataLoader {name} ...")
        rows.append(train_baseline.run_variant(name, torch, ds, train_args, device, cuda))
    progress(args, "train: stoker.Loader ...")
    loader = stoker.Loader(data_dir, shuffle=True, batch_size=train_args.batch, seed=train_args.seed,
                           workers=None if args.workers < 0 else args.workers,
                           transforms={"image": stoker.transforms.Normalize(fm.MEAN, fm.STD)},
                           device=str(device), batch_format="dict")
    r = train_baseline.run_variant("stoker", torch, ds, train_args, device, cuda,
                                   batches=Pairs(loader))
    r.update(num_workers=loader.options["workers"], pin_memory=cuda)
    rows.append(r)
    by_name = {row["name"]: row for row in rows}
    best = min(by_name[n]["seconds"] for n in ("w0", "w2", "w2_pin"))
    r["over_compute_only"] = r["seconds"] / by_name["compute_only"]["seconds"]
    r["best_dataloader_over_this"] = best / r["seconds"]
    return rows


def images_section(args, stoker):
    progress(args, "images: C++ ...")
    cpp = cpp_loader(args, args.images, 64)
    t = stoker.transforms
    pipeline = t.Compose([t.RandomResizedCrop(224), t.RandomHorizontalFlip(), t.ToTensor(),
                          t.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    progress(args, "images: Python ...")
    py = python_loader(stoker, cpp, {"image": pipeline})
    return [{"name": "stoker C++ images", "samples_per_s": cpp["samples_per_s"],
             "seconds": cpp["seconds"], "epochs": cpp["epochs"], "workers": cpp["workers"]},
            {"name": "stoker Python images", **py, "workers": cpp["workers"],
             "python_over_cpp": py["samples_per_s"] / cpp["samples_per_s"]}]


def print_tables(out):
    if "overhead" in out:
        print("\noverhead: Python's cost per batch with the batches ready")
        for r in out["overhead"]:
            print(f"{r['name']:<30} {r['us_per_batch']:>8.2f} us")
    for section in ("loader", "images"):
        if section not in out:
            continue
        print(f"\n{section}: samples/s")
        print(f"{'variant':<30} {'samples/s':>12} {'seconds':>8}  ratios")
        for r in out[section]:
            ratios = "  ".join(f"{k} {r[k]:.2f}" for k in (
                "python_over_cpp", "python_over_best_dataloader") if k in r)
            print(f"{r['name']:<30} {r['samples_per_s']:>12,.0f} {r['seconds']:>8.3f}  {ratios}")
    if "train" in out:
        print("\ntrain: one epoch of the MLP, batch 64")
        print(f"{'variant':<14} {'seconds':>8} {'data_wait':>10} {'steps':>6} {'mean_loss':>10}"
              "  ratios")
        for r in out["train"]:
            ratios = "  ".join(f"{k} {r[k]:.2f}" for k in (
                "over_compute_only", "best_dataloader_over_this") if k in r)
            print(f"{r['name']:<14} {r['seconds']:>8.3f} {r['data_wait_s']:>10.3f} "
                  f"{r['steps']:>6d} {r['mean_loss']:>10.4f}  {ratios} {r.get('note', '')}")
    if out.get("smoke"):
        print("\n(--smoke: a check that every path runs; these numbers mean nothing)")


def main(argv=None) -> int:
    args = parse_args(argv)
    env = fm.configure_threads(1)  # before torch is imported
    at_start = fm.warn_if_busy(quiet=args.json)
    import torch

    import stoker

    torch.set_num_threads(1)
    out = {"smoke": args.smoke}
    data_dir = None  # stoker's Fashion-MNIST train set, where the C++ CLI converted it
    if "loader" in args.section_list:
        out["loader"], data_dir = loader_section(args, stoker, torch)
    if {"overhead", "train"} & set(args.section_list) and data_dir is None:
        data_dir = fashion_dir(args)
    if "overhead" in args.section_list:
        out["overhead"] = overhead_section(args, stoker, data_dir)
    if "train" in args.section_list:
        out["train"] = train_section(args, stoker, torch, data_dir)
    if "images" in args.section_list:
        out["images"] = images_section(args, stoker)
    out["machine"] = fm.machine_info(env, at_start, {"stoker": stoker.__version__})
    fm.emit(out, args.json, lambda: print_tables(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
