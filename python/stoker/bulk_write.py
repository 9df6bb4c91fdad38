"""stoker.write_dataset: a dataset or an iterable of samples into a stoker dataset, in bulk,
in parallel (stoker.DatasetWriter, in dataset_writer.py, writes one sample at a time).

A sample is a dict {field name: value}, or a tuple named by ``field_names`` (by default
``("image", "label")``, what torchvision's datasets return). Values become what the writer
stores (stoker.dataset_writer): numpy arrays of uint8, int64 or float32 (other integer arrays become
int64, other float arrays float32, bool arrays uint8), CPU torch tensors likewise, ints and
floats, ``bytes`` (``str`` is stored as UTF-8 bytes), and PIL images: ``uint8`` arrays laid
out ``[C, H, W]`` like the importers' (mode L keeps one channel, RGB three, other modes are
converted to RGB as torchvision's loader does).

Encoded images are kept as they are: a sample whose ``image`` is bytes (a JPEG or PNG) and
whose ``label`` is an integer makes an image dataset, the records `stoker convert imagefolder`
writes (image, label, height, width, original_size, original_checksum), which the loader's
image transforms read. Each image is checked where it is prepared: its header, and with
``check_images`` its whole data, decoded once there, which also gives the pixel statistics that
the manifest keeps (stoker.dataset_writer); without, the manifest has none of the images.
"""

import collections.abc
import os
import sys

from stoker import _stoker
from stoker._parallel_samples import MAX_CHUNK, iterable_samples, map_style_samples, prepare_range
from stoker._progress import ProgressLine
from stoker._sample_values import IMAGE_SCHEMA, Preparer, infer_schema, is_image_schema
from stoker.dataset_writer import DatasetWriter, normalize_schema

__all__ = ["IMAGE_SCHEMA", "image_sample", "write_dataset"]

def image_sample(data, label, *, check=False):
    """The record of an image dataset for the JPEG or PNG `data` and class `label`: a dict for a
    DatasetWriter of schema IMAGE_SCHEMA, from the image's header. The writer decodes the image
    whole when it is appended, which checks it and gives the manifest's statistics; `check`
    decodes it here already (twice in all, then). A bad image raises stoker.Error."""
    data = bytes(data)
    info = _stoker.image_info(data, check=check)
    return {"image": data, "label": int(label), "height": info["height"],
            "width": info["width"], "original_size": len(data),
            "original_checksum": info["checksum"]}


class _Files:
    """A torchvision DatasetFolder without transforms, read as its files' bytes: an image
    dataset of the original JPEGs and PNGs instead of decoded pixels of varying sizes."""

    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        with open(path, "rb") as f:
            return f.read(), label


class _Columns:
    """A dict of equal-length arrays (numpy, h5py datasets, ...), read a chunk of rows at a
    time."""

    def __init__(self, columns):
        self.columns = dict(columns)
        lengths = {name: len(column) for name, column in self.columns.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"the columns have different lengths: {lengths}")
        self.length = next(iter(lengths.values()))

    def __len__(self):
        return self.length

    def rows(self, chunk):
        for start in range(0, self.length, chunk):
            block = {name: column[start:start + chunk] for name, column in self.columns.items()}
            for row in range(min(chunk, self.length - start)):
                yield {name: values[row] for name, values in block.items()}


def _is_columns(source):
    return (isinstance(source, collections.abc.Mapping) and len(source) > 0 and
            all(hasattr(c, "__len__") and hasattr(c, "__getitem__") and
                not isinstance(c, (str, bytes)) for c in source.values()))


def _files_of(source):
    """The (path, label) list of a torchvision DatasetFolder (ImageFolder) whose samples are
    its files as they are, else None."""
    samples = getattr(source, "samples", None)
    if (isinstance(samples, list) and callable(getattr(source, "loader", None)) and
            getattr(source, "transform", 0) is None and
            getattr(source, "target_transform", 0) is None and
            getattr(source, "transforms", None) is None):
        return samples
    return None


def _is_iterable_dataset(source):
    """A torch IterableDataset: it inherits a __getitem__ that only raises."""
    data = sys.modules.get("torch.utils.data")
    return data is not None and isinstance(source, data.IterableDataset)


def _describe(source):
    kind = type(source)
    root = getattr(source, "root", None)
    where = f" at {os.fspath(root)}" if isinstance(root, (str, os.PathLike)) else ""
    return f"{kind.__module__}.{kind.__qualname__}{where} (stoker.write_dataset)"


