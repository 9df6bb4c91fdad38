#!/usr/bin/env python3
"""Packed tokens per second from a token file, side by side in one run, rounds alternating:
stoker.Loader(stoker.Tokens(...)) (concatenate-and-split to --seq-len, shuffled, batches of
--batch), nanoGPT's get_batch on an np.memmap (random offsets, the same batch shape: the
simplest loader people use) and memcpy's bandwidth on the machine (numpy copying the file's
bytes once they are in memory: the floor issue 64 names, tokens/s at the file's token size).
Each loader turns the tokens into int64 input_ids and labels, as a training step takes them.
A new stoker loader's first epoch builds its units' samples, a later one finds those its plan
kept: both are reported. Also --sources N: N files mixed by stoker.Mixture (equal weights).

  .venv/bin/python bench/token_throughput.py DIR [--mb 256] [--seq-len 2048] [--batch 8]
      [--workers 1] [--rounds 5] [--sources 1]
DIR: where the token files are written (uint16, nanoGPT's .bin), kept between runs.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stoker  # noqa: E402


def token_files(folder: str, mb: int, sources: int) -> list:
    """`sources` files of uint16 tokens, `mb` MB in all, written once."""
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"tokens-{mb}-{k}of{sources}.bin") for k in range(sources)]
    tokens = mb * 2**20 // 2 // sources
    rng = np.random.default_rng(0)
    for path in paths:
        if not os.path.exists(path) or os.path.getsize(path) != tokens * 2:
            rng.integers(0, 50257, tokens, dtype=np.uint16).tofile(path)
    return paths


def stoker_epochs(paths, seq_len, batch, workers, seed) -> tuple:
    """(tokens/s of epoch 0, of epoch 1) of a new stoker.Loader: the first builds each unit's
    samples, a later one finds the units the plan kept."""
    sources = [stoker.Tokens(p, seq_len=seq_len) for p in paths]
    data = sources[0] if len(sources) == 1 else stoker.Mixture(sources, until="all")
    loader = stoker.Loader(data, batch_size=batch, shuffle=True,
                           order=stoker.Order(seed=seed), feed=stoker.Feed(workers=workers),
                           batches=stoker.Batches(batch_format=("input_ids", "labels")))
    rates = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        tokens, start = 0, time.perf_counter()
        for ids, labels in loader:
            tokens += ids.numel()
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


def memcpy_tokens_per_s(path) -> float:
    """uint16 tokens/s of copying the file's bytes in memory (the best of 3)."""
    source = np.fromfile(path, dtype=np.uint8)
    target = np.empty_like(source)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        np.copyto(target, source)
        best = max(best, source.size / (time.perf_counter() - start))
    return best / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sources", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    paths = token_files(args.dir, args.mb, args.sources)
    rates = {"stoker epoch 0": [], "stoker epoch 1": [], "nanogpt": []}
    for round_ in range(args.rounds):
        (first, later), tokens = stoker_epochs(paths, args.seq_len, args.batch, args.workers,
                                               round_)
        rates["stoker epoch 0"].append(first)
        rates["stoker epoch 1"].append(later)
        batches = max(1, tokens // (args.seq_len * args.batch) // 4)  # a quarter epoch
        start = time.perf_counter()
        tokens = nanogpt_batches(paths[0], args.seq_len, args.batch, batches, round_)
        rates["nanogpt"].append(tokens / (time.perf_counter() - start))
    floor = memcpy_tokens_per_s(paths[0])
    med = {name: statistics.median(r) for name, r in rates.items()}
    print(f"{args.mb} MB of uint16 tokens in {args.sources} file(s), seq_len {args.seq_len}, "
          f"batch {args.batch}, stoker workers {args.workers}, {args.rounds} rounds (medians)")
    for name, rate in med.items():
        print(f"  {name:15s} {rate / 1e6:8.1f} M tokens/s")
    print(f"  {'memcpy':15s} {floor / 1e6:8.1f} M tokens/s (the floor)")
    for epoch in (0, 1):
        rate = med[f"stoker epoch {epoch}"]
        print(f"  stoker epoch {epoch} / nanogpt {rate / med['nanogpt']:.2f}x, "
              f"/ memcpy {rate / floor:.3f}")


if __name__ == "__main__":
    main()
