#!/usr/bin/env python3
"""How well the shard-window shuffle mixes, beside the global shuffle (issue 36, item 4).

On an image set cut from Debian's `mate-backgrounds` photos (bench/make_image_set.py: one class
per photo), converted by `stoker.convert("imagefolder")` twice into small shards, once in class
order (ImageFolder's, the default) and once with record_order="shuffled", it measures for each
--shuffle-window (a number of shards, or "all": the global shuffle) from stoker.Loader's actual
order, batch --batch (the last short batch dropped), averaged over 4 epochs of each seed:

- moved: mean |position in the epoch - stored position| / N (a random permutation: 1/3);
- neighbours: mean |position of record i+1 - position of record i| / N, records adjacent in
  storage (a random permutation: 1/3; what is left of the stored order's locality);
- epoch to epoch: mean |position in epoch e+1 - position in epoch e| / N (random: 1/3);
- shards per batch, distinct labels per batch, and the label entropy of a batch over the
  dataset's (natural logs; a random batch of 64 from 10 even classes: about 0.97);
- accuracy: a small CNN (3 conv layers with batch norm, Adam) trained --epochs epochs on the CPU
  at --size px through stoker.Loader with that shuffle, the same seeds for every setting, then
  its accuracy on the held-out val/ split (read in order); the mean over --seeds.

The loader's batches carry no sample index, so a sample is known by a field of its record:
`original_checksum` (XXH3 of the imported file), unique per image here, and its stored position
is where a Loader with shuffle=False yields it (the script stops if two records share one).

  build-python/venv/bin/python bench/remote/shuffle_quality.py [--work DIR]
      [--images DIR | --per-class 64 --val-per-class 30] [--shard-mb 1]
      [--windows 1,4,16,all] [--batch 64] [--epochs 4] [--size 64] [--seeds 0,1,2] [--json]

--work keeps the image set and its conversions for the next run with that folder (named by
the options that make them; default: a temporary folder, removed at the end); --images takes an
ImageFolder (train/, val/) instead of making one.
Accuracy, not speed, is measured: a busy machine changes nothing but the time it takes.
Progress goes to stderr; stdout holds the table, or with --json one JSON object.
Exit status: 0 ok, 2 bad arguments or input, 1 anything else.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_IMAGE_SET = os.path.join(os.path.dirname(HERE), "make_image_set.py")
ORDERS = ("folder", "shuffled")  # the record orders of stoker.convert("imagefolder")
ID_FIELD = "original_checksum"
ORDER_EPOCHS = 4  # epochs of each seed the order's measurements average over
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def log(text):
    print(f"shuffle_quality: {text}", file=sys.stderr, flush=True)


def bad_input(text):
    """Ends the run with exit status 2 and one line naming what is wrong."""
    log(text)
    raise SystemExit(2)


def window_arg(text):
    """--windows' list: ints >= 1 and "all", as stoker.Loader's shuffle_window takes them."""
    windows = []
    for item in text.split(","):
        if item == "all":
            windows.append("all")
        elif item.isdigit() and int(item) >= 1:
            windows.append(int(item))
        else:
            raise argparse.ArgumentTypeError(f"a window is an int >= 1 or 'all', not {item!r}")
    return windows


def at_least(minimum):
    """An argparse type: an int >= minimum."""
    def parse(text):
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"not an int >= {minimum}: {text!r}")
        return int(text)
    return parse


def int_list(text):
    if not all(item.isdigit() for item in text.split(",")):
        raise argparse.ArgumentTypeError(f"not a list of ints >= 0: {text!r}")
    return [int(item) for item in text.split(",")]


def prepare(args, work):
    """The image folder and its two conversions: {order: (train dir, test dir)}."""
    import stoker

    if args.images is None:
        source = f"images-{args.per_class}-{args.val_per_class}"
        images = os.path.join(work, source)
        if not os.path.isdir(os.path.join(images, "train")):
            log(f"making the image set in {images}")
            subprocess.run([sys.executable, MAKE_IMAGE_SET, images, "--per-class",
                            str(args.per_class), "--val-per-class", str(args.val_per_class)],
                           check=True)
    else:
        images = args.images
        source = "images-" + hashlib.sha1(os.path.abspath(images).encode()).hexdigest()[:8]
    for split in ("train", "val"):
        if not os.path.isdir(os.path.join(images, split)):
            bad_input(f"{os.path.join(images, split)} not found (an ImageFolder with train/ "
                      "and val/)")
    datasets = {}
    for order in ORDERS:
        out = os.path.join(work, f"{source}-{order}-seed{args.convert_seed}-{args.shard_mb}mb")
        if not os.path.isdir(out):
            log(f"converting {images} in {order} order into {out}")
            stoker.convert("imagefolder", images, out, shard_mb=args.shard_mb,
                           record_order=order, seed=args.convert_seed)
        datasets[order] = (os.path.join(out, "train"), os.path.join(out, "test"))
    return datasets


def shard_starts(path):
    """Each shard's first stored position, and N last (from the manifest, docs/FORMAT.md)."""
    with open(os.path.join(path, "manifest.json")) as f:
        counts = [shard["records"] for shard in json.load(f)["shards"]]
    starts = [0]
    for count in counts:
        starts.append(starts[-1] + count)
    return starts


