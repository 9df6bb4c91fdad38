"""torchtitan in the token benchmark (token_worker.py), through its Hugging Face text path,
which takes text only: so it tokenizes. prepare: a byte-level BPE (Hugging Face tokenizers,
at most 50,257 ids, "<|endoftext|>" its end of document) trained on CORPUS_BYTES of Python's
standard library sources, since no GPT-2 vocabulary can be fetched here, and the text of each
file's first documents (TEXT_TOKENS in all, their ids, modulo its vocabulary, decoded by it)
in a Parquet file with a "text" column; run: the file registered in torchtitan's DATASETS (a
`load_dataset("parquet")` loader, as its docs/datasets.md adds one), HuggingFaceTokenizer on
the trained files, HuggingFaceTextDataLoader (one file) or InterleavedHuggingFaceTextDataLoader
(several, equal weights), num_workers=0 (one core), not infinite; its first epoch reads in
order (torchtitan shuffles from the second). Its input and labels, int64: the tokens it
counts are those its tokenizer made of the text."""
import glob
import json
import os
import sysconfig
from importlib.metadata import version

import numpy as np

import token_documents

# Hugging Face offline and quiet (its datasets' cache: beside the store, open_batches): before
# its import.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from datasets import load_dataset  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from torchtitan.components.tokenizer import HuggingFaceTokenizer  # noqa: E402
from torchtitan.hf_datasets import DatasetConfig, text_datasets  # noqa: E402

STDLIB = sysconfig.get_paths()["stdlib"]
TEXT_TOKENS = 32 * 2**20  # the files' ids made text, in all: more than a run reads
CORPUS_BYTES = 8 * 2**20  # of the standard library's sources, to train the tokenizer on
EOT = "<|endoftext|>"
WHAT = (f"torchtitan {version('torchtitan')}: HuggingFaceTextDataLoader / "
        "InterleavedHuggingFaceTextDataLoader on Parquet text, tokenizing (HF tokenizers BPE), "
        "num_workers=0")


def _folder(store):
    return os.path.join(store, "torchtitan")


def _text_path(store, path):
    return os.path.join(_folder(store), os.path.basename(path) + ".parquet")


def _train_tokenizer(folder):
    """tokenizer.json and tokenizer_config.json of a byte-level BPE, in `folder`."""
    texts, size = [], 0
    for source in sorted(glob.glob(os.path.join(STDLIB, "**", "*.py"), recursive=True)):
        with open(source, encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
        size += len(texts[-1])
        if size >= CORPUS_BYTES:
            break
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=token_documents.EOS_ID + 1, special_tokens=[EOT], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    os.makedirs(folder, exist_ok=True)
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": EOT, "add_bos_token": False, "add_eos_token": False}, f)


def prepare(paths, store):
    """The tokenizer's folder, trained once, and each file's Parquet text."""
    folder = os.path.join(_folder(store), "tokenizer")
    if not os.path.exists(os.path.join(folder, "tokenizer_config.json")):
        _train_tokenizer(folder)
    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    vocabulary = tokenizer.get_vocab_size()
    for path in paths:
        out = _text_path(store, path)
        if os.path.exists(out):
            continue
        tokens, starts, ends = token_documents.documents(path)
        count = int(np.searchsorted(ends, TEXT_TOKENS // len(paths))) + 1
        texts = []
        for first in range(0, count, 1024):
            last = min(first + 1024, count)
            texts += tokenizer.decode_batch([  # each document without its EOS
                (tokens[s:e - 1] % vocabulary).tolist()
                for s, e in zip(starts[first:last], ends[first:last])])
        pq.write_table(pa.table({"text": texts}), out + ".part")
        os.replace(out + ".part", out)
    return [_text_path(store, path) for path in paths]


def open_batches(paths, store, seq_len, batch, seed):
    cache = os.path.join(_folder(store), "hf-cache")
    names = []
    for path in paths:
        names.append(os.path.basename(path).lower())
        text_datasets.DATASETS[names[-1]] = DatasetConfig(
            path=_text_path(store, path),
            loader=lambda file: load_dataset("parquet", data_files=file, split="train",
                                             cache_dir=cache),
            sample_processor=lambda sample: sample["text"])
    tokenizer = HuggingFaceTokenizer(tokenizer_path=os.path.join(_folder(store), "tokenizer"))
    common = dict(dp_world_size=1, dp_rank=0, tokenizer=tokenizer, seq_len=seq_len,
                  local_batch_size=batch)
    if len(paths) == 1:
        loader = text_datasets.HuggingFaceTextDataLoader(
            text_datasets.HuggingFaceTextDataLoader.Config(
                dataset=names[0], infinite=False, num_workers=0), **common)
    else:
        loader = text_datasets.InterleavedHuggingFaceTextDataLoader(
            text_datasets.InterleavedHuggingFaceTextDataLoader.Config(
                sources=[text_datasets.HFDataSource(dataset=name, infinite=False)
                         for name in names], seed=seed, num_workers=0), **common)
    return ((inputs["input"], labels) for inputs, labels in loader)
