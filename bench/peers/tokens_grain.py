"""Google Grain in the token benchmark (token_worker.py), as its dataset API is documented for
language-model data: a random-access source of the file's documents (views of the mapped
tokens), MapDataset.source, shuffled, to_iter_dataset read inline (ReadOptions(num_threads=0),
Grain's advice for data in memory), ConcatThenSplitIterDataset into rows of seq_len + 1
tokens, several files mixed by IterDataset.mix (equal weights), batch; input_ids and labels
the rows shifted by one, as int64. One core: no worker processes."""
from importlib.metadata import version

import grain
import torch

import token_documents

WHAT = (f"Grain {version('grain')}: MapDataset.source(documents).shuffle, "
        "ConcatThenSplitIterDataset, IterDataset.mix, batch; inline")


class Documents:
    """Grain's RandomAccessDataSource over a token file: element k, document k's tokens."""

    def __init__(self, path):
        self.tokens, self.starts, self.ends = token_documents.documents(path)

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, k):
        return self.tokens[self.starts[k]:self.ends[k]]


def prepare(paths, store):
    """Nothing: the source reads the files in place."""


def open_batches(paths, store, seq_len, batch, seed):
    inline = grain.ReadOptions(num_threads=0, prefetch_buffer_size=0)
    rows = [grain.experimental.ConcatThenSplitIterDataset(
        grain.MapDataset.source(Documents(path)).shuffle(seed=seed + k)
        .map(lambda tokens: {"tokens": tokens}).to_iter_dataset(inline),
        length_struct={"tokens": seq_len + 1}) for k, path in enumerate(paths)]
    data = rows[0] if len(rows) == 1 else grain.IterDataset.mix(rows, [1.0] * len(rows))
    return ((tokens[:, :-1].long(), tokens[:, 1:].long()) for tokens in (
        torch.from_numpy(element["tokens"]) for element in data.batch(batch,
                                                                      drop_remainder=True)))
