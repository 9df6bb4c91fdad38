#!/usr/bin/env python3
"""stoker against its peers on the same JPEGs, side by side, in one run (docs/BENCHMARKS.md,
"Against every peer"). Installs nothing: bench/peers/setup.sh does.

Each peer stores the ImageFolder's files with its own tool (or reads them as they are), then,
in alternating rounds, runs one epoch of the training work (work.py) in a fresh process pinned
with taskset to 1 and to 2 cores, uint8 and float32: images/s after the first batch, CPU
seconds per image (every process of the peer), peak RSS (summed over its processes), time to
the first batch. Then the evaluation transform of every file, compared pixel by pixel with
torchvision's PIL path. Medians over the rounds; a peer that is not installed or fails is a
row with its one-line reason.

With `--max-side N` (the second table), every peer reads reduced copies instead: FFCV and stoker
store them with their own setting (REDUCES_ITSELF), the others read a reduced copy of the files
(reduced_copy.py); the evaluation pixels are still compared with torchvision's PIL path on the
original files, so they show what the reduction costs.

With `--pipeline recipe` or `--pipeline timm-ra` (the third and fourth tables, recipes.py), the
peers that run a training recipe do it instead of the textbook work: float32 out, soft targets;
no evaluation pixels. With `--pipeline det-hflip` or `det-lsj` (detection.py), IMAGES is a
COCO-shaped set (bench/make_coco_set.py's OUT) and the peers run the detection reference's
training pipeline on it: lists of images and targets, float32; with `--pipeline seg`
(segmentation.py) a VOC-shaped set (bench/make_voc_set.py's OUT) and the segmentation
reference's; no evaluation pixels.

Usage: .venv/bin/python bench/peers/run.py IMAGES [--out DIR] [--rounds 3] [--peers a,b]
       [--cores 1,2] [--dtypes uint8,float32] [--no-eval] [--max-side N]
       [--pipeline textbook|recipe|timm-ra|det-hflip|det-lsj|seg]
IMAGES: an ImageFolder (class folders of JPEGs), e.g. bench/make_image_set.py's OUT/train; for
the detection works a COCO-shaped set (OUT, holding images/ and annotations/instances.json),
for seg a VOC-shaped one (OUT, holding VOCdevkit/VOC2012).
Writes DIR/results.json, DIR/table.md and DIR/chart.svg (DIR default: bench-peers-out); the
other works DIR/results-PIPELINE.json, DIR/table-PIPELINE.md and DIR/chart-PIPELINE.svg.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import detection  # this folder: the script's, first on sys.path
import peer_envs
import peers_report
import proc_tree
import recipes
import reduced_copy
import segmentation

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_DIR = peer_envs.PEERS_DIR

# name: (environment under PEERS_DIR, or None for the project's: the Python running this script;
# store shared with; what it is)
PEERS = {
    "torchvision_pil": (None, None, "DataLoader + torchvision ImageFolder, PIL"),
    "torchvision_tensor": (None, "torchvision_pil", "DataLoader + torchvision.io + transforms.v2"),
    "pillow_simd": ("pillow_simd", "torchvision_pil", "DataLoader + torchvision, Pillow-SIMD"),
    "dali": ("dali", "torchvision_pil", "DALI, CPU pipeline"),
    "spdl": ("spdl", "torchvision_pil", "SPDL thread pipeline"),
    "ffcv": ("ffcv", None, "FFCV .beton"),
    "tfdata": ("tfdata", "torchvision_pil", "tf.data, decode_and_crop_jpeg"),
    "stoker": ("stoker", None, "stoker, exact (default)"),
    "stoker_fast": ("stoker", "stoker", "stoker, fast mode (dct_scaling)"),
    "timm": (None, "torchvision_pil", "timm's create_loader, CPU (no prefetcher)"),
    "webdataset": ("webdataset", None, "webdataset + DataLoader, tars"),
    "stoker_tar": ("stoker", "webdataset", "stoker, the same tars in place"),
    "hf_parquet": ("hf_parquet", None, "HF datasets + DataLoader, Parquet"),
    "stoker_parquet": ("stoker", "hf_parquet", "stoker, the same Parquet files in place"),
}
# The data-in-place peers (issue 50's table): the textbook work on tars and Parquet files, run
# with --peers IN_PLACE,stoker (the converted format beside them) and --no-eval.
IN_PLACE = ["webdataset", "stoker_tar", "hf_parquet", "stoker_parquet"]
# The peers of each work (the default of --peers): the recipes' are those with recipe_batches,
# the detection works' those with detection_batches.
WORK_PEERS = {
    "textbook": [p for p in PEERS if p != "timm" and p not in IN_PLACE],
    "recipe": ["torchvision_pil", "torchvision_tensor", "pillow_simd", "timm", "dali", "stoker"],
}
WORK_PEERS["timm-ra"] = WORK_PEERS["recipe"]
for _work in list(detection.WORKS) + list(segmentation.WORKS):
    WORK_PEERS[_work] = ["torchvision_pil", "dali", "stoker"]
# The peers a work accepts with --peers: its default ones, and for the textbook work the
# data-in-place peers too.
WORK_ACCEPTS = dict(WORK_PEERS, textbook=WORK_PEERS["textbook"] + IN_PLACE)
# The kind of set a work reads where it is not an image folder: its peers' prepare_KIND.
SET_KIND = {**{w: "coco" for w in detection.WORKS}, **{w: "voc" for w in segmentation.WORKS}}
# What a detection or segmentation work's peers are (PEERS' texts name the image-folder
# works').
SET_WHAT = {"coco": {
    "torchvision_pil": "DataLoader + torchvision v2 as the detection reference's train.py: "
                       "CocoDetection + wrap_dataset_for_transforms_v2 (boxes, labels, "
                       "image_id), the preset on PIL images, shuffled batches with drop_last "
                       "(its --aspect-ratio-group-factor -1), its collate_fn",
    "dali": "DALI, CPU pipeline: readers.coco (ltrb), decoders.image, boxes to pixels and the "
            "targets' dicts in PyTorch",
    "stoker": "stoker.Loader on `stoker convert coco` of the same split, the preset object as "
              "its transforms, variable='list'",
}, "voc": {
    "torchvision_pil": "DataLoader + torchvision v2 as the segmentation reference's train.py: "
                       "the pairs read as VOCSegmentation reads them, the class map a Mask, the "
                       "preset on PIL images, shuffled batches with drop_last, its collate_fn",
    "dali": "DALI, CPU pipeline: two readers.file (images, class maps) in one order, "
            "decoders.image, resize to the drawn shorter side, flip, crop with padding, "
            "crop_mirror_normalize",
    "stoker": "stoker.Loader on `stoker convert masks` of the same split, the preset object "
              "as its transforms, the list stacked",
}}
# What each peer runs of a work where it is not the work's own classes (their files say how);
# the table shows it beside the peer's name.
WORK_WHAT = {
    ("torchvision_pil", "recipe"): "the reference's v1 preset; MixUp/CutMix in the collate",
    ("torchvision_tensor", "recipe"): "the reference's v2 preset on tensors; MixUp/CutMix in "
                                      "the collate",
    ("timm", "recipe"): f"closest: {recipes.TIMM_TRIVIAL} for TrivialAugmentWide; its Mixup",
    ("dali", "recipe"): "its trivial_augment_wide, erase; MixUp/CutMix in PyTorch (DALI has "
                        "none)",
    ("torchvision_pil", "timm-ra"): "closest: torchvision's RandAugment(2, 9 of 11 bins), "
                                    "RandomErasing(value='random'); timm's Mixup in the collate",
    ("timm", "timm-ra"): "create_transform; its Mixup",
    ("dali", "timm-ra"): "closest: its rand_augment(n=2, m=9 of 11 bins), erase with 0; "
                         "timm's Mixup in PyTorch (DALI has none)",
    ("stoker", "recipe"): "the reference's v1 preset; MixUp/CutMix as batch_transform",
    ("stoker", "timm-ra"): "timm's create_transform; its Mixup as batch_transform",
    ("torchvision_pil", "det-lsj"): "FixedSizeCrop: the reference's own, as a v2 transform "
                                    "(fixed_size_crop.py)",
    ("dali", "det-hflip"): "bb_flip + flip (crop_mirror_normalize) and to float; no "
                           "SanitizeBoundingBoxes",
    ("dali", "det-lsj"): "its COCO example's augmentation in lsj's place: random_bbox_crop "
                         "(box-aware, SSD's thresholds) + slice, bb_flip + flip, resize to "
                         "1024 x 1024 (not ScaleJitter + FixedSizeCrop's pad); no "
                         "SanitizeBoundingBoxes",
    ("dali", "seg"): "gray copies of the class maps (its decoder gives a palette's colours); "
                     "the crop placed by a uniform draw per side, padding around where smaller",
}
WORK_WHAT[("torchvision_tensor", "timm-ra")] = WORK_WHAT[("torchvision_pil", "timm-ra")]
WORK_WHAT[("pillow_simd", "recipe")] = WORK_WHAT[("torchvision_pil", "recipe")]
WORK_WHAT[("pillow_simd", "timm-ra")] = WORK_WHAT[("torchvision_pil", "timm-ra")]
REFERENCE = "torchvision_pil"
# Peers whose own tool stores reduced copies (their prepare takes max_side): what it does.
REDUCES_ITSELF = {
    "ffcv": "max_resolution, its ImageNet setting: proportion, compress_probability 0.5, q90",
    "stoker": "convert --max-side (JPEG q90 of the larger images)",
}


def python_of(peer):
    return peer_envs.env_python(PEERS[peer][0])


def not_installed(peer):
    """The one-line reason a peer cannot run, or None."""
    return peer_envs.env_missing(PEERS[peer][0])


def worker(peer, args, cores=None, timeout=600):
    """Runs peer_worker.py in the peer's environment; (result dict, peak RSS) or raises
    RuntimeError with the worker's one line."""
    command = [python_of(peer), os.path.join(HERE, "peer_worker.py"), peer] + [str(a) for a in args]
    if cores:
        command = ["taskset", "-c", ",".join(str(c) for c in range(cores))] + command
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=HERE)
    peak = [0]

    def watch():
        while process.poll() is None:
            peak[0] = max(peak[0], proc_tree.rss_bytes(process.pid))
            time.sleep(0.1)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise RuntimeError(f"timed out after {timeout} s")
    watcher.join()
    if process.returncode != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit status {process.returncode}")
    return json.loads(out.strip().splitlines()[-1]), peak[0]


