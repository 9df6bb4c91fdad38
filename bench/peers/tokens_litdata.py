"""litdata in the token benchmark (token_worker.py), as LitGPT's pretraining data drives it:
prepare: `optimize` writes each file's documents (uint16 arrays) into litdata's chunks with
TokensLoader; run: StreamingDataset(item_loader=TokensLoader(block_size=seq_len + 1),
shuffle=True), several mixed by CombinedStreamingDataset (equal weights), StreamingDataLoader
with num_workers=0 (one core: no worker processes); input_ids and labels the blocks shifted by
one, as int64 (LitGPT's `batch[:, :L].long()`, `batch[:, 1:L + 1].long()`)."""
import os
from importlib.metadata import version

import numpy as np
from litdata import CombinedStreamingDataset, StreamingDataLoader, StreamingDataset, optimize
from litdata.streaming.item_loader import TokensLoader

import token_documents

WHAT = (f"litdata {version('litdata')}: optimize to chunks, "
        "StreamingDataset(TokensLoader(block_size)), CombinedStreamingDataset, "
        "StreamingDataLoader(num_workers=0)")
PIECES = 16  # optimize's inputs: ranges of a file's documents


def _chunks_folder(store, path):
    return os.path.join(store, "litdata", os.path.basename(path))


def documents_of(piece):
    """optimize's fn: the documents of (path, first, end) as uint16 arrays."""
    path, first, end = piece
    tokens, starts, ends = token_documents.documents(path)
    for k in range(first, end):
        yield np.array(tokens[starts[k]:ends[k]])


def prepare(paths, store):
    """Each file's chunks folder, made by optimize."""
    for path in paths:
        folder = _chunks_folder(store, path)
        if os.path.exists(os.path.join(folder, "index.json")):
            continue
        count = len(token_documents.documents(path)[1])
        bounds = np.linspace(0, count, PIECES + 1).astype(int)
        optimize(fn=documents_of, inputs=[(path, int(a), int(b)) for a, b in
                                          zip(bounds[:-1], bounds[1:])],
                 output_dir=folder, chunk_bytes="64MB", item_loader=TokensLoader(),
                 num_workers=1, mode="overwrite", verbose=False)
    return [_chunks_folder(store, path) for path in paths]


def open_batches(paths, store, seq_len, batch, seed):
    sets = [StreamingDataset(_chunks_folder(store, path),
                             item_loader=TokensLoader(block_size=seq_len + 1), shuffle=True,
                             drop_last=True, seed=seed) for path in paths]
    data = sets[0] if len(sets) == 1 else CombinedStreamingDataset(
        sets, seed=seed, weights=[1.0 / len(sets)] * len(sets), iterate_over_all=False)
    loader = StreamingDataLoader(data, batch_size=batch, num_workers=0, drop_last=True)
    return ((tokens[:, :seq_len].long(), tokens[:, 1:seq_len + 1].long()) for tokens in loader)