def read_order(path, batch_size, **options):
    """(sample ids by position, [labels of each batch]) of one pass of a Loader over `path`
    without the image (nothing is decoded)."""
    import numpy as np
    import stoker

    epoch = options.pop("epoch", 0)
    loader = stoker.Loader(path, batch_size=batch_size, workers=0, transforms={"image": None},
                           **options, batch_format="dict")
    ids, labels = [], []
    for batch in loader.epoch(epoch):
        ids.append(batch[ID_FIELD].numpy().copy())
        labels.append(batch["label"].numpy().copy())
    return np.concatenate(ids), labels


def entropy(labels):
    import numpy as np

    counts = np.unique(labels, return_counts=True)[1]
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def order_metrics(path, window, args):
    """The order's measurements (module docstring) of `window` over the dataset at `path`:
    means over ORDER_EPOCHS epochs of each seed."""
    import numpy as np

    stored_ids, stored_labels = read_order(path, 4096, shuffle=False)
    n = len(stored_ids)
    if len(np.unique(stored_ids)) != n:
        bad_input(f"{path}: two records have the same {ID_FIELD}; the samples cannot be told "
                  "apart")
    stored_position = {int(sample): i for i, sample in enumerate(stored_ids)}
    shard_of = np.searchsorted(np.array(shard_starts(path)), np.arange(n), side="right") - 1
    dataset_entropy = entropy(np.concatenate(stored_labels))
    measured = {key: [] for key in ("moved", "neighbours", "epoch_to_epoch", "shards_per_batch",
                                    "labels_per_batch", "entropy_per_batch")}
    for seed in args.seeds:
        previous = None
        for epoch in range(ORDER_EPOCHS):
            ids, batches = read_order(path, args.batch, shuffle=True, seed=seed,
                                      shuffle_window=window, last_batch="drop", epoch=epoch)
            stored = np.array([stored_position[int(sample)] for sample in ids])
            position = np.full(n, -1)  # -1: dropped with the last short batch
            position[stored] = np.arange(len(stored))
            kept = position >= 0
            adjacent = kept[:-1] & kept[1:]
            measured["moved"].append(np.abs(position[kept] - np.flatnonzero(kept)).mean() / n)
            measured["neighbours"].append(np.abs(np.diff(position)[adjacent]).mean() / n)
            if previous is not None:
                both = kept & (previous >= 0)
                measured["epoch_to_epoch"].append(
                    np.abs(position[both] - previous[both]).mean() / n)
            previous = position
            for b, labels in enumerate(batches):
                in_batch = stored[b * args.batch:(b + 1) * args.batch]
                measured["shards_per_batch"].append(len(np.unique(shard_of[in_batch])))
                measured["labels_per_batch"].append(len(np.unique(labels)))
                measured["entropy_per_batch"].append(entropy(labels) / dataset_entropy)
    return {"records": n, **{key: float(np.mean(values)) for key, values in measured.items()}}


def small_cnn(torch, classes):
    """3 conv blocks (conv 3x3, batch norm, ReLU, max pool) of 16/32/64 channels, global
    average pool, linear: small enough to train at 64 px on a CPU in seconds an epoch."""
    nn = torch.nn
    layers, channels = [], 3
    for width in (16, 32, 64):
        layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False),
                   nn.BatchNorm2d(width), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
        channels = width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(channels, classes))