def disk_bytes(path):
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total


def store_path(work_dir, owner, max_side, kind=None):
    return os.path.join(work_dir, f"store-{owner}" + (f"-max{max_side}" if max_side else "") +
                        (f"-{kind}" if kind else ""))


def prepare(peers, images, work_dir, report, max_side=None, kind=None):
    """Each peer's store (once per shared store); the size on disk it stands for. With
    max_side, of reduced copies: the peer's own (REDUCES_ITSELF) or a reduced copy of the
    files; with `kind` (SET_KIND's), of the set `images` (prepare_KIND)."""
    files_folder = images
    if max_side and any((PEERS[p][1] or p) not in REDUCES_ITSELF for p in peers):
        print(f"reduced copy, largest side {max_side}", file=sys.stderr)
        files_folder = reduced_copy.make(images, os.path.join(work_dir, f"images-max{max_side}"),
                                         max_side)
    for peer in peers:
        if "error" in report[peer]:  # not installed: its row says why
            continue
        owner = PEERS[peer][1] or peer
        store = store_path(work_dir, owner, max_side, kind)
        if owner == peer and not os.path.exists(store):
            print(f"prepare {peer}", file=sys.stderr)
            args = [f"prepare_{kind}" if kind else "prepare", files_folder, store]
            if max_side and owner in REDUCES_ITSELF:
                args = ["prepare", images, store, max_side]
            try:
                result, _ = worker(peer, args)
                report[peer]["prepare_s"] = result["prepare_s"]
            except RuntimeError as e:
                report[peer]["error"] = f"prepare: {e}"
                continue
        if os.path.exists(os.path.join(store, "files.json")):  # reads the files
            report[peer]["disk_bytes"] = disk_bytes(files_folder)
        elif os.path.exists(store):
            report[peer]["disk_bytes"] = disk_bytes(store)
        report[peer]["store"] = store


