"""The command line's dataset tools from Python: stoker.convert, stoker.push, stoker.inspect,
stoker.verify.

They run the same C++ as ``stoker convert``, ``stoker push``, ``stoker inspect --json`` and
``stoker verify``,
with the GIL released. An ImageFolder import and verify stop on Ctrl-C (KeyboardInterrupt; an
import then leaves nothing behind). Thread-safe: calls from several threads run side by side.
"""

import json
import os
import tempfile

from stoker import _stoker
from stoker._data_access import data_access
from stoker._paths import native_path
from stoker._progress import ProgressLine
from stoker.sources import Mixture, as_source

__all__ = ["convert", "inspect", "push", "verify"]

def _shard_bytes(shard_mb):
    if isinstance(shard_mb, bool) or not isinstance(shard_mb, int) or not 1 <= shard_mb <= 1 << 20:
        raise ValueError(f"shard_mb must be a whole number from 1 to {1 << 20}, not {shard_mb!r}")
    return shard_mb << 20


# The options of each kind of convert(), and their defaults.
_OPTIONS = {
    "idx": {"shard_mb": 256, "class_names": ()},
    "fashion-mnist": {},
    "cifar10": {"shard_mb": 256},
    "imagefolder": {"shard_mb": 256, "keep_original": False, "max_side": 0, "skip_bad": False,
                    "workers": None, "record_order": "folder", "seed": 0, "progress": None},
    "coco": {"annotations": None, "shard_mb": 256, "keep_original": False, "drop_empty": False,
             "v1_targets": False, "workers": None, "progress": None},
    "voc": {"split": "train", "shard_mb": 256, "keep_original": False, "workers": None},
    "masks": {"masks": None, "shard_mb": 256, "keep_original": False, "workers": None},
}


def convert(kind, src=None, out=None, **options):
    """Converts source files into stoker datasets, as ``stoker convert KIND`` does; returns a
    dict saying what was written (always "datasets": the paths).

    - ``"idx"``: `src` is a pair (images, labels) of MNIST-family IDX files (gzip or raw); one
      dataset at `out` (image uint8 [1, rows, cols], label int64). Options: shard_mb,
      class_names.
    - ``"fashion-mnist"``: Debian's dataset-fashion-mnist files (`src` defaults to their
      directory), and ``"cifar10"`` CIFAR-10's binary version in `src` (option shard_mb), into
      `out`/train and `out`/test (fashion-mnist's `out` defaults to stoker's data root).
    - ``"imagefolder"``: a torchvision ImageFolder of JPEGs and PNGs (or its train/ and val/
      splits) into an image dataset. Options, as the command's: keep_original, max_side,
      skip_bad, workers (threads; None: one per core; 0: one at a time), shard_mb,
      record_order ("folder": ImageFolder's; "shuffled": a permutation drawn from seed, so
      that every shard mixes the classes) and seed, and progress (a line on stderr; default:
      when it is a terminal). Bad files raise stoker.Error, whose ``bad_files`` lists
      (path, reason) pairs; with skip_bad they are in the result's ``bad_files`` and
      ``skipped_list``.
    - ``"coco"`` (`src` the images, option annotations: the instances JSON), ``"voc"`` (`src`
      VOCdevkit/VOC2012, option split) and ``"masks"`` (`src` images, option masks: PNG class
      masks paired by stem) write FORMAT.md's "What the importers write". Options:
      keep_original, workers, shard_mb; "coco"'s drop_empty (the reference's training set)
      and v1_targets (its v1 targets: ``convert coco --v1-targets``).

    `out` may be an s3://bucket/prefix: the conversion goes into a temporary directory, which is
    pushed there as push() does and removed (on failure too); "datasets" are then the URLs and
    "pushed" push()'s result.

    shard_mb is the shard size in MiB (default 256). The outputs must not exist
    (FileExistsError); nothing is left behind on failure. Paths may be str, bytes or
    os.PathLike (names need not be UTF-8: paths given back are os.fsdecode's str).
    """
    if kind not in _OPTIONS:
        raise ValueError(f"unknown kind {kind!r}: one of {', '.join(_OPTIONS)}")
    unknown = sorted(set(options) - set(_OPTIONS[kind]))
    if unknown:
        takes = ", ".join(_OPTIONS[kind]) or "none"
        raise TypeError(f"convert {kind!r} has no option {', '.join(unknown)} (its options: "
                        f"{takes})")
    options = {**_OPTIONS[kind], **options}
    if isinstance(out, str) and out.lower().startswith(("s3://", "http://", "https://")):
        _stoker.check_push_target(out)
        with tempfile.TemporaryDirectory(prefix="stoker-convert-") as tmp:
            summary = convert(kind, src, os.path.join(tmp, "dataset"), **options)
            pushed = push(os.path.join(tmp, "dataset"), out)
        return dict(summary, datasets=pushed["datasets"], pushed=pushed)
    if kind == "fashion-mnist":
        src = src if src is not None else _stoker.fashion_mnist_debian_dir
        out = os.fsdecode(out) if out is not None else _stoker.default_fashion_mnist_dir()
        _stoker.convert_fashion_mnist(native_path(src), native_path(out))
        return {"datasets": [os.path.join(out, "train"), os.path.join(out, "test")]}
    if src is None or out is None:
        raise ValueError(f"convert {kind!r} needs src and out")
    out = os.fsdecode(out)
    shard_bytes = _shard_bytes(options.pop("shard_mb"))
    if kind == "idx":
        if not isinstance(src, (tuple, list)) or len(src) != 2:
            raise ValueError("convert 'idx' takes src=(images, labels), the two IDX files")
        records = _stoker.import_idx(native_path(src[0]), native_path(src[1]), native_path(out),
                                     shard_bytes=shard_bytes,
                                     class_names=[str(name) for name in options["class_names"]])
        return {"datasets": [out], "records": records}
    if kind == "cifar10":
        train, test = _stoker.import_cifar10(native_path(src), native_path(out),
                                             shard_bytes=shard_bytes)
        return {"datasets": [os.path.join(out, "train"), os.path.join(out, "test")],
                "train": train, "test": test}
    if kind == "coco":
        return _import_coco(src, out, shard_bytes, **options)
    if kind == "masks":
        return _import_mask_folder(src, out, shard_bytes, **options)
    if kind == "voc":
        _check_workers(options["workers"])
        summary = _stoker.import_voc(native_path(src), str(options["split"]), native_path(out),
                                     keep_original=bool(options["keep_original"]),
                                     workers=options["workers"], shard_bytes=shard_bytes)
        return dict(summary, datasets=list(summary["datasets"]))
    return _import_image_folder(src, out, shard_bytes, **options)


