#!/usr/bin/env python3
"""What a stoker store spends beyond the image files it is compared with (docs/BENCHMARKS.md,
"Against every peer"): its format (per record: the fixed fields, a length and an index entry
with the record's checksum; a header, a footer, the manifest), and per image the difference
between its stored JPEG and the file, split into the restart markers stoker's JPEGs carry and
the rest: each JPEG, stored and file, is rewritten without restart markers and metadata by
`jpegtran -optimize -copy none` (lossless), so equal sizes there mean the same coefficients.

Usage: python bench/peers/store_bytes.py STORE FILES
STORE: a dataset `stoker convert imagefolder` wrote in folder order (run.py's store-stoker, or
store-stoker-maxN); FILES: an ImageFolder of the same images in the same order: the files it
was converted from, or the reduced copy run.py's other peers read (reduced_copy.py). An image
whose file in FILES is not the one STORE was converted from (its size differs from the
record's original_size) counts as re-encoded by both.
"""
import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
from stored_records import read_manifest, read_records  # noqa: E402  docs/FORMAT.md's reader

import work  # noqa: E402

RESTART_MARKERS = [bytes([0xFF, m]) for m in range(0xD0, 0xD8)]


def restart_markers(jpeg):
    """Restart markers after the first start of scan (the entropy-coded data stuffs other 0xFFs)."""
    start = jpeg.find(b"\xff\xda")
    return sum(jpeg.count(m, start) for m in RESTART_MARKERS) if start >= 0 else 0


def without_restarts(jpeg):
    """Bytes of `jpeg` losslessly rewritten without restart markers and metadata."""
    return len(subprocess.run(["jpegtran", "-optimize", "-copy", "none"], input=jpeg,
                              capture_output=True, check=True).stdout)


def breakdown(store, files_folder):
    """{"format": {part: bytes}, "images": {kind: Counter}}."""
    records = read_records(store)
    files = work.image_files(files_folder)
    if len(files) != len(records):
        raise SystemExit(f"store_bytes: {store} holds {len(records)} records, {files_folder} "
                         f"{len(files)} images")
    images = collections.defaultdict(collections.Counter)
    for i, (record, (path, label)) in enumerate(zip(records, files)):
        if int(record["label"]) != label:
            raise SystemExit(f"store_bytes: record {i} has label {record['label']}, {path} "
                             f"{label}: not the same order (convert in folder order)")
        with open(path, "rb") as f:
            data = f.read()
        stored = record["image"]
        kind = "as the file" if len(data) == record["original_size"] else "re-encoded by both"
        c = images[kind]
        c["images"] += 1
        c["stored"] += len(stored)
        c["file"] += len(data)
        if stored[:2] == b"\xff\xd8" and data[:2] == b"\xff\xd8":
            c["jpegs"] += 1
            c["jpegs stored"] += len(stored)
            c["jpegs file"] += len(data)
            c["restart markers"] += restart_markers(stored)
            c["stored, no restarts"] += without_restarts(stored)
            c["file, no restarts"] += without_restarts(data)
    shards = [os.path.join(store, s["file"]) for s in read_manifest(store)["shards"]]
    record_bytes = sum(len(r["image"]) for r in records)
    fields = sum(4 + 8 * (len(r) - 1) for r in records)  # the image's u32 length, int64 fields
    total = sum(os.path.getsize(s) for s in shards) + os.path.getsize(
        os.path.join(store, "manifest.json"))
    fmt = {"store": total, "images": record_bytes, "record fields and lengths": fields,
           "index (offset, length, xxh3 per record)": 24 * len(records)}
    fmt["header, footer, padding, manifest"] = total - record_bytes - fields - 24 * len(records)
    return {"format": fmt, "images": images}


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[-1])
    store, files_folder = argv
    for path in argv:
        if not os.path.isdir(path):
            raise SystemExit(f"store_bytes: {path}: not a directory")
    if not os.path.isfile(os.path.join(store, "manifest.json")):
        raise SystemExit(f"store_bytes: {store}: not a stoker dataset (no manifest.json)")
    result = breakdown(store, files_folder)
    file_bytes = sum(c["file"] for c in result["images"].values())
    print(f"files: {file_bytes:,} bytes; store: {result['format']['store']:,} "
          f"({result['format']['store'] - file_bytes:+,})")
    for part, n in result["format"].items():
        print(f"  {part}: {n:,}")
    for kind, c in sorted(result["images"].items()):
        print(f"images {kind}: {c['images']:,}, stored {c['stored']:,}, files {c['file']:,} "
              f"({c['stored'] - c['file']:+,})")
        print(f"  of which JPEGs: {c['jpegs']:,}, stored {c['jpegs stored']:,} with "
              f"{c['restart markers']:,} restart markers, files {c['jpegs file']:,}; without "
              f"restarts and metadata: stored {c['stored, no restarts']:,}, files "
              f"{c['file, no restarts']:,}")


if __name__ == "__main__":
    main(sys.argv[1:])
