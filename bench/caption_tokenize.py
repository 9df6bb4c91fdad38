#!/usr/bin/env python3
"""Captions tokenized by stoker.transforms.Tokenize alone (no image), captions/s: a batch's
captions in one encode_batch (Tokenize's way with a Hugging Face tokenizer) against one encode
per caption (the same tokenizer behind an object without encode_batch), alternating in one run,
the steps in the loader's thread (python_workers=0) or in threads.

    python bench/make_image_text_set.py /tmp/pairs --samples 3000 --size 320 --per-tar 500
    python bench/caption_tokenize.py /tmp/pairs [--rounds 3] [--epochs 5] [--batch-size 64]
        [--workers 0] [--cores 0]

Both give the same int64 [B, 77] ids (checked); the tokenizer is image_text_pipeline.py's BPE.
"""

import argparse
import os
import pathlib
import time

import torch

import stoker
from image_text_pipeline import CONTEXT, trained_tokenizer


class OneByOne:
    """The tokenizer with encode alone: Tokenize encodes each caption by itself."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text):
        return self.tokenizer.encode(text)


def loader(tars, tokenizer, batch_size, workers):
    T = stoker.transforms
    captions = stoker.WebDataset(tars, label=None, transforms={
        "txt": T.Tokenize(tokenizer, context_length=CONTEXT)})  # batch_format: the txt alone
    return stoker.Loader(captions, batch_size=batch_size, shuffle=False, batch_format=("txt",),
                         python_parallel="threads", python_workers=workers)


def epochs(loader, count: int) -> tuple:
    """(captions per second over `count` epochs, after one warm-up epoch; the last one's ids)."""
    list(loader)
    start, captions = time.perf_counter(), 0
    for _ in range(count):
        ids = torch.cat([batch[0] for batch in loader])
        captions += len(ids)
    return captions / (time.perf_counter() - start), ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tars", type=pathlib.Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5, help="epochs timed a round")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=0, help="python_workers (threads)")
    parser.add_argument("--cores", default=None,
                        help="cores to pin to, comma-separated (default: all)")
    args = parser.parse_args()
    if args.cores is not None:
        os.sched_setaffinity(0, {int(c) for c in args.cores.split(",")})
    torch.set_num_threads(1)
    tars = sorted(str(p) for p in args.tars.glob("*.tar"))
    tokenizer = trained_tokenizer(tars)
    runs = {"encode_batch": [], "encode, one by one": []}
    for _ in range(args.rounds):
        batched, ids = epochs(loader(tars, tokenizer, args.batch_size, args.workers),
                              args.epochs)
        single, same = epochs(loader(tars, OneByOne(tokenizer), args.batch_size, args.workers),
                              args.epochs)
        assert torch.equal(ids, same)
        runs["encode_batch"].append(batched)
        runs["encode, one by one"].append(single)
        print(f"encode_batch {batched:,.0f} captions/s, encode {single:,.0f}: "
              f"{batched / single:.2f}x", flush=True)
    for name, values in runs.items():
        print(f"{name}: {', '.join(f'{v:,.0f}' for v in values)} captions/s")


if __name__ == "__main__":
    main()
