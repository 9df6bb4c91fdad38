"""Token files with documents for the token tests: document lengths of a few layouts, a nanoGPT
.bin whose documents end with an EOS token, and Megatron-LM's indexed dataset."""

import struct

import numpy as np

EOS = 7


def documents(rng, total, layout, seq_len):
    """Document lengths summing to `total` tokens: "short" (1 to 3 tokens), "mixed" (1 to
    3 * seq_len), "long" (longer than a sample) or "one" (a single document)."""
    if layout == "one":
        return [total]
    high = {"short": 3, "mixed": 3 * seq_len, "long": 4 * seq_len + 5}[layout]
    low = seq_len + 1 if layout == "long" else 1
    lengths = []
    while sum(lengths) < total:
        lengths.append(int(min(rng.integers(low, high + 1), total - sum(lengths))))
    return lengths


def eos_file(path, lengths, rng, dtype=np.uint16):
    """Tokens whose documents have `lengths`, each ending with EOS (the last one cut where the
    file ends), no other EOS among them."""
    parts = []
    for n in lengths:
        body = rng.integers(EOS + 1, 60000, n, dtype=np.int64)
        body[-1] = EOS
        parts.append(body)
    tokens = np.concatenate(parts).astype(dtype)
    tokens.tofile(path)
    return tokens


def write_megatron(prefix, sequences, document_index, gap=0):
    """PREFIX.bin / PREFIX.idx as Megatron-LM writes them (uint16), `gap` tokens of filler
    between sequences in the .bin (then the array is not one run of the file)."""
    arrays = [np.asarray(s, np.uint16) for s in sequences]
    filler = np.full(gap, 65535, np.uint16)
    np.concatenate([x for a in arrays for x in (a, filler)] or [filler]).tofile(f"{prefix}.bin")
    lengths = np.array([len(a) for a in arrays], np.int32)
    pointers = np.concatenate([[0], np.cumsum(lengths[:-1] + gap) * 2]).astype(np.int64)
    with open(f"{prefix}.idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, len(arrays), len(document_index)))
        f.write(lengths.tobytes() + pointers.tobytes())
        f.write(np.asarray(document_index, np.int64).tobytes())
    return prefix
