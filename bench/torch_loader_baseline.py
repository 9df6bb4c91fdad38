#!/usr/bin/env python3
"""Loader-only throughput of PyTorch ways to feed Fashion-MNIST (the baselines for
`stoker bench loader`).

Fashion-MNIST train (60000 samples), batch 256, shuffled every epoch. Each variant yields
normalised float32 images [B,1,28,28] plus int64 labels; the loop touches one element of each
batch (a checksum) so no work can be skipped. No model, no training step.

Variants (--variants, comma-separated, default all):
  torchvision_w0    torchvision FashionMNIST (PIL per sample) + ToTensor + Normalize,
                    DataLoader(num_workers=0)
  torchvision_w2    same, num_workers=2, persistent_workers=True
  tensordataset_w0  uint8 images as one tensor in a TensorDataset, DataLoader(num_workers=0);
                    uint8 -> normalised float32 per batch in the loop (the same work as stoker)
  gather            index_select of an already-normalised float32 tensor with a shuffled
                    permutation, batch by batch: the memory-bound reference

Timing: --warmup-epochs (default: 1 for variants with workers, 0 otherwise) are run and not
counted, then --epochs (default 2) are timed; fast variants keep running whole epochs until at
least --min-seconds (default 1.0) have been timed, and report how many epochs they ran.

Run:   .venv/bin/python bench/torch_loader_baseline.py [--json] [--variants a,b] [--batch 256]
Exit status: 0 ok, 2 dataset missing / bad arguments, 1 other failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_torchvision as fm  # noqa: E402

VARIANTS = ("torchvision_w0", "torchvision_w2", "tensordataset_w0", "gather")
N_WORKERS = {"torchvision_w0": 0, "torchvision_w2": 2, "tensordataset_w0": 0, "gather": 0}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=256, help="batch size (default 256)")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs (default 2)")
    p.add_argument("--warmup-epochs", type=int, default=None,
                   help="untimed epochs first (default: 1 if the variant has workers, else 0)")
    p.add_argument("--min-seconds", type=float, default=1.0,
                   help="keep timing whole epochs until this much time is measured (default 1)")
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads of the main process (torch, OpenMP, OpenBLAS); "
                        "default 1")
    fm.add_common_args(p, VARIANTS)
    a = p.parse_args(argv)
    names = fm.parse_variants(p, a.variants, VARIANTS)
    if a.batch < 1 or a.epochs < 1 or a.threads < 1 or (a.warmup_epochs or 0) < 0:
        p.error("--batch, --epochs and --threads must be >= 1, --warmup-epochs >= 0")
    a.variant_list = names
    return a


def make_epoch_fn(name, args, torch, data_u8, labels):
    """Returns (epoch() -> (samples, checksum), cleanup()) for one variant."""
    g = torch.Generator()
    g.manual_seed(args.seed)
    B = args.batch
    mean, std = fm.MEAN, fm.STD

    if name.startswith("torchvision"):
        nw = N_WORKERS[name]
        ds = fm.fashion_mnist(train=True, transform=fm.standard_transform(), cache=args.cache)
        loader = torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, num_workers=nw,
                                             persistent_workers=nw > 0, generator=g)

        return fm.dataloader_epoch(loader)

    if name == "tensordataset_w0":
        ds = torch.utils.data.TensorDataset(data_u8.unsqueeze(1), labels)
        loader = torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, num_workers=0,
                                             generator=g)

        def epoch():
            n, cs = 0, 0.0
            for xb, y in loader:
                x = xb.float().div_(255.0).sub_(mean).div_(std)  # == ToTensor + Normalize
                cs += float(x[-1, 0, 14, 14]) + int(y[-1])
                n += x.shape[0]
            return n, cs
        return epoch, lambda: None

    if name == "gather":
        X = data_u8.unsqueeze(1).float().div_(255.0).sub_(mean).div_(std).contiguous()
        Y = labels.contiguous()
        N = X.shape[0]

        def epoch():
            n, cs = 0, 0.0
            perm = torch.randperm(N, generator=g)
            for i in range(0, N, B):
                idx = perm[i:i + B]
                x = X.index_select(0, idx)
                y = Y.index_select(0, idx)
                cs += float(x[-1, 0, 14, 14]) + int(y[-1])
                n += x.shape[0]
            return n, cs
        return epoch, lambda: None

    raise ValueError(name)


def run_variant(name, args, torch, data_u8, labels):
    epoch, cleanup = make_epoch_fn(name, args, torch, data_u8, labels)
    warm = args.warmup_epochs if args.warmup_epochs is not None else (1 if N_WORKERS[name] else 0)
    try:
        for _ in range(warm):
            epoch()
        samples, checksum, epochs = 0, 0.0, 0
        meter = fm.CpuMeter()
        meter.start()
        t0 = time.perf_counter()
        while True:
            n, cs = epoch()
            samples += n
            checksum += cs
            epochs += 1
            elapsed = time.perf_counter() - t0
            if epochs >= args.epochs and (elapsed >= args.min_seconds or epochs >= 10000):
                break
        cpu = meter.stop(elapsed)
    finally:
        cleanup()
    return {
        "name": name,
        "samples_per_s": samples / elapsed,
        "seconds": elapsed,
        "epochs": epochs,
        "samples": samples,
        "warmup_epochs": warm,
        "num_workers": N_WORKERS[name],
        "checksum": checksum,
        **cpu,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    env = fm.configure_threads(args.threads)  # before torch is imported
    at_start = fm.warn_if_busy()
    import torch

    torch.set_num_threads(args.threads)
    try:
        fm.prepare_root(args.cache, quiet=args.json)
        data_u8, labels = fm.load_uint8(train=True, cache=args.cache)
    except fm.DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    results = fm.run_variants(args, lambda name: run_variant(name, args, torch, data_u8, labels))

    machine = fm.machine_info(env, at_start)
    out = {"machine": machine, "batch": args.batch, "dataset": "fashion-mnist-train",
           "samples_per_epoch": int(data_u8.shape[0]), "results": results}

    def print_table():
        print(f"torch {machine['torch']}, torchvision {machine['torchvision']}, "
              f"nproc {machine['nproc']}, threads {machine['torch_threads']}, "
              f"batch {args.batch}, {out['samples_per_epoch']} samples/epoch")
        print(f"{'variant':<18} {'samples/s':>12} {'seconds':>9} {'epochs':>7} {'workers':>8}")
        for r in results:
            print(f"{r['name']:<18} {r['samples_per_s']:>12,.0f} {r['seconds']:>9.3f} "
                  f"{r['epochs']:>7d} {r['num_workers']:>8d}")

    fm.emit(out, args.json, print_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
