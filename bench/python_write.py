#!/usr/bin/env python3
"""Writing Fashion-MNIST train from Python: stoker.write_dataset over torchvision's dataset
beside the C++ importer (`stoker convert idx`, in-process through stoker.convert, and the
`stoker` binary when it is built), side by side in one run.

write_dataset variants: "w0" (no workers: the calling thread fetches, converts and writes),
"processes2" and "threads2" (2 workers fetch and convert the PIL images). Each variant writes
a fresh dataset into a scratch directory; the best of --repeat runs is reported as samples/s.

  .venv/bin/python bench/python_write.py [--variants w0,processes2,...] [--limit N]
                                         [--repeat 3] [--stoker build/stoker] [--json]

Needs the package installed (README, "Python") or python/ on PYTHONPATH, torch and
torchvision; the Fashion-MNIST files of Debian's dataset-fashion-mnist (see
fashion_mnist_torchvision.py).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fashion_mnist_torchvision as fm  # noqa: E402

VARIANTS = {"w0": (0, "processes"), "processes2": (2, "processes"), "threads2": (2, "threads"),
            "convert": None, "cli": None}


def best_rate(run, samples, repeat, scratch):
    """samples/s of the fastest of `repeat` runs of run(out)."""
    best = 0.0
    for i in range(repeat):
        out = os.path.join(scratch, f"run{i}")
        start = time.perf_counter()
        run(out)
        seconds = time.perf_counter() - start
        shutil.rmtree(out)
        best = max(best, samples / seconds)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default="w0,processes2,threads2,convert,cli")
    p.add_argument("--limit", type=int, default=0,
                   help="write only the first N samples (a smoke run); 0: all 60,000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--stoker", default=os.path.join(HERE, "..", "build", "stoker"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    variants = fm.parse_variants(p, args.variants, VARIANTS)
    import stoker
    import torch.utils.data

    dataset = fm.fashion_mnist(train=True)
    if args.limit:
        dataset = torch.utils.data.Subset(dataset, range(min(args.limit, len(dataset))))
    samples = len(dataset)
    raw = fm.prepare_root()
    images = os.path.join(raw, "FashionMNIST", "raw", "train-images-idx3-ubyte")
    labels = os.path.join(raw, "FashionMNIST", "raw", "train-labels-idx1-ubyte")

    rows = []
    scratch = tempfile.mkdtemp(prefix="stoker-python-write-")
    try:
        for name in variants:
            if name == "convert" or name == "cli":
                if args.limit:
                    continue  # the importer always converts the whole files
                if name == "cli" and not os.access(args.stoker, os.X_OK):
                    print(f"skipping cli: no {args.stoker}", file=sys.stderr)
                    continue
                if name == "convert":
                    def run(out):
                        stoker.convert("idx", (images, labels), out)
                else:
                    def run(out):
                        subprocess.run([args.stoker, "convert", "idx", "--images", images,
                                        "--labels", labels, "--out", out], check=True,
                                       stdout=subprocess.DEVNULL)
            else:
                workers, parallel = VARIANTS[name]

                def run(out, workers=workers, parallel=parallel):
                    stoker.write_dataset(out, dataset, workers=workers, parallel=parallel,
                                         progress=False)
            if not args.json:
                print(f"running {name} ...", file=sys.stderr, flush=True)
            rows.append({"name": name, "samples_per_s": best_rate(run, samples, args.repeat,
                                                                  scratch)})
    finally:
        shutil.rmtree(scratch)

    out = {"samples": samples, "repeat": args.repeat, "nproc": len(os.sched_getaffinity(0)),
           "loadavg_end": list(os.getloadavg()), "results": rows}

    def table():
        print(f"{'variant':12} {'samples/s':>12}")
        for r in rows:
            print(f"{r['name']:12} {r['samples_per_s']:12,.0f}")
        print(f"({samples} samples, best of {args.repeat}; load average at the end "
              f"{out['loadavg_end'][0]:.1f})")
    fm.emit(out, args.json, table)


if __name__ == "__main__":
    sys.exit(main())
