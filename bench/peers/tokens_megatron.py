"""Megatron-LM (megatron-core) in the token benchmark (token_worker.py), as its pretraining
drives it: prepare: its IndexedDatasetBuilder writes each file's documents (uint16, the EOS
each ends with kept: preprocess_data.py's --append-eod) as PREFIX.bin and PREFIX.idx; run:
BlendedMegatronDatasetBuilder builds GPTDataset (its document, sample and shuffle indices,
built anew into a new cache folder each run: the index building open_s times), several
files as one BlendedDataset (equal weights), with the null tokenizer (vocabulary 50,257, its
end of document the EOS) and no attention mask (create_attention_mask=False), in a
torch.distributed group of one rank (Gloo) as Megatron builds under one; a PyTorch
DataLoader in order with num_workers=0 (one core), as Megatron's pretraining sampler reads
the shuffled dataset; its tokens and labels, int64."""
import os
import shutil
import tempfile
from importlib.metadata import version

import numpy as np
import torch
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
from megatron.core.tokenizers import MegatronTokenizer

import token_documents

WHAT = (f"Megatron-core {version('megatron-core')}: IndexedDatasetBuilder .bin/.idx, "
        "GPTDataset (+ BlendedDataset) by BlendedMegatronDatasetBuilder, "
        "DataLoader(num_workers=0)")


def prefix(store, path):
    """Where Megatron's builder writes `path`'s documents: PREFIX.bin and PREFIX.idx."""
    return os.path.join(store, "megatron", os.path.splitext(os.path.basename(path))[0])


def prepare(paths, store):
    os.makedirs(os.path.join(store, "megatron"), exist_ok=True)
    for path in paths:
        out = prefix(store, path)
        if os.path.exists(out + ".idx"):
            continue
        tokens, starts, ends = token_documents.documents(path)
        builder = IndexedDatasetBuilder(out + ".bin.part", dtype=np.uint16)
        for start, end in zip(starts, ends):
            builder.add_document(tokens[start:end], [int(end - start)])
        builder.finalize(out + ".idx.part")
        os.replace(out + ".bin.part", out + ".bin")
        os.replace(out + ".idx.part", out + ".idx")
    return [prefix(store, path) + ".bin" for path in paths]


def open_batches(paths, store, seq_len, batch, seed):
    cache = tempfile.mkdtemp(prefix="megatron-indices-")
    try:
        # Megatron builds under torch.distributed (rank 0 builds a blend's indices): one rank.
        torch.distributed.init_process_group("gloo", init_method=f"file://{cache}/rendezvous",
                                             rank=0, world_size=1)
        tokenizer = MegatronTokenizer.from_pretrained(metadata_path={"library": "null"},
                                                      vocab_size=token_documents.EOS_ID)
        prefixes = [prefix(store, path) for path in paths]
        config = GPTDatasetConfig(
            random_seed=seed, sequence_length=seq_len, split="1,0,0", path_to_cache=cache,
            blend=(prefixes, None if len(prefixes) == 1 else [1.0] * len(prefixes)),
            tokenizer=tokenizer, reset_position_ids=False, reset_attention_mask=False,
            eod_mask_loss=False, create_attention_mask=False)
        # One epoch of the single file (no size: no oversampling); a blend needs a size: that of
        # one epoch of all the files.
        size = None if len(prefixes) == 1 else sum(
            os.path.getsize(p + ".bin") // 2 for p in prefixes) // seq_len
        train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [size, 0, 0], lambda: True,
                                                    config).build()
    finally:
        shutil.rmtree(cache)
    loader = torch.utils.data.DataLoader(train, batch_size=batch, shuffle=False, num_workers=0,
                                         drop_last=True)
    return ((sample["tokens"], sample["labels"]) for sample in loader)
