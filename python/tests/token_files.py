"""Token files with documents for the token tests: document lengths of a few layouts, a nanoGPT
.bin whose documents end with an EOS token, and Megatron-LM's indexed dataset; an epoch read
across a resume."""

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


def megatron_documents(folder, gap):
    """A Megatron-LM dataset `folder`/corpus: 60 sequences of 0 to 40 tokens, no EOS, documents
    of 0 to 3 sequences (some empty), `gap` tokens of filler after each sequence (then the array
    is no run of the file). Its prefix, tokens, document starts (a bool per token and one past
    the last), the sequences' offsets in the array and the document index."""
    rng = np.random.default_rng(gap)
    sequences = [rng.integers(0, 60000, int(rng.integers(0, 41))) for _ in range(60)]
    index = [0]
    while index[-1] < len(sequences):
        index.append(min(len(sequences), index[-1] + int(rng.integers(0, 4))))
    prefix = write_megatron(folder / "corpus", sequences, index, gap)
    tokens = np.concatenate(sequences)
    starts = np.zeros(len(tokens) + 1, bool)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sequences])])
    starts[offsets[index]] = True
    return prefix, tokens, starts, offsets, index


def resumed_epoch(make, convert, taken):
    """An epoch of the loaders make() gives, as convert() gives batches: whole; its first `taken`
    batches from one loader; the rest from another restored from that one's state_dict; and
    that state."""
    whole = convert(make())
    first = make()
    batches = iter(first)
    head = convert([next(batches) for _ in range(taken)])
    resumed = make()
    resumed.load_state_dict(first.state_dict())
    return whole, head, convert(resumed), first.state_dict()
