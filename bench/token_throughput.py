#!/usr/bin/env python3
"""Packed tokens per second from a token file, side by side in one run, rounds alternating:
stoker.Loader(stoker.Tokens(...)) (concatenate-and-split to --seq-len, shuffled, batches of
--batch), nanoGPT's get_batch on an np.memmap (random offsets, the same batch shape: the
simplest loader people use) and memcpy's bandwidth on the machine (numpy copying each batch's
bytes, int64 input_ids and labels: 16 bytes a token, from the file's bytes in memory into one
reused buffer: the floor issue 64 names, as tokens/s at the batch's 16 bytes a token). Each
loader turns the tokens into int64 input_ids and labels, as a training step takes them. Each
round's stoker loader runs in a new process (its first epoch is a new job's: the file mapped,
its pages touched), for two epochs; both are reported. --baseline DIR: also the stoker package
at DIR (another checkout's python/ folder, its extension built), in the same rounds, alternating
with this one: the ratios say what a change did. Also --sources N: N files mixed by
stoker.Mixture (equal weights). --eos-id N: stoker's samples with their document boundaries
(eos_id=N: position_ids, cu_seqlens "padded", labels masked at boundaries; a tree that has them).
--packing first_fit|best_fit (with --eos-id): whole documents packed into padded rows, with
segment_ids too; the tokens counted are the rows' own, not their padding. --vocab-size N: also
stoker with vocab_size=N (every id checked below it) in the same rounds, the two alternating in
turn: the ratio is what the check costs; with --baseline too, the baseline with vocab_size=N as
well, each tree's check's cost and this tree's checked loader against the baseline's.

  .venv/bin/python bench/token_throughput.py DIR [--mb 256] [--seq-len 2048] [--batch 8]
      [--workers 1] [--rounds 5] [--sources 1] [--baseline PYTHON_DIR] [--eos-id N]
      [--packing first_fit] [--vocab-size 50257]
DIR: where the token files are written (uint16, nanoGPT's .bin), kept between runs.
"""

import argparse
import glob
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
BATCH_BYTES_PER_TOKEN = 16  # int64 input_ids and int64 labels
EOS_ID = 50256  # GPT-2's end of text, nanoGPT's document separator


def package_folder() -> str:
    """Where the rounds import stoker from: this tree's python/ where its extension is built,
    else the folder holding the stoker this Python imports (an installed package, as
    scripts/gpu/build.sh makes)."""
    if glob.glob(os.path.join(TREE, "stoker", "_stoker*.so")):
        return TREE
    spec = importlib.util.find_spec("stoker")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"token_throughput: no stoker to measure: build the extension into {TREE}/stoker "
                 "or install the package")
    return os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))


