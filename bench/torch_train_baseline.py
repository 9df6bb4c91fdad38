#!/usr/bin/env python3
"""The classic PyTorch training experiment (the baseline for `stoker train`): one epoch of an
MLP on Fashion-MNIST, and how much of it is spent waiting for data.

Model nn.Sequential(Flatten, Linear(784,128), ReLU, Linear(128,64), ReLU, Linear(64,10)),
CrossEntropyLoss, Adam lr 1e-3, batch 64, shuffle, torchvision FashionMNIST with
ToTensor + Normalize((0.2860,), (0.3530,)). ONE epoch timed per variant; every variant starts
from the same initial weights and (with the same seed) sees the same sample order.

Variants (--variants, comma-separated, default all):
  w0            DataLoader(num_workers=0)
  w2            DataLoader(num_workers=2)  (workers started by the epoch: their start-up
                is part of the epoch, as it is without persistent_workers)
  w2_pin        num_workers=2, pin_memory=True, .to(device, non_blocking=True). pin_memory
                needs CUDA: without it the variant runs with pin_memory=False (still
                non_blocking copies) and says so in "pin_memory"/"note".
  compute_only  the same model stepping on one resident batch for the same number of steps:
                the bound a perfect loader would reach.

Per variant: seconds for the epoch, data_wait_s (time inside iter()/next() summed over steps),
compute_s (the rest), steps, final_loss (last step), mean_loss (over the epoch).

Threads: the main process uses --threads (default 1) intra-op threads, also imposed on OpenMP
and OpenBLAS through OMP_NUM_THREADS/OPENBLAS_NUM_THREADS (torch.set_num_threads does not bound
Debian's OpenBLAS pool). On a 2-core machine one core computes and the other is left to the
DataLoader workers (which PyTorch itself runs with 1 thread each); letting the main process use
both cores would make it fight its own workers.

--warmup-batches N (default 10) steps a throw-away copy of the model on N batches drawn
in-process before each variant, untimed, so one-time costs (allocator, lazy init, first
PIL/transform calls) don't land on whichever variant runs first.

Run:   .venv/bin/python bench/torch_train_baseline.py [--json] [--variants w0,w2] [--threads 1]
Exit status: 0 ok, 2 dataset missing / bad arguments, 1 other failure.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_torchvision as fm  # noqa: E402

VARIANTS = ("w0", "w2", "w2_pin", "compute_only")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads of the main process (default 1; see above)")
    p.add_argument("--warmup-batches", type=int, default=10,
                   help="untimed steps of a throw-away model copy before each variant")
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop the epoch after this many steps (for quick checks; default: "
                        "full epoch)")
    fm.add_common_args(p, VARIANTS)
    a = p.parse_args(argv)
    names = fm.parse_variants(p, a.variants, VARIANTS)
    if a.batch < 1 or a.threads < 1 or a.warmup_batches < 0 or (a.max_steps is not None
                                                                and a.max_steps < 1):
        p.error("--batch, --threads, --max-steps must be >= 1, --warmup-batches >= 0")
    a.variant_list = names
    return a


def build_model(torch, seed):
    nn = torch.nn
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64),
                         nn.ReLU(), nn.Linear(64, 10))


def make_loader(torch, ds, args, num_workers, pin_memory):
    g = torch.Generator()
    g.manual_seed(args.seed)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True,
                                       num_workers=num_workers, pin_memory=pin_memory,
                                       generator=g)


def warm_up(torch, model, ds, args, device):
    """N untimed steps on a throw-away copy: the measured model and order are untouched."""
    if args.warmup_batches == 0:
        return
    scratch = copy.deepcopy(model)
    opt = torch.optim.Adam(scratch.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator()
    g.manual_seed(args.seed + 1)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True,
                                         num_workers=0, generator=g)
    for i, (x, y) in enumerate(loader):
        if i >= args.warmup_batches:
            break
        x, y = x.to(device), y.to(device)
        opt.zero_grad(set_to_none=True)
        loss_fn(scratch(x), y).backward()
        opt.step()


def run_variant(name, torch, ds, args, device, cuda, batches=None):
    """One variant's epoch. `batches`, an iterable of (x, y), replaces the DataLoader when
    given (bench/python_loader.py feeds stoker.Loader through the same loop)."""
    model = build_model(torch, args.seed).to(device)
    warm_up(torch, model, ds, args, device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    full_steps = math.ceil(len(ds) / args.batch)
    steps_limit = min(full_steps, args.max_steps) if args.max_steps else full_steps

    num_workers = 0 if name in ("w0", "compute_only") else 2
    want_pin = name == "w2_pin"
    pin = want_pin and cuda
    non_blocking = want_pin
    extra = {}
    if want_pin and not cuda:
        extra["note"] = "no CUDA: pin_memory unavailable"

    meter = fm.CpuMeter()
    data_wait = 0.0
    first_batch = None
    loss_sum = 0.0
    steps = 0
    samples = 0
    loss_val = float("nan")

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    if name == "compute_only":
        # The first batch of the same shuffled order, resident on the device.
        x, y = next(iter(make_loader(torch, ds, args, 0, False)))
        x, y = x.to(device), y.to(device)
        # The epoch's last batch is short (60000 % 64 = 32): step on a slice there too, so
        # steps and samples match the loader variants exactly.
        last = len(ds) - (full_steps - 1) * args.batch
        meter.start()
        t0 = time.perf_counter()
        for i in range(steps_limit):
            if i == full_steps - 1 and last < args.batch:
                x, y = x[:last], y[:last]
            loss_val = step(x, y)
            loss_sum += loss_val
            steps += 1
            samples += x.shape[0]
        seconds = time.perf_counter() - t0
        cpu = meter.stop(seconds)
    else:
        loader = batches if batches is not None else make_loader(torch, ds, args, num_workers,
                                                                 pin)
        meter.start()
        t0 = time.perf_counter()
        it = iter(loader)  # starts the workers: counted as waiting for data
        while steps < steps_limit:
            tw = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            waited = time.perf_counter() - tw
            if first_batch is None:
                first_batch = time.perf_counter() - t0
                data_wait += tw - t0  # iter() itself
            data_wait += waited
            x = x.to(device, non_blocking=non_blocking)
            y = y.to(device, non_blocking=non_blocking)
            loss_val = step(x, y)
            loss_sum += loss_val
            steps += 1
            samples += x.shape[0]
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        cpu = meter.stop(seconds)
        del it  # shuts the workers down (outside the timed region)

    r = {
        "name": name,
        "seconds": seconds,
        "data_wait_s": data_wait,
        "compute_s": seconds - data_wait,
        "steps": steps,
        "samples": samples,
        "samples_per_s": samples / seconds if seconds > 0 else 0.0,
        "final_loss": loss_val,
        "mean_loss": loss_sum / steps if steps else float("nan"),
        "num_workers": num_workers,
        "pin_memory": pin,
        "first_batch_s": first_batch if first_batch is not None else 0.0,
        **cpu,
    }
    r.update(extra)
    return r


def main(argv=None) -> int:
    args = parse_args(argv)
    env = fm.configure_threads(args.threads)  # before torch is imported
    at_start = fm.warn_if_busy()
    import torch

    torch.set_num_threads(args.threads)
    cuda = bool(torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    try:
        fm.prepare_root(args.cache, quiet=args.json)
        ds = fm.fashion_mnist(train=True, transform=fm.standard_transform(), cache=args.cache)
    except fm.DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    results = fm.run_variants(args, lambda name: run_variant(name, torch, ds, args, device, cuda))

    machine = fm.machine_info(env, at_start, {"device": str(device)})
    out = {"machine": machine, "batch": args.batch, "lr": args.lr, "seed": args.seed,
           "model": "mlp-784-128-64-10", "dataset": "fashion-mnist-train",
           "warmup_batches": args.warmup_batches, "results": results}

    def print_table():
        print(f"torch {machine['torch']}, torchvision {machine['torchvision']}, "
              f"nproc {machine['nproc']}, threads {machine['torch_threads']}, "
              f"device {device}, batch {args.batch}")
        print(f"{'variant':<13} {'seconds':>8} {'data_wait':>10} {'compute':>8} {'steps':>6} "
              f"{'samples/s':>10} {'final_loss':>11} {'mean_loss':>10}  note")
        for r in results:
            print(f"{r['name']:<13} {r['seconds']:>8.3f} {r['data_wait_s']:>10.3f} "
                  f"{r['compute_s']:>8.3f} {r['steps']:>6d} {r['samples_per_s']:>10,.0f} "
                  f"{r['final_loss']:>11.4f} {r['mean_loss']:>10.4f}  {r.get('note', '')}")

    fm.emit(out, args.json, print_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
