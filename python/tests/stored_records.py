"""Reads a dataset's records back by docs/FORMAT.md alone, independently of stoker's reader, so
that the writer's tests check what is on disk against the specification."""

import json
import struct
from pathlib import Path

import numpy as np

_NUMPY = {"uint8": np.uint8, "int64": np.int64, "float32": np.float32}
_FOOTER = struct.Struct("<QQQQ8s")


def read_manifest(path):
    return json.loads((Path(path) / "manifest.json").read_text())


def _shard_records(file):
    data = file.read_bytes()
    assert data[:8] == b"STKSHARD"
    index_offset, count, _, _, magic = _FOOTER.unpack(data[-40:])
    assert magic == b"STKINDEX"
    for i in range(count):
        offset, length, _ = struct.unpack_from("<QQQ", data, index_offset + 24 * i)
        yield data[offset:offset + length]


def _is_variable(field):
    """A bytes field, or a variable-length one (its shape starts with a dimension's name)."""
    return field["dtype"] == "bytes" or isinstance(field["shape"][:1] and field["shape"][0], str)


def _decode(record, fields):
    sample, offset = {}, 0
    variable = [f for f in fields if _is_variable(f)]
    for f in fields:
        if _is_variable(f):
            continue
        dtype = np.dtype(_NUMPY[f["dtype"]]).newbyteorder("<")
        count = int(np.prod(f["shape"], dtype=np.int64))
        value = np.frombuffer(record, dtype, count, offset).reshape(f["shape"])
        sample[f["name"]] = value[()] if not f["shape"] else value
        offset += count * dtype.itemsize
    lengths = struct.unpack_from(f"<{len(variable)}I", record, offset)
    offset += 4 * len(variable)
    for f, length in zip(variable, lengths):
        if f["dtype"] == "bytes":
            sample[f["name"]] = bytes(record[offset:offset + length])
        else:  # rows of shape[1:], as many as the length holds
            dtype = np.dtype(_NUMPY[f["dtype"]]).newbyteorder("<")
            row = dtype.itemsize * int(np.prod(f["shape"][1:], dtype=np.int64))
            assert length % row == 0, f"field {f['name']}: {length} bytes, not whole rows"
            value = np.frombuffer(record, dtype, length // dtype.itemsize, offset)
            sample[f["name"]] = value.reshape([length // row] + f["shape"][1:])
        offset += length
    assert offset == len(record), "record longer than its fields"
    return sample


def read_records(path):
    """Every record of the dataset at `path`, in order, as dicts {field: numpy value or bytes}."""
    manifest = read_manifest(path)
    fields = manifest["schema"]["fields"]
    records = [_decode(record, fields) for shard in manifest["shards"]
               for record in _shard_records(Path(path) / shard["file"])]
    assert len(records) == manifest["records"]
    return records