def token_files(folder: str, mb: int, sources: int, doc_tokens: int = 0) -> list:
    """`sources` files of uint16 tokens, `mb` MB in all, written once. `doc_tokens`: documents
    of 1 to 2 * doc_tokens - 1 tokens (that mean), each ended by EOS_ID, as nanoGPT's
    prepare.py ends each document (the other tokens below it); 0: ids drawn from the whole
    vocabulary."""
    os.makedirs(folder, exist_ok=True)
    kind = f"docs{doc_tokens}" if doc_tokens else "tokens"
    paths = [os.path.join(folder, f"{kind}-{mb}-{k}of{sources}.bin") for k in range(sources)]
    tokens = mb * 2**20 // 2 // sources
    rng = np.random.default_rng(0)
    for path in paths:
        if os.path.exists(path) and os.path.getsize(path) == tokens * 2:
            continue
        if not doc_tokens:
            rng.integers(0, EOS_ID + 1, tokens, dtype=np.uint16).tofile(path)
            continue
        ids = rng.integers(0, EOS_ID, tokens, dtype=np.uint16)
        # Twice the lengths the mean needs: their sum passes the file's end (by far, surely).
        ends = np.cumsum(rng.integers(1, 2 * doc_tokens, 2 * (tokens // doc_tokens) + 2)) - 1
        ids[ends[ends < tokens]] = EOS_ID
        ids[-1] = EOS_ID
        ids.tofile(path)
    return paths


def stoker_loader(paths, seq_len, batch, workers, seed, eos_id=None, packing=None,
                  vocab_size=None):
    """stoker.Loader of the token files `paths` (several: mixed by stoker.Mixture, equal
    weights), shuffled batches of int64 input_ids and labels (with eos_id: their boundaries'
    fields; with packing: segment_ids too, last)."""
    import stoker
    fields = ("input_ids", "labels")
    boundaries = {}
    if eos_id is not None:
        fields += ("position_ids", "cu_seqlens")
        boundaries = dict(eos_id=eos_id, return_position_ids=True, return_cu_seqlens=True,
                          mask_boundary_labels=True)
    if packing:
        fields += ("segment_ids",)
        boundaries["packing"] = packing
    if vocab_size is not None:
        boundaries["vocab_size"] = vocab_size
    sources = [stoker.Tokens(p, seq_len=seq_len, **boundaries) for p in paths]
    data = sources[0] if len(sources) == 1 else stoker.Mixture(sources, until="all")
    return stoker.Loader(data, batch_size=batch, shuffle=True, order=stoker.Order(seed=seed),
                         feed=stoker.Feed(workers=workers),
                         batches=stoker.Batches(batch_format=fields, variable="padded"))


def stoker_epochs(paths, seq_len, batch, workers, seed, eos_id, packing=None,
                  vocab_size=None) -> tuple:
    """(tokens/s of epoch 0, of epoch 1) of a new stoker.Loader, and an epoch's tokens (packed:
    those of the rows' documents)."""
    loader = stoker_loader(paths, seq_len, batch, workers, seed, eos_id, packing, vocab_size)
    rates = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        tokens, start = 0, time.perf_counter()
        for ids, *rest in loader:
            tokens += int((rest[-1] > 0).sum()) if packing else ids.numel()
        rates.append(tokens / (time.perf_counter() - start))
    return tuple(rates), tokens


def nanogpt_batches(path, seq_len, batch, count, seed) -> int:
    """Tokens of `count` batches of nanoGPT's get_batch (random offsets, int64 x and y)."""
    data = np.memmap(path, dtype=np.uint16, mode="r")
    rng = torch.Generator().manual_seed(seed)
    tokens = 0
    for _ in range(count):
        ix = torch.randint(len(data) - seq_len, (batch,), generator=rng)
        x = torch.stack([torch.from_numpy(data[i:i + seq_len].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + seq_len].astype(np.int64))
                         for i in ix])
        tokens += x.numel() if y.numel() == x.numel() else 0
    return tokens


def memcpy_bytes_per_s(path, seq_len, batch) -> float:
    """Bytes/s of copying batch-sized pieces (a batch's int64 input_ids and labels) of the
    file's bytes in memory into one reused buffer, through the whole file (the best of 3)."""
    source = np.fromfile(path, dtype=np.uint8)
    piece = seq_len * batch * BATCH_BYTES_PER_TOKEN
    target = np.empty(piece, dtype=np.uint8)
    starts = range(0, source.size - piece + 1, piece)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for at in starts:
            np.copyto(target, source[at:at + piece])
        best = max(best, len(starts) * piece / (time.perf_counter() - start))
    return best


def stoker_round(python_dir, args, paths, seed, vocab_size=None) -> tuple:
    """stoker_epochs in a new process importing stoker from `python_dir`."""
    child = [sys.executable, os.path.abspath(__file__), args.dir, "--mb", str(args.mb),
             "--seq-len", str(args.seq_len), "--batch", str(args.batch), "--workers",
             str(args.workers), "--sources", str(args.sources), "--child", python_dir,
             "--seed", str(seed)]
    if args.eos_id is not None:
        child += ["--eos-id", str(args.eos_id)]
    if args.packing:
        child += ["--packing", args.packing]
    if vocab_size is not None:
        child += ["--vocab-size", str(vocab_size)]
    run = subprocess.run(child, capture_output=True, text=True, check=True)
    rates, tokens = json.loads(run.stdout.splitlines()[-1])
    return tuple(rates), tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--baseline", help="another stoker package's folder, run alternating")
    parser.add_argument("--eos-id", type=int, help="stoker's samples with document boundaries")
    parser.add_argument("--packing", choices=["first_fit", "best_fit"],
                        help="stoker's rows of whole documents (with --eos-id)")
    parser.add_argument("--vocab-size", type=int,
                        help="also stoker with vocab_size, alternating: the check's cost")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a round's stoker, from this folder
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    paths = token_files(args.dir, args.mb, args.sources)
    if args.child:
        sys.path.insert(0, args.child)
        print(json.dumps(stoker_epochs(paths, args.seq_len, args.batch, args.workers, args.seed,
                                       args.eos_id, args.packing, args.vocab_size)))
        return
    # Each run: its package folder and vocab_size; the runs go in reverse every other round.
    here = package_folder()
    trees = {"stoker": (here, None)}
    pairs = []  # (new, old): the ratio new / old, round by round
    if args.baseline:
        pairs.append(("stoker", "baseline"))
        trees = {"baseline": (os.path.abspath(args.baseline), None), "stoker": (here, None)}
    if args.vocab_size is not None:
        pairs.append(("vocab", "stoker"))
        trees["vocab"] = (here, args.vocab_size)
        if args.baseline:
            pairs += [("baseline vocab", "baseline"), ("vocab", "baseline vocab")]
            trees["baseline vocab"] = (trees["baseline"][0], args.vocab_size)
    rates = {name: [] for tree in trees for name in (f"{tree} epoch 0", f"{tree} epoch 1")}
    rates["nanogpt"] = []
    rates["memcpy"] = []
    for round_ in range(args.rounds):
        for tree in (list(trees) if round_ % 2 == 0 else list(trees)[::-1]):
            folder, vocab_size = trees[tree]
            (first, later), tokens = stoker_round(folder, args, paths, round_, vocab_size)
            rates[f"{tree} epoch 0"].append(first)
            rates[f"{tree} epoch 1"].append(later)
        batches = max(1, tokens // (args.seq_len * args.batch) // 4)  # a quarter epoch
        start = time.perf_counter()
        tokens = nanogpt_batches(paths[0], args.seq_len, args.batch, batches, round_)
        rates["nanogpt"].append(tokens / (time.perf_counter() - start))
        copied = memcpy_bytes_per_s(paths[0], args.seq_len, args.batch)
        rates["memcpy"].append(copied / BATCH_BYTES_PER_TOKEN)
    med = {name: statistics.median(r) for name, r in rates.items()}
    print(f"{args.mb} MB of uint16 tokens in {args.sources} file(s), seq_len {args.seq_len}, "
          f"batch {args.batch}, stoker workers {args.workers}, {args.rounds} rounds (medians)"
          + ("" if args.eos_id is None else f", boundaries of eos_id {args.eos_id}")
          + (f", packed {args.packing}" if args.packing else "")
          + ("" if args.vocab_size is None else f", vocab: vocab_size={args.vocab_size}"))
    for name, rate in med.items():
        print(f"  {name:17s} {rate / 1e6:8.1f} M tokens/s")
    print(f"  (memcpy: {med['memcpy'] * BATCH_BYTES_PER_TOKEN / 1e9:.1f} GB/s of batch bytes, "
          f"{BATCH_BYTES_PER_TOKEN} a token: the floor)")
    for name in rates:
        if "epoch" in name:
            rate = med[name]
            print(f"  {name} / nanogpt {rate / med['nanogpt']:.2f}x, "
                  f"/ memcpy {rate / med['memcpy']:.3f}")
    for new, old in pairs:
        for epoch in (0, 1):
            ratios = [a / b for a, b in zip(rates[f"{new} epoch {epoch}"],
                                            rates[f"{old} epoch {epoch}"])]
            print(f"  epoch {epoch}: {new} / {old}, round by round: "
                  + ", ".join(f"{r:.2f}x" for r in ratios)
                  + f" (median {statistics.median(ratios):.2f}x)")


if __name__ == "__main__":
    main()
