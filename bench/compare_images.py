#!/usr/bin/env python3
"""Image loading side by side in one run: stoker's loader against torchvision's ImageFolder +
PIL through DataLoader, and what each of stoker's techniques contributes.

Same workload everywhere: RandomResizedCrop(224) + RandomHorizontalFlip + Normalize, float32
out, batch 64, shuffled, over the same images. Runs, one after the other (never two at once):
  stoker                 `stoker bench loader --json` on the imported (transcoded) set, 2 workers
                         (the default: torchvision's pixels exactly)
  stoker w1              the same with 1 worker
  + DCT scale            ... --dct-scaling (the fast mode: large crops decode at 1/2 or 1/4)
  - crop decode          ... --full-decode (decode whole images, then crop, as PIL does)
  - SIMD resize          ... --scalar-resize (the scalar reference kernel)
  - restart rows         the set imported with --keep-original (JPEGs as they are: no restart
                         markers, progressive ones stay progressive)
  stoker decode only     ... --decode-only: whole-image decodes, no augmentation (raw rate)
  torchvision_w0/w2      bench/torchvision_image_baseline.py on the source ImageFolder
  pil_decode             PIL decode + convert("RGB") of every file, one process
then prints images/s and each one's ratio to torchvision with 2 workers.

  .venv/bin/python bench/compare_images.py --src IMAGEFOLDER --data DATASET
        [--original DATASET_KEPT] [--stoker build/stoker] [--epochs 2] [--json]
IMAGEFOLDER is the tree the datasets were imported from (e.g. bench/make_image_set.py's OUT/train);
DATASET is `stoker convert imagefolder`'s output for it, DATASET_KEPT the same with
--keep-original.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_loader import run_json  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", required=True, help="the ImageFolder (torchvision's input)")
    p.add_argument("--data", required=True, help="the stoker dataset imported from --src")
    p.add_argument("--original", help="the stoker dataset imported with --keep-original")
    p.add_argument("--stoker", default=os.path.join(HERE, "..", "build", "stoker"))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--epochs", type=int, default=2, help="timed epochs of each stoker run")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    def stoker(name, data, workers=2, *flags):
        cmd = [args.stoker, "bench", "loader", "--json", "--data", data, "--batch",
               str(args.batch), "--image-size", str(args.image_size), "--epochs",
               str(args.epochs), "--workers", str(workers), *flags]
        if not args.json:
            print(f"running {name} ...", file=sys.stderr, flush=True)
        r = run_json(cmd)
        return {"name": name, "samples_per_s": r["samples_per_s"],
                "workers_busy_fraction": r["workers_busy_fraction"], "command": " ".join(cmd)}

    rows = [stoker("stoker", args.data),
            stoker("stoker w1", args.data, 1),
            stoker("stoker + DCT scale", args.data, 2, "--dct-scaling"),
            stoker("stoker - crop decode", args.data, 2, "--full-decode"),
            stoker("stoker - SIMD resize", args.data, 2, "--scalar-resize")]
    if args.original:
        rows.append(stoker("stoker - restart rows", args.original))
    rows.append(stoker("stoker decode only", args.data, 2, "--decode-only"))
    if not args.json:
        print("running torchvision ...", file=sys.stderr, flush=True)
    tv = run_json([sys.executable, os.path.join(HERE, "torchvision_image_baseline.py"),
                   args.src, "--json", "--batch", str(args.batch), "--image-size",
                   str(args.image_size)])
    for r in tv["results"]:
        rows.append({"name": r["name"], "samples_per_s": r["samples_per_s"],
                     "other_cpu_frac": r["other_cpu_frac"]})

    reference = next(r["samples_per_s"] for r in rows if r["name"] == "torchvision_w2")
    for r in rows:
        r["ratio_to_torchvision_w2"] = r["samples_per_s"] / reference
    out = {"machine": tv["machine"], "batch": args.batch, "image_size": args.image_size,
           "rows": rows}
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    m = tv["machine"]
    print(f"{m['cpu_model']}, {m['nproc']} CPUs; batch {args.batch}, "
          f"RandomResizedCrop({args.image_size}) + flip + normalise, float32")
    print(f"{'variant':<24} {'images/s':>10} {'x torchvision_w2':>17}")
    for r in rows:
        print(f"{r['name']:<24} {r['samples_per_s']:>10,.0f} "
              f"{r['ratio_to_torchvision_w2']:>17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