def measure(peers, report, rounds, cores_list, dtypes, work="textbook"):
    """Alternating rounds: the peers' order reverses every round."""
    order = list(peers)
    for r in range(rounds):
        for cores in cores_list:
            for dtype in dtypes:
                for peer in order:
                    if "error" in report[peer]:
                        continue
                    key = f"{cores}c_{dtype}"
                    print(f"round {r + 1}/{rounds}: {peer} {key}", file=sys.stderr)
                    try:
                        result, rss = worker(peer, ["run", report[peer]["store"], cores, dtype,
                                                    r, work], cores=cores)
                    except RuntimeError as e:
                        report[peer].setdefault("run_errors", {})[key] = str(e)
                        continue
                    result["peak_rss_bytes"] = rss
                    if "note" in result:  # what the peer says of how it ran the work
                        report[peer]["note"] = result.pop("note")
                    report[peer].setdefault("runs", {}).setdefault(key, []).append(result)
        order.reverse()
    for peer in peers:
        for key, runs in report[peer].get("runs", {}).items():
            report[peer].setdefault("median", {})[key] = {
                k: statistics.median(run[k] for run in runs) for k in runs[0]}


def compare_eval(peers, report, work_dir, reference_store):
    """Each peer's evaluation pixels against torchvision's PIL path on the files of
    `reference_store`: mean and worst absolute difference over the files every peer decoded,
    and the files a peer failed on."""
    import torch
    outputs = {}
    reference_out = os.path.join(work_dir, "eval-reference.pt")
    try:
        worker(REFERENCE, ["eval", reference_store, reference_out])
        reference = torch.load(reference_out)
    except RuntimeError as e:
        report[REFERENCE]["eval_error"] = f"reference: {e}"
        return
    for peer in peers:
        if "error" in report[peer]:
            continue
        out = os.path.join(work_dir, f"eval-{peer}.pt")
        print(f"eval {peer}", file=sys.stderr)
        try:
            worker(peer, ["eval", report[peer]["store"], out])
            outputs[peer] = torch.load(out)
        except RuntimeError as e:
            report[peer]["eval_error"] = str(e)
    for peer, got in outputs.items():
        diffs, off = [], 0
        for mine, ref in zip(got["images"], reference["images"]):
            if mine is None or ref is None:
                continue
            if mine.shape != ref.shape:
                off += 1
                continue
            d = (mine.int() - ref.int()).abs()
            diffs.append((d.float().mean().item(), d.max().item()))
            off += int(d.max().item() > 0)
        report[peer]["eval"] = {
            "files": len(got["images"]), "compared": len(diffs), "files_differing": off,
            "mean_abs_diff": statistics.mean(m for m, _ in diffs) if diffs else None,
            "worst_abs_diff": max(w for _, w in diffs) if diffs else None,
            "failures": got["failures"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("images")
    p.add_argument("--out", default="bench-peers-out")
    p.add_argument("--work", default=os.path.join(os.path.dirname(PEERS_DIR), "peers-work"),
                   help="where the peers' stores go (kept between runs)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pipeline", default="textbook", choices=list(WORK_PEERS),
                   help="the textbook work (work.py), a training recipe (recipes.py), a "
                        "detection work (detection.py) or the segmentation one "
                        "(segmentation.py)")
    p.add_argument("--peers", help="default: the work's (WORK_PEERS)")
    p.add_argument("--cores", default="1,2")
    p.add_argument("--dtypes", help="default: uint8,float32; the other works float32 only")
    p.add_argument("--no-eval", action="store_true")
    p.add_argument("--max-side", type=int, help="the second table: reduced copies, largest side N")
    a = p.parse_args(argv)
    recipe = a.pipeline != "textbook"
    peers = a.peers.split(",") if a.peers else WORK_PEERS[a.pipeline]
    unknown = [x for x in peers if x not in WORK_ACCEPTS[a.pipeline]]
    if unknown:
        p.error(f"peers {unknown}: the pipeline {a.pipeline} has "
                f"{', '.join(WORK_ACCEPTS[a.pipeline])}")
    dtypes = (a.dtypes or ("float32" if recipe else "uint8,float32")).split(",")
    if recipe and dtypes != ["float32"]:
        p.error(f"--dtypes {a.dtypes}: the pipeline {a.pipeline} is float32 only")
    if recipe and a.max_side:
        p.error(f"--max-side with --pipeline {a.pipeline}: only the textbook work reads "
                "reduced copies")
    if not os.path.isdir(a.images):
        p.error(f"{a.images}: not a directory")
    cores_list = [int(c) for c in a.cores.split(",")]
    if max(cores_list) > os.cpu_count():
        p.error(f"--cores {a.cores}: this machine has {os.cpu_count()}")
    kind = SET_KIND.get(a.pipeline)
    report = {peer: {"what": SET_WHAT[kind][peer] if kind else PEERS[peer][2]} for peer in peers}
    for peer in peers:
        if (peer, a.pipeline) in WORK_WHAT:
            report[peer]["what"] += "; " + WORK_WHAT[(peer, a.pipeline)]
    if a.max_side:
        for peer in peers:
            owner = PEERS[peer][1] or peer
            report[peer]["what"] += "; " + REDUCES_ITSELF.get(owner, "a reduced copy of the files")
    for peer in peers:
        reason = not_installed(peer)
        if reason:
            report[peer]["error"] = reason
    if a.max_side is not None and a.max_side < 1:
        p.error(f"--max-side {a.max_side}: must be at least 1")
    os.makedirs(a.work, exist_ok=True)
    images = os.path.abspath(a.images)
    prepare(peers, images, a.work, report, a.max_side, kind)
    measure(peers, report, a.rounds, cores_list, dtypes, a.pipeline)
    if not a.no_eval and not recipe:
        reference_store = store_path(a.work, REFERENCE, None)
        if not os.path.exists(reference_store):
            worker(REFERENCE, ["prepare", images, reference_store])
        compare_eval(peers, report, a.work, reference_store)
    os.makedirs(a.out, exist_ok=True)
    machine = {"cpus": os.cpu_count(), "uname": " ".join(os.uname()),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "max_side": a.max_side, "work": a.pipeline,
               "defined_in": {"coco": "detection.py", "voc": "segmentation.py"}.get(
                   kind, "recipes.py")}
    suffix = f"-{a.pipeline}" if recipe else ""
    with open(os.path.join(a.out, f"results{suffix}.json"), "w") as f:
        json.dump({"machine": machine, "peers": report}, f, indent=1)
    peers_report.write(report, machine, cores_list, dtypes, a.out, suffix)
    print(open(os.path.join(a.out, f"table{suffix}.md")).read())


if __name__ == "__main__":
    main()