def _check_workers(workers):
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise ValueError(f"workers must be a whole number, not {workers!r}")


def _import_mask_folder(src, out, shard_bytes, *, masks, keep_original, workers):
    if masks is None:
        raise ValueError("convert 'masks' needs masks=, the folder of PNG masks")
    _check_workers(workers)
    summary = _stoker.import_mask_folder(native_path(src), native_path(masks), native_path(out),
                                         keep_original=bool(keep_original), workers=workers,
                                         shard_bytes=shard_bytes)
    summary["datasets"] = list(summary["datasets"])
    return summary


def _import_coco(src, out, shard_bytes, *, annotations, keep_original, drop_empty, v1_targets,
                 workers, progress):
    if annotations is None:
        raise ValueError("convert 'coco' needs annotations=, the instances JSON file")
    _check_workers(workers)
    line = ProgressLine(progress, f"importing {os.fsdecode(src)}")
    try:
        summary = _stoker.import_coco(native_path(src), native_path(annotations),
                                      native_path(out), keep_original=bool(keep_original),
                                      drop_empty=bool(drop_empty),
                                      v1_targets=bool(v1_targets), workers=workers,
                                      shard_bytes=shard_bytes, progress=line)
    finally:
        line.close()
    summary["datasets"] = list(summary["datasets"])
    return summary


def _import_image_folder(src, out, shard_bytes, *, keep_original, max_side, skip_bad, workers,
                         record_order, seed, progress):
    for name, value in (("max_side", max_side), ("workers", workers), ("seed", seed)):
        if value is None and name == "workers":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be a whole number, not {value!r}")
    if record_order not in ("folder", "shuffled"):
        raise ValueError(f"record_order must be 'folder' or 'shuffled', not {record_order!r}")
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be from 0 to 2**64 - 1, not {seed}")
    bad = []
    line = ProgressLine(progress, f"importing {os.fsdecode(src)}")
    try:
        summary = _stoker.import_image_folder(
            native_path(src), native_path(out), keep_original=bool(keep_original), max_side=max_side,
            skip_bad=bool(skip_bad), workers=workers, shard_bytes=shard_bytes,
            shuffled=record_order == "shuffled", seed=seed, progress=line,
            on_bad=lambda path, reason: bad.append((path, reason)))
    except _stoker.Error as e:
        e.bad_files = bad
        raise
    finally:
        line.close()
    summary["bad_files"] = bad
    return summary


