"""Parquet token columns whose one row decodes to many ids from a few hundred bytes, written
without holding them: pyarrow writes one row of `small` equal ids (dictionary-encoded, no
compression, data page v1: their definition levels, repetition levels and dictionary indices
are runs whose lengths are varints), and every varint of the row's counts is rewritten for
`count` ids, the same number of bytes long. The file is then what a writer of `count` ids makes:
its footer, page header and runs agree (issue 64: a decompression bomb of a token column).
Also a Parquet file whose page header claims over 1 GiB (write_page_claim) and an Arrow IPC
file whose one ZSTD-compressed record batch decompresses to over 1 GiB (write_arrow_bomb), each
a few KB.

Run as a script: python token_bombs.py PATH COUNT (writes PATH, prints nothing)."""

import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
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


def one_row_of_zeros(count):
    """A table of one row of `count` int64 ids, all 0 (np.zeros: pages not touched until read)."""
    ids = pa.array(np.zeros(count, np.int64))
    return pa.table({"input_ids": pa.ListArray.from_arrays(pa.array([0, count], pa.int32()), ids)})


def read_varint(data, at):
    """(value, end) of the unsigned LEB128 varint at byte `at` of `data`."""
    value = shift = 0
    while True:
        byte = data[at]
        value, shift, at = value | (byte & 0x7F) << shift, shift + 7, at + 1
        if not byte & 0x80:
            return value, at


def write_page_claim(path):
    """Writes PATH: one ZSTD data page of 2^24 + 2^20 zero ids (plain, 136 MiB decompressed),
    its header's uncompressed_page_size then raised by 1 GiB (the same 5-byte zigzag varint, the
    header's first 5-byte one). Returns the size the header claims."""
    count = (1 << 24) + (1 << 20)
    pq.write_table(one_row_of_zeros(count), path, compression="zstd", use_dictionary=False,
                   column_encoding={"input_ids": "PLAIN"}, data_page_size=1 << 30,
                   write_statistics=False, write_batch_size=count)
    data = bytearray(open(path, "rb").read())
    at = 4  # the page header, after the magic "PAR1": its sizes' varints in its first bytes
    while True:
        zigzag, end = read_varint(data, at)
        if end - at == 5 and 8 * count <= zigzag // 2 < 8 * count + (1 << 20):
            break
        at += 1
    claimed = zigzag // 2 + (1 << 30)
    data[at:end] = varint(2 * claimed)
    assert end - at == len(varint(2 * claimed))
    with open(path, "wb") as out:
        out.write(data)
    return claimed


def write_arrow_bomb(path):
    """Writes PATH: an Arrow IPC file of one ZSTD-compressed record batch, one row of 2^27 + 2^20
    zero ids (1 GiB + 8 MiB decompressed). Returns the ids' bytes."""
    table = one_row_of_zeros((1 << 27) + (1 << 20))
    options = ipc.IpcWriteOptions(compression="zstd")
    with ipc.new_file(str(path), table.schema, options=options) as writer:
        writer.write_table(table)
    return table.column(0).chunk(0).values.nbytes


if __name__ == "__main__":
    write_bomb(sys.argv[1], int(sys.argv[2]))
