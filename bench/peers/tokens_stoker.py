"""stoker in the token benchmark (token_worker.py): stoker.Tokens over the files in place (a
nanoGPT .bin, or Megatron-LM's .bin with its .idx beside it), several mixed by stoker.Mixture,
inline (Feed(workers=0): the consumer's thread), the loader bench/token_throughput.py
measures."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import token_throughput  # noqa: E402 -- bench/, the loader's one definition

import stoker  # noqa: E402 -- imported before the timed open, as the peers' packages are

WHAT = f"stoker {stoker.__version__}: stoker.Loader(stoker.Tokens), in place, inline (0 workers)"


def prepare(paths, store):
    """Nothing: stoker reads the files in place."""


def open_batches(paths, store, seq_len, batch, seed):
    return token_throughput.stoker_loader(paths, seq_len, batch, 0, seed)