def push(path, url, *, prune=False):
    """Uploads the dataset at `path` (or each dataset of a folder: train/, test/) to an
    s3://bucket/prefix, as ``stoker push`` does: verified first, shards under content-qualified
    names (``shard-00000.<index_xxh3>.stk``; one already there is not sent again), the manifest
    last, so readers see the old version or the new one whole. With prune, then deletes the
    shards beside each manifest that it does not name. Keys and endpoint from the usual AWS
    variables and files. Returns {"datasets": [URLs], "records", "shards", "uploaded",
    "uploaded_bytes", "present", "pruned"}; raises stoker.Error with one line naming the file
    or URL."""
    return _stoker.push_dataset(native_path(path), str(url), prune=bool(prune))


def _with_int_labels(summary):
    if "label_histogram" in summary:
        summary["label_histogram"] = {int(k): v for k, v in summary["label_histogram"].items()}
    return summary


def _one_source(path) -> tuple:
    """(path as str, the native keywords of its source) for a path or a source object
    (stoker.ImageFolder, stoker.Parquet, ...); a Mixture is refused: inspect each source."""
    source = as_source(path)
    if isinstance(source, Mixture):
        raise ValueError("inspect and verify take one source, not a stoker.Mixture: give each of "
                         "its sources")
    return source._path(), {"source": source.source, "source_params": source._params()}


def inspect(path=None, *, cache_dir=None, cache_gb=None, cache_policy="next-use"):
    """What ``stoker inspect --json`` shows of the dataset at `path` (default: the converted
    Fashion-MNIST): a dict with dir, format_version, records, shards, bytes, schema (its JSON
    form, which DatasetWriter takes), label_min, label_max and label_histogram {label: count}
    for an int64 field "label", class_names and max_lengths (the most rows of each
    variable-length field) when the manifest has them, and source (the description of a
    source read in place: what it reads and leaves out) where it says more than dir. For a
    folder of datasets (train/, test/): {"dir": path, "datasets": [one dict per dataset]}.
    `path` may be an s3:// or http(s):// URL (as stoker.Loader's, with its cache keywords):
    sizes come from the manifest, no shard is downloaded, and there are no label keys; or a
    source object (stoker.ImageFolder, stoker.Parquet with its columns, stoker.Tokens, ...)."""
    path, source = _one_source(path if path is not None else _stoker.default_fashion_mnist_dir())
    text, dirs = _stoker.inspect_json(native_path(path), **source,
                                      **data_access(cache_dir, cache_gb, cache_policy))
    summary = json.loads(text)
    if "datasets" in summary and "records" not in summary:
        summary["dir"] = _stoker.shown_location(native_path(path))
        summary["datasets"] = [_with_int_labels(dict(s, dir=d))
                               for s, d in zip(summary["datasets"], dirs)]
        return summary
    return _with_int_labels(dict(summary, dir=dirs[0]))


def verify(path, *, progress=None, cache_dir=None, cache_gb=None, cache_policy="next-use",
           decode="keyframes"):
    """Checks the dataset at `path` (or each dataset of a folder) as ``stoker verify`` does:
    its format, then every record's checksum, layout and label; a dataset of videos has each
    video indexed and, as `decode` says, its keyframes decoded ("keyframes"), every frame
    ("all") or none ("none"). Returns {"datasets": [{"path", "records", "shards"}]}; raises
    stoker.Error with the command's one-line message if a record is bad, its ``errors`` listing
    the bad records' messages (the first 1000 per dataset). `path` may be a source object, as
    inspect's."""
    path, source = _one_source(path)
    line = ProgressLine(progress, f"verifying {_stoker.shown_location(native_path(path))}")
    try:
        reports = _stoker.verify_datasets(native_path(path), progress=line, decode=decode,
                                          **source,
                                          **data_access(cache_dir, cache_gb, cache_policy))
    finally:
        line.close()
    failed = [r for r in reports if r["bad"] > 0]
    if failed:
        error = _stoker.Error("; ".join(f"{r['path']}: {r['bad']} of {r['records']} records"
                                        for r in failed) + " failed verification")
        error.errors = [message for r in failed for message in r["errors"]]
        raise error
    return {"datasets": [{key: r[key] for key in ("path", "records", "shards")}
                         for r in reports]}
