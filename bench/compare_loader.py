#!/usr/bin/env python3
"""Loader throughput side by side in one run: stoker's loader and PyTorch's DataLoader.

Same workload everywhere: Fashion-MNIST train (60000), batch 256, shuffled, uint8 images
normalised to float32 plus int64 labels. Runs `stoker bench loader --json` (verify policies
once and off; 1 and 2 workers) and bench/torch_loader_baseline.py (torchvision with 0 and 2
workers, TensorDataset, index gather), then prints samples/s and each one's ratio to stoker.

  .venv/bin/python bench/compare_loader.py [--stoker build/stoker] [--json]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stoker", default=os.path.join(HERE, "..", "build", "stoker"))
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    rows = []
    for workers in (1, 2):
        for verify in ("once", "off"):
            r = run_json([args.stoker, "bench", "loader", "--json", "--batch", str(args.batch),
                          "--epochs", str(args.epochs), "--workers", str(workers),
                          "--verify", verify])
            rows.append({"name": f"stoker w{workers} verify={verify}",
                         "samples_per_s": r["samples_per_s"],
                         "bare_loop_samples_per_s": r["bare_loop_samples_per_s"]})
    torch = run_json([sys.executable, os.path.join(HERE, "torch_loader_baseline.py"),
                      "--json", "--batch", str(args.batch)])
    for r in torch["results"]:
        rows.append({"name": "pytorch " + r["name"], "samples_per_s": r["samples_per_s"]})

    best = max(r["samples_per_s"] for r in rows if r["name"].startswith("stoker"))
    for r in rows:
        r["stoker_best_over_this"] = best / r["samples_per_s"]
    if args.json:
        print(json.dumps({"batch": args.batch, "nproc": os.cpu_count(), "results": rows}, indent=2))
        return
    print(f"{'variant':34} {'samples/s':>12} {'stoker best / this':>19}")
    for r in rows:
        print(f"{r['name']:34} {r['samples_per_s']:12.0f} {r['stoker_best_over_this']:19.2f}")


if __name__ == "__main__":
    sys.exit(main())