def _class_names(source):
    classes = getattr(source, "classes", None)
    if isinstance(classes, (list, tuple)) and all(isinstance(c, str) for c in classes):
        return list(classes)
    return []


def write_dataset(out, source, *, schema=None, transform=None, field_names=("image", "label"),
                  workers=None, parallel="processes", class_names=None, source_name=None,
                  shard_mb=256, check_images=True, progress=None):
    """Writes every sample of `source` into a new dataset at `out`; returns its path.

    `source` is a map-style dataset (``len`` and ``__getitem__``, such as a torch Dataset or a
    list), an iterable of samples, or a dict of equal-length columns (numpy arrays, h5py
    datasets) read a chunk of rows at a time. A torchvision ImageFolder (DatasetFolder) without
    transforms is written from its files' bytes, as an image dataset.

    `transform`, if given, is applied to what the source yields (on the workers), e.g. to
    transpose [H, W, C] images or to pick fields. The schema is inferred from the first sample
    unless `schema` is given (stoker.dataset_writer).
    Samples of a map-style source are fetched and prepared by `workers` worker processes
    (forked; `parallel="threads"` for threads; 0: none) and written in order; by default one
    per core, unless the first samples, timed, show that the source takes under a second
    without them or under 50 us a sample (less than sending it from a worker costs).
    `class_names` defaults to the source's ``classes``; `source_name`, recorded in the
    manifest, to the source's type. A progress line is drawn on stderr when it is a terminal
    (`progress` True or False forces it).

    Encoded images (an image dataset) are each decoded whole where they are prepared with
    `check_images` (the default): a bad image fails the write, and the manifest gets the pixel
    statistics ``stoker train`` normalises by, the same as ``stoker convert imagefolder``'s.
    ``check_images=False`` reads only the headers: faster, but no statistics of the images.

    Crash-safe: an exception (one the source raises carries a note naming the sample) or
    Ctrl-C stops the workers and leaves nothing at `out`. Thread-safe: calls from several
    threads write their datasets side by side (each with its own writer and workers).
    """
    if parallel not in ("processes", "threads"):
        raise ValueError(f"parallel must be 'processes' or 'threads', not {parallel!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 0):
        raise ValueError(f"workers must be a whole number, not {workers!r}")
    if class_names is None:
        class_names = _class_names(source)
    if source_name is None:
        source_name = _describe(source)
    files = _files_of(source)
    if files is not None:
        source = _Files(files)
    total = len(source) if hasattr(source, "__len__") else None
    prepare = Preparer(field_names, transform, check_images)
    if _is_columns(source):
        source = _Columns(source)
        total = len(source)
        raw_samples = iter(source.rows(MAX_CHUNK * 16))
        map_style = False
    elif hasattr(source, "__getitem__") and total is not None and not _is_iterable_dataset(source):
        raw_samples = None
        map_style = True
    elif isinstance(source, collections.abc.Iterable):
        raw_samples = iter(source)
        map_style = False
    else:
        raise ValueError(f"a {type(source).__name__} is not a source: write_dataset takes a "
                         "map-style dataset, an iterable of samples or a dict of columns")

    if map_style:
        first = prepare_range(source, prepare, 0, 1)[0] if total > 0 else None
    else:
        first = next(iterable_samples(raw_samples, prepare, 0), None)
    if first is None:
        raise ValueError("the source has no samples")
    first, first_statistics = first
    if schema is None:
        fields, prepare.image_record = infer_schema(first, field_names)
    else:
        fields = normalize_schema(schema)
        prepare.image_record = is_image_schema(fields)
    if prepare.image_record:
        first, first_statistics = prepare.add_image_fields(first, 0)

    line = ProgressLine(progress, f"writing {os.fspath(out)}", " samples")
    # The images' statistics come from the preparation's decode (the check): without it, none.
    with DatasetWriter(out, fields, shard_mb=shard_mb, source=source_name,
                       class_names=class_names, image_statistics=check_images) as writer:
        samples = (map_style_samples(source, prepare, 1, workers, parallel) if map_style
                   else iterable_samples(raw_samples, prepare, 1))
        try:
            writer.append(first, statistics=first_statistics)
            for sample, statistics in samples:
                writer.append(sample, statistics=statistics)
                line.update(writer.records, total)
            writer.finish()
            line.finish(f"wrote {writer.records} samples to {os.fspath(out)}", writer.records)
        finally:
            samples.close()  # stops the workers now, not once the exception is let go of
            line.close()
    return writer.path