def accuracy(train, test, window, seed, args):
    """Held-out accuracy of small_cnn trained with `window`'s shuffle (seed: the model's
    initialisation and the loader's order and crops)."""
    import stoker
    import torch
    from stoker import transforms as T

    torch.manual_seed(seed)
    classes = len(stoker.inspect(train)["class_names"])
    model = small_cnn(torch, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_loader = stoker.Loader(train, shuffle=True, batch_size=args.batch, seed=seed,
                                 shuffle_window=window, last_batch="drop", transforms={
                                     "image": T.Compose([
                                         T.RandomResizedCrop(args.size, scale=(0.25, 1.0),
                                                             dct_scaling=True),
                                         T.RandomHorizontalFlip(), T.Normalize(MEAN, STD)])},
                                 batch_format="dict")
    model.train()
    for epoch in range(args.epochs):
        train_loader.set_epoch(epoch)
        for batch in train_loader:
            loss = torch.nn.functional.cross_entropy(model(batch["image"]), batch["label"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    test_loader = stoker.Loader(test, batch_size=256, shuffle=False, transforms={
        "image": T.Compose([T.Resize(args.size * 8 // 7, dct_scaling=True),
                            T.CenterCrop(args.size), T.Normalize(MEAN, STD)])}, batch_format="dict")
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in test_loader:
            right += int((model(batch["image"]).argmax(1) == batch["label"]).sum())
            total += len(batch["label"])
    return right / total


def measure(args, work):
    import stoker
    import torch

    torch.set_num_threads(args.threads)
    datasets = prepare(args, work)
    rows = []
    for order, (train, test) in datasets.items():
        for window in args.windows:
            start = time.monotonic()
            row = {"record_order": order, "window": window,
                   **order_metrics(train, window, args)}
            if args.epochs > 0:
                runs = [accuracy(train, test, window, seed, args) for seed in args.seeds]
                row["accuracy_by_seed"] = runs
                row["accuracy"] = sum(runs) / len(runs)
            rows.append(row)
            log(f"{order} window {window}: {time.monotonic() - start:.0f} s")
    train, test = datasets[ORDERS[0]]
    about = stoker.inspect(train)
    return {"dataset": {"records": about["records"], "shards": about["shards"],
                        "classes": len(about["class_names"]),
                        "test_records": stoker.inspect(test)["records"],
                        "shard_mb": args.shard_mb},
            "batch": args.batch, "epochs": args.epochs, "size": args.size,
            "seeds": args.seeds, "rows": rows}


def table(result):
    d = result["dataset"]
    lines = [f"{d['records']} training images in {d['shards']} shards, {d['classes']} classes, "
             f"{d['test_records']} held out; batch {result['batch']}; seeds "
             f"{', '.join(map(str, result['seeds']))}; accuracy "
             + (f"after {result['epochs']} epochs at {result['size']} px, the seeds' mean"
                if result["epochs"] else "not measured (--epochs 0)"), "",
             "| record order | window | moved | neighbours | epoch to epoch | shards/batch | "
             "labels/batch | entropy ratio | accuracy |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        accuracy = f"{r['accuracy']:.3f}" if "accuracy" in r else "-"
        lines.append(f"| {r['record_order']} | {r['window']} | {r['moved']:.3f} | "
                     f"{r['neighbours']:.3f} | {r['epoch_to_epoch']:.3f} | "
                     f"{r['shards_per_batch']:.1f} | {r['labels_per_batch']:.1f} | "
                     f"{r['entropy_per_batch']:.2f} | {accuracy} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", help="keeps the image set and datasets (default: temporary)")
    parser.add_argument("--images", help="an ImageFolder with train/ and val/ to use")
    parser.add_argument("--per-class", type=at_least(1), default=64)
    parser.add_argument("--val-per-class", type=at_least(1), default=30)
    parser.add_argument("--shard-mb", type=at_least(1), default=1)
    parser.add_argument("--convert-seed", type=at_least(0), default=0,
                        help="the seed of record_order='shuffled'")
    parser.add_argument("--windows", type=window_arg, default=[1, 4, 16, "all"])
    parser.add_argument("--batch", type=at_least(1), default=64)
    parser.add_argument("--epochs", type=at_least(0), default=4,
                        help="training epochs (0: no training)")
    parser.add_argument("--size", type=at_least(8), default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seeds", type=int_list, default=[0, 1, 2])
    parser.add_argument("--threads", type=at_least(1), default=1,
                        help="torch's intra-op threads")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.images is not None and not os.path.isdir(args.images):
        bad_input(f"{args.images}: not a folder")
    import stoker

    try:
        if args.work is None:
            with tempfile.TemporaryDirectory(prefix="shuffle-quality-") as work:
                result = measure(args, work)
        else:
            os.makedirs(args.work, exist_ok=True)
            result = measure(args, args.work)
    except subprocess.CalledProcessError as e:
        log(f"{os.path.basename(e.cmd[1])} failed (exit {e.returncode})")
        return 1
    except stoker.Error as e:
        log(str(e))
        return 1
    print(json.dumps(result, indent=1) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
