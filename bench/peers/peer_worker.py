"""Runs one peer of the side-by-side benchmark inside that peer's environment (run.py starts it
under taskset). One JSON object on stdout; a failure is one line on stderr and exit status 1.

  peer_worker.py PEER prepare FOLDER STORE [MAX_SIDE]
                                                    the peer's own storage, from the files
                                                    (reduced copies with MAX_SIDE)
  peer_worker.py PEER run STORE CORES DTYPE SEED [WORK]
                                                    one epoch: rate, time to first batch, CPU
                                                    (WORK: textbook, or a recipe of recipes.py,
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


def run(peer, store, cores, dtype, seed, work="textbook"):
    import torch
    import recipes
    torch.set_num_threads(1)
    if work == "textbook":
        stream, size = peer.batches(store, int(cores), dtype, int(seed)), 224
    elif work in recipes.WORKS and hasattr(peer, "recipe_batches"):
        if dtype != "float32":
            raise RuntimeError(f"work {work}: float32 out only, not {dtype}")
        w = recipes.WORKS[work]
        stream, size = peer.recipe_batches(store, int(cores), w, int(seed)), w.size
    else:
        raise RuntimeError(f"no work {work!r} for this peer")
    start = time.perf_counter()
    images = batches = 0
    first = cpu_first = None
    for image, label in stream:
        if image.dtype != getattr(torch, dtype) or tuple(image.shape[1:]) != (3, size, size):
            raise RuntimeError(f"batch {batches}: {image.dtype} {tuple(image.shape)}, "
                               f"expected {dtype} [B, 3, {size}, {size}]")
        if len(label) != len(image):
            raise RuntimeError(f"batch {batches}: {len(label)} labels for {len(image)} images")
        if work != "textbook" and (label.dtype != torch.float32 or label.dim() != 2):
            raise RuntimeError(f"batch {batches}: labels {label.dtype} {tuple(label.shape)}, "
                               "expected the soft targets of MixUp/CutMix, float32 [B, classes]")
        image[-1, -1, -1, -1].item()  # the batch is there
        batches += 1
        if first is None:
            first, cpu_first = time.perf_counter(), proc_tree.cpu_seconds(os.getpid())
            first_images = len(image)
        images += len(image)
    end, cpu_end = time.perf_counter(), proc_tree.cpu_seconds(os.getpid())
    if batches < 2:
        raise RuntimeError(f"{images} images make {batches} batch: nothing is timed after the "
                           "first; use more images (or STOKER_PEERS_BATCH for a smoke run)")
    timed = images - first_images
    result = {"images": images, "batches": batches, "first_batch_s": first - start,
              "images_per_s": timed / (end - first),
              "cpu_s_per_image": (cpu_end - cpu_first) / timed}
    if work != "textbook" and hasattr(peer, "recipe_note"):
        result["note"] = peer.recipe_note(store, recipes.WORKS[work])
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
