"""Runs one peer of the side-by-side benchmark inside that peer's environment (run.py starts it
under taskset). One JSON object on stdout; a failure is one line on stderr and exit status 1.

  peer_worker.py PEER prepare FOLDER STORE [MAX_SIDE]
                                                    the peer's own storage, from the files
                                                    (reduced copies with MAX_SIDE)
  peer_worker.py PEER prepare_coco SET STORE      the same from a COCO-shaped set (detection
                                                    works: detection.py) or a VOC-shaped one
  peer_worker.py PEER prepare_voc SET STORE       (segmentation.py)
  peer_worker.py PEER run STORE CORES DTYPE SEED [WORK]
                                                    one epoch: rate, time to first batch, CPU
                                                    (WORK: textbook, or a recipe of recipes.py,
                                                    a work of detection.py or segmentation.py,
                                                    float32 only)
  peer_worker.py PEER eval STORE OUT                the evaluation transform of every file,
                                                    uint8, saved to OUT (torch.save)
"""
import importlib
import json
import os
import sys
import time

import proc_tree


def _image_check(dtype, size, soft):
    """The check of a batch of images [B, 3, size, size] of `dtype` (the textbook work's and the
    recipes'): (batch index, (image, label)) -> the number of images, or RuntimeError; labels
    the soft targets of MixUp/CutMix where `soft`."""
    import torch

    def check(index, batch):
        image, label = batch
        if image.dtype != getattr(torch, dtype) or tuple(image.shape[1:]) != (3, size, size):
            raise RuntimeError(f"batch {index}: {image.dtype} {tuple(image.shape)}, "
                               f"expected {dtype} [B, 3, {size}, {size}]")
        if len(label) != len(image):
            raise RuntimeError(f"batch {index}: {len(label)} labels for {len(image)} images")
        if soft and (label.dtype != torch.float32 or label.dim() != 2):
            raise RuntimeError(f"batch {index}: labels {label.dtype} {tuple(label.shape)}, "
                               "expected the soft targets of MixUp/CutMix, float32 [B, classes]")
        image[-1, -1, -1, -1].item()  # the batch is there
        return len(image)
    return check


def _work(peer, store, cores, dtype, seed, work):
    """(batches, check, note) of `work` for `peer`: its batch stream, the check of a batch (the
    number of images it holds) and a function giving the peer's note on how it ran the work,
    or None."""
    import detection  # all light: torch comes with the peer
    import recipes
    import segmentation
    if work == "textbook":
        return peer.batches(store, cores, dtype, seed), _image_check(dtype, 224, False), None
    kinds = {"recipe": recipes, "detection": detection, "segmentation": segmentation}
    kind = next((k for k, module in kinds.items() if work in module.WORKS), None)
    if not hasattr(peer, f"{kind}_batches"):
        raise RuntimeError(f"no work {work!r} for this peer")
    if dtype != "float32":
        raise RuntimeError(f"work {work}: float32 out only, not {dtype}")
    w = kinds[kind].WORKS[work]
    stream = getattr(peer, f"{kind}_batches")(store, cores, w, seed)
    if kind == "recipe":
        check = _image_check(dtype, w.size, True)
    else:
        def check(index, batch):
            return kinds[kind].check(index, batch, w)
    note = getattr(peer, f"{kind}_note", None)
    return stream, check, (lambda: note(store, w)) if note else None


def run(peer, store, cores, dtype, seed, work="textbook"):
    import torch
    torch.set_num_threads(1)
    stream, check, note = _work(peer, store, int(cores), dtype, int(seed), work)
    start = time.perf_counter()
    images = batches = 0
    first = cpu_first = None
    for batch in stream:
        count = check(batches, batch)
        batches += 1
        if first is None:
            first, cpu_first = time.perf_counter(), proc_tree.cpu_seconds(os.getpid())
            first_images = count
        images += count
    end, cpu_end = time.perf_counter(), proc_tree.cpu_seconds(os.getpid())
    if batches < 2:
        raise RuntimeError(f"{images} images make {batches} batch: nothing is timed after the "
                           "first; use more images (or STOKER_PEERS_BATCH for a smoke run)")
    timed = images - first_images
    result = {"images": images, "batches": batches, "first_batch_s": first - start,
              "images_per_s": timed / (end - first),
              "cpu_s_per_image": (cpu_end - cpu_first) / timed}
    if note:
        result["note"] = note()
    return result


def evaluate(peer, store, out):
    import torch
    from work import read_file_list
    images, failures = [], {}
    if hasattr(peer, "eval_images"):
        images = list(peer.eval_images(store))
    else:
        for path, _ in read_file_list(store):
            try:
                images.append(peer.eval_image(path))
            except Exception as e:  # the table names the file and what the peer said
                failures[path] = " ".join(str(e).split())[:200]
                images.append(None)
    torch.save({"images": images, "failures": failures}, out)
    return {"images": len(images), "failures": len(failures)}


def main(argv):
    peer = importlib.import_module("peer_" + argv[0])
    mode, args = argv[1], argv[2:]
    if mode == "prepare":
        start = time.perf_counter()
        reduce = {"max_side": int(args[2])} if len(args) > 2 else {}
        peer.prepare(args[0], __import__("work").image_files(args[0]), args[1], **reduce)
        result = {"prepare_s": time.perf_counter() - start}
    elif mode in ("prepare_coco", "prepare_voc"):
        start = time.perf_counter()
        getattr(peer, mode)(*args)
        result = {"prepare_s": time.perf_counter() - start}
    elif mode == "run":
        result = run(peer, *args)
    elif mode == "eval":
        result = evaluate(peer, *args)
    else:
        raise SystemExit(f"peer_worker: unknown mode {mode!r}")
    print(json.dumps(result))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:
        print(f"{sys.argv[1]}: {type(e).__name__}: {' '.join(str(e).split())[:300]}",
              file=sys.stderr)
        sys.exit(1)
