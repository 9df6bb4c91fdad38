"""Parquet token columns whose one row decodes to many ids from a few hundred bytes, written
without holding them: pyarrow writes one row of `small` equal ids (dictionary-encoded, no
compression, data page v1: their definition levels, repetition levels and dictionary indices
are runs whose lengths are varints), and every varint of the row's counts is rewritten for
`count` ids, the same number of bytes long. The file is then what a writer of `count` ids makes:
its footer, page header and runs agree (issue 64: a decompression bomb of a token column).

Run as a script: python token_bombs.py PATH COUNT (writes PATH, prints nothing)."""

import sys

import pyarrow as pa
import pyarrow.parquet as pq

SMALL = (1 << 20) + 4321  # its counts' varints are 4 bytes long, as any count below 2^27's
TOKEN = 7


def varint(value):
    """Value as an unsigned LEB128 varint (a zigzag-encoded count is twice the count)."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def write_bomb(path, count):
    """Writes PATH: one row of `count` ids, each TOKEN, as int64; count in [2^20, 2^27)."""
    assert 1 << 20 <= count < 1 << 27, count
    ids = pa.array([TOKEN] * SMALL, pa.int64())
    rows = pa.ListArray.from_arrays(pa.array([0, SMALL], pa.int32()), ids)
    pq.write_table(pa.table({"input_ids": rows}), path, compression="none",
                   use_dictionary=True, data_page_version="1.0", write_statistics=False,
                   row_group_size=1)
    data = bytearray(open(path, "rb").read())
    replaced = 0
    # The row's ids (page header, footer, definition level and index runs), and its ids after the
    # first (a histogram of repetition levels) or the first 8 (a repetition-level run after 8
    # bit-packed levels), each doubled: a zigzag's or a run header's.
    for less in (0, 1, 8):
        old, new = varint(2 * (SMALL - less)), varint(2 * (count - less))
        assert len(old) == len(new)
        replaced += data.count(old)
        data = data.replace(old, new)
    with open(path, "wb") as out:
        out.write(data)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).num_values == count
    return replaced


if __name__ == "__main__":
    write_bomb(sys.argv[1], int(sys.argv[2]))
