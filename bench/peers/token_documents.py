"""The documents of a nanoGPT token file, for the token benchmark's peers that take documents
(Grain's source, litdata's optimize, Megatron-LM's builder): each ends with its EOS token, as
bench/token_throughput.py writes them (docs/BENCHMARKS.md, "Token files")."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from token_throughput import EOS_ID  # noqa: E402 -- bench/, where the files are written


def documents(path: str) -> tuple:
    """(tokens, starts, ends): the file's uint16 tokens mapped, and document k's [start, end)."""
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    ends = np.flatnonzero(tokens == EOS_ID) + 1
    if not len(ends) or ends[-1] != len(tokens):
        ends = np.append(ends, len(tokens))
    return tokens, np.concatenate([[0], ends[:-1]]), ends
