"""stoker.Tokens(return_cu_seqlens="batch"): the batch's document offsets as FlashAttention's
varlen kernels (``flash_attn_varlen_func``), torch's ``torch.nn.attention.varlen.varlen_attn``
and its jagged nested tensors take them. The batch's rows of L tokens, flattened to one sequence
of B * L, are the segments of every row in row order: ``cu_seqlens`` int32 [segments + 1] (row
k's starts plus k * L, then B * L) and ``max_seqlen``, the longest segment (a Python int, as those
kernels take it). Made on the host from the rows' own cu_seqlens (read padded, with their sizes),
before any copy to a device: the kernels' int32, and a max that needs no device sync.

A packed caption field (Tokenize(packed=True)) is the same form made of its samples' rows of
varying length: their concatenation, with cu_seqlens, max_seqlen and position_ids (packed)."""

FIELD = "cu_seqlens"
LONGEST = "max_seqlen"
POSITIONS = "position_ids"
PACKED = (FIELD, LONGEST, POSITIONS)  # what a packed field adds after it, in order
# The largest offset an int32 holds: B * L must stay below it.
INT32_END = 2**31 - 1


def flattened(torch, padded, sizes):
    """(cu_seqlens int32, max_seqlen int) of rows whose cu_seqlens are `padded` [B, longest]
    (row k's first sizes[k, 0] values: its segment starts, then L)."""
    count = sizes[:, 0]
    rows = len(count)
    if rows == 0:
        return torch.zeros(1, dtype=torch.int32), 0
    length = padded[0, count[0] - 1]
    starts = torch.arange(padded.shape[1])[None, :] < (count - 1)[:, None]
    shifted = padded + torch.arange(rows, dtype=padded.dtype)[:, None] * length
    cu = torch.cat([shifted[starts], (rows * length).reshape(1)]).to(torch.int32)
    return cu, int((cu[1:] - cu[:-1]).max())


def flatten_cu_seqlens(torch, batch: dict) -> dict:
    """`batch` with its padded cu_seqlens (and cu_seqlens_sizes) as the flattened batch's
    cu_seqlens, followed by max_seqlen."""
    cu, longest = flattened(torch, batch[FIELD], batch[FIELD + "_sizes"])
    out = {}
    for name, value in batch.items():
        if name == FIELD:
            out[FIELD], out[LONGEST] = cu, longest
        elif name != FIELD + "_sizes":
            out[name] = value
    return out


def packed(torch, field: str, rows: list) -> dict:
    """{field: `rows` (1-D tensors of one dtype) concatenated, cu_seqlens int32 [rows + 1] (row
    k at [cu[k], cu[k + 1])), max_seqlen (an int, 0 without rows), position_ids int64 (0 at
    each row's start)}."""
    lengths = torch.tensor([len(row) for row in rows], dtype=torch.int64)
    cu = torch.zeros(len(rows) + 1, dtype=torch.int64)
    torch.cumsum(lengths, 0, out=cu[1:])
    total = int(cu[-1])
    positions = torch.arange(total) - torch.repeat_interleave(cu[:-1], lengths)
    values = torch.cat(rows) if rows else torch.empty(0, dtype=torch.int64)
    return {field: values, FIELD: cu.to(torch.int32),
            LONGEST: int(lengths.max()) if rows else 0, POSITIONS: positions}


def check_batch(batch_size: int, seq_len: int, what: str = "return_cu_seqlens='batch'",
                length: str = "seq_len") -> None:
    """ValueError where a batch's B * L tokens pass int32's offsets (`what`: the option, and
    `length` the name of L, as the message names them)."""
    if batch_size * seq_len > INT32_END:
        raise ValueError(f"{what}: batch_size {batch_size} x {length} {seq_len} tokens pass "
                         "int32's offsets (2^31 - 1), which FlashAttention's cu_seqlens are: "
                         f"a smaller batch or {length}")
