#!/usr/bin/env python3
"""Data-parallel scaling of `stoker train`: 2 ranks x 1 thread under torchrun against 1 rank x 1 thread.

Workload (issue 13): the MLP on Fashion-MNIST, batch 64 per rank, Adam 1e-3, no evaluation.
Each run writes a --log; the epoch times come from its `epoch` records (the first epoch of a
run is warm-up and left out), as do the all-reduce figures of the 2-rank runs: per optimizer
step, how long the gradient all-reduce took (first bucket started to all done) and how much of
that backward did not hide. The two configurations alternate, ABBA, so that drift on a shared
machine falls on both. Target: the 2-rank epoch at most 0.625x the 1-rank one (scaling
efficiency 80%).

  .venv/bin/python bench/dist_scaling.py [--stoker build/stoker] [--epochs 4] [--repeat 2] [--torch]
                                         [--model mlp] [--workers 0] [--launcher torchrun|nproc] [--json]

Run it on an otherwise idle machine: 2 ranks on a 2-core box use every core.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def train_command(args, log, ranks):
    train = [args.stoker, "train", "--model", args.model, "--batch", "64",
             "--epochs", str(args.epochs),
             "--threads", "1", "--workers", str(args.workers), "--no-eval", "--seed", "0",
             "--log", log]
    if ranks == 1:
        return train
    if args.launcher == "nproc":
        return train + ["--nproc", str(ranks)]
    # Debian's torchrun: --no_python with an underscore; --redirects/--tee or it crashes on 3.11.
    return [args.torchrun, "--no_python", "--standalone", "--nproc_per_node", str(ranks),
            "--redirects", "1", "--tee", "1"] + train


def run(args, ranks, scratch, index):
    log = os.path.join(scratch, f"ranks{ranks}-{index}.jsonl")
    cmd = train_command(args, log, ranks)
    print("running:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        epochs = [r for r in map(json.loads, f) if r["record"] == "epoch"]
    if len(epochs) != args.epochs:
        raise SystemExit(f"{log}: {len(epochs)} epoch records, expected {args.epochs}")
    return epochs[1:] if len(epochs) > 1 else epochs


def run_torch(args, ranks):
    """PyTorch's DDP on the same workload (torch_ddp_baseline.py): its timed epochs."""
    cmd = [args.torchrun, "--standalone", "--nproc_per_node", str(ranks), "--redirects", "1",
           "--tee", "1", os.path.join(HERE, "torch_ddp_baseline.py"), "--epochs", str(args.epochs)]
    print("running:", " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    epochs = [json.loads(line.split("]:", 1)[1]) for line in out.splitlines()
              if line.startswith("[default0]:{")]
    if len(epochs) != args.epochs:
        raise SystemExit(f"torch_ddp_baseline.py: {len(epochs)} epochs, expected {args.epochs}")
    return epochs[1:] if len(epochs) > 1 else epochs


def summary(epochs):
    seconds = [e["seconds"] for e in epochs]
    out = {"epochs_timed": len(seconds), "epoch_seconds_median": statistics.median(seconds),
           "epoch_seconds_min": min(seconds), "epoch_seconds": seconds,
           "samples_per_second_median": statistics.median(e["samples_per_second"] for e in epochs)}
    if all("allreduces" in e for e in epochs):
        steps = sum(e["allreduces"] for e in epochs)
        reduce_s = sum(e["allreduce_seconds"] for e in epochs)
        exposed_s = sum(e["allreduce_exposed_seconds"] for e in epochs)
        out.update({"allreduce_ms_per_step": 1000 * reduce_s / steps,
                    "allreduce_exposed_ms_per_step": 1000 * exposed_s / steps,
                    "allreduce_overlapped_fraction": 1 - exposed_s / reduce_s if reduce_s else 0,
                    "allreduce_share_of_epoch": reduce_s / sum(e["seconds"] for e in epochs)})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stoker", default=os.path.join(HERE, "..", "build", "stoker"))
    p.add_argument("--torchrun", default="/usr/bin/torchrun")
    p.add_argument("--launcher", choices=("torchrun", "nproc"), default="torchrun")
    p.add_argument("--epochs", type=int, default=4, help="per run; the first is not timed")
    p.add_argument("--repeat", type=int, default=2, help="ABBA pairs of runs")
    p.add_argument("--workers", type=int, default=0, help="loader workers per rank")
    p.add_argument("--model", default="mlp", help="stoker's built-in model (default mlp)")
    p.add_argument("--torch", action="store_true",
                   help="also PyTorch's DDP on the same workload (mlp only), 1 and 2 ranks")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.torch and args.model != "mlp":
        p.error("--torch compares the mlp only")
    if args.epochs < 1 or args.repeat < 1:
        p.error("--epochs and --repeat must be at least 1")

    epochs = {1: [], 2: []}
    torch_epochs = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="stoker-dist-bench-") as scratch:
        for i in range(args.repeat):
            for ranks in ((1, 2) if i % 2 == 0 else (2, 1)):
                epochs[ranks] += run(args, ranks, scratch, i)
                if args.torch:
                    torch_epochs[ranks] += run_torch(args, ranks)
    one, two = summary(epochs[1]), summary(epochs[2])
    ratio = two["epoch_seconds_median"] / one["epoch_seconds_median"]
    result = {"workload": f"{args.model}, Fashion-MNIST train, batch 64 per rank, 1 thread per "
                          f"rank, {args.workers} loader workers per rank, launcher {args.launcher}",
              "one_rank": one, "two_ranks": two, "epoch_ratio": ratio,
              "scaling_efficiency": 1 / (2 * ratio), "target_epoch_ratio": 0.625}
    if args.torch:
        torch_one, torch_two = summary(torch_epochs[1]), summary(torch_epochs[2])
        result["pytorch_ddp"] = {
            "one_rank": torch_one, "two_ranks": torch_two,
            "epoch_ratio": torch_two["epoch_seconds_median"] / torch_one["epoch_seconds_median"],
            "stoker_two_ranks_over_pytorch_two_ranks":
                two["epoch_seconds_median"] / torch_two["epoch_seconds_median"]}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"1 rank : epoch {one['epoch_seconds_median']:.3f} s (median of "
          f"{one['epochs_timed']}), {one['samples_per_second_median']:.0f} samples/s")
    print(f"2 ranks: epoch {two['epoch_seconds_median']:.3f} s (median of "
          f"{two['epochs_timed']}), {two['samples_per_second_median']:.0f} samples/s")
    print(f"2-rank / 1-rank epoch: {ratio:.3f} (target <= 0.625); scaling efficiency "
          f"{100 / (2 * ratio):.0f}%")
    print(f"all-reduce per step: {two['allreduce_ms_per_step']:.3f} ms, of which "
          f"{two['allreduce_exposed_ms_per_step']:.3f} ms not overlapped with backward "
          f"({100 * two['allreduce_overlapped_fraction']:.0f}% overlapped); "
          f"{100 * two['allreduce_share_of_epoch']:.0f}% of the epoch")
    if args.torch:
        t = result["pytorch_ddp"]
        print(f"PyTorch DDP: 1 rank {t['one_rank']['epoch_seconds_median']:.3f} s, 2 ranks "
              f"{t['two_ranks']['epoch_seconds_median']:.3f} s (ratio {t['epoch_ratio']:.3f}); "
              f"stoker's 2-rank epoch / PyTorch's: "
              f"{t['stoker_two_ranks_over_pytorch_two_ranks']:.3f}")


if __name__ == "__main__":
    main()
