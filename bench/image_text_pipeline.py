#!/usr/bin/env python3
"""Image-text pairs per core: stoker (native crops, captions tokenized by Tokenize) against
open_clip's webdataset pipeline shape (webdataset decoding with PIL, torchvision's
RandomResizedCrop + ToTensor + Normalize, the same tokenizer per sample, batched in a
DataLoader worker), the whole process pinned to one core, same run, pairs/s.

    python bench/make_image_text_set.py /tmp/pairs --samples 2000 --size 320
    python bench/image_text_pipeline.py /tmp/pairs [--batches 40] [--batch-size 64] [--rounds 1]

Both give float32 [B, 3, 224, 224] images and int64 [B, 77] ids (stoker's packed row: the ids
packed, Tokenize(packed=True), with cu_seqlens and position_ids); the tokenizer is a BPE
trained here on the captions (nothing downloaded). The rows run in turn, --rounds times.
"""

import argparse
import os
import pathlib
import time

import torch
import webdataset as wds
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from torchvision import transforms as tv

import stoker

CONTEXT = 77
MEAN, STD = [0.481, 0.458, 0.408], [0.269, 0.261, 0.276]  # open_clip's


def trained_tokenizer(tars: list) -> Tokenizer:
    texts = [s["txt"].decode() for s in wds.WebDataset(tars, shardshuffle=False,
                                                        empty_check=False)]
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=512, special_tokens=["[PAD]", "[UNK]"], show_progress=False))
    return tokenizer


class PaddedIds:
    """open_clip's text transform: one caption's ids, cut and padded to CONTEXT."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __call__(self, text: str) -> torch.Tensor:
        ids = self.tokenizer.encode(text).ids[:CONTEXT]
        out = torch.zeros(CONTEXT, dtype=torch.int64)
        out[:len(ids)] = torch.tensor(ids, dtype=torch.int64)
        return out


def webdataset_loader(tars, tokenizer, batch_size):
    preprocess = tv.Compose([tv.RandomResizedCrop(224, scale=(0.9, 1.0)), tv.ToTensor(),
                             tv.Normalize(MEAN, STD)])
    pipeline = (wds.WebDataset(tars, shardshuffle=False, empty_check=False)
                .decode("pilrgb").rename(image="jpg", text="txt")
                .map_dict(image=preprocess, text=PaddedIds(tokenizer))
                .to_tuple("image", "text").batched(batch_size))
    return torch.utils.data.DataLoader(pipeline, batch_size=None, num_workers=1)


def stoker_loader(tars, tokenizer, batch_size, parallel, packed=False):
    T = stoker.transforms
    pairs = stoker.WebDataset(tars, label=None, transforms={
        "image": T.Compose([T.RandomResizedCrop(224, scale=(0.9, 1.0)), T.ToTensor(),
                            T.Normalize(MEAN, STD)]),
        "txt": T.Tokenize(tokenizer, context_length=CONTEXT, packed=packed)})
    workers = 0 if parallel == "serial" else 1
    return stoker.Loader(pairs, batch_size=batch_size, shuffle=False, num_workers=1,
                         batch_format=("image", "txt", "cu_seqlens") if packed else
                         ("image", "txt"),
                         python_parallel="threads" if parallel == "serial" else parallel,
                         python_workers=workers)


def rate(loader, batches: int) -> float:
    """Pairs per second over `batches` batches after two warm-up ones (one pass)."""
    it = iter(loader)
    for _ in range(2):
        next(it)
    start, pairs = time.perf_counter(), 0
    for _ in range(batches):
        images, ids, *packed = next(it)
        assert images.shape[1:] == (3, 224, 224)
        assert len(ids) <= len(images) * CONTEXT if packed else ids.shape[1:] == (CONTEXT,)
        pairs += len(images)
    return pairs / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tars", type=pathlib.Path)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--core", type=int, default=0, help="the core to pin to")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})  # every thread and worker process on one core
    torch.set_num_threads(1)
    tars = sorted(str(p) for p in args.tars.glob("*.tar"))
    tokenizer = trained_tokenizer(tars)
    results = {}
    rows = (("webdataset + PIL + torchvision (open_clip's shape)",
             lambda: webdataset_loader(tars, tokenizer, args.batch_size)),
            ("stoker, tokenizer in the loader's thread",
             lambda: stoker_loader(tars, tokenizer, args.batch_size, "serial")),
            ("stoker, tokenizer in the loader's thread, captions packed",
             lambda: stoker_loader(tars, tokenizer, args.batch_size, "serial", packed=True)),
            ("stoker, tokenizer in 1 worker process",
             lambda: stoker_loader(tars, tokenizer, args.batch_size, "processes")))
    for _ in range(args.rounds):
        for name, make in rows:
            results.setdefault(name, []).append(rate(make(), args.batches))
            print(f"{name}: {results[name][-1]:.1f} pairs/s", flush=True)
    base = next(iter(results.values()))
    for name, values in list(results.items())[1:]:
        print(f"{name}: " + ", ".join(f"{v / b:.2f}x" for v, b in zip(values, base)),
              flush=True)


if __name__ == "__main__":
    main()
