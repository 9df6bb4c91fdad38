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
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

from stoker import _stoker
from stoker.dataset_writer import DatasetWriter, normalize_schema

__all__ = ["IMAGE_SCHEMA", "image_sample", "write_dataset"]

# The fields of an image dataset's records (store/image_record.h), in the writer's form.
IMAGE_SCHEMA = [(name, dtype, tuple(shape)) for name, dtype, shape in
                _stoker.image_record_fields()]
_IMAGE_INFO_FIELDS = ("height", "width", "original_size", "original_checksum")

# In-flight chunks per worker, and the largest chunk of samples one task prepares.
_CHUNKS_PER_WORKER = 2
_MAX_CHUNK = 64
# workers=None: samples timed before deciding; the time below which a source is written
# without workers (starting worker processes takes about 0.1 s); and the time per sample below
# which workers are not worth it (sending a sample from a worker process to the writer costs
# CPU time too: Fashion-MNIST's 15 us per sample became 27 us in all with 2 processes).
_PROBE_SAMPLES = 32
_SEQUENTIAL_SECONDS = 1.0
_SEQUENTIAL_SAMPLE_SECONDS = 50e-6


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


def _pil_array(image):
    """A PIL image as a uint8 [C, H, W] array."""
    if image.mode not in ("L", "RGB"):
        if image.mode in ("I", "I;16", "F"):
            raise ValueError(f"a PIL image of mode {image.mode}: convert it to L or RGB in the "
                             "dataset's transform")
        image = image.convert("L" if image.mode == "1" else "RGB")
    width, height = image.size
    # tobytes() then frombuffer() takes 2/3 of numpy.asarray(image)'s time (read-only array).
    pixels = np.frombuffer(image.tobytes(), np.uint8)
    if image.mode == "L":
        return pixels.reshape(1, height, width)
    return np.ascontiguousarray(pixels.reshape(height, width, 3).transpose(2, 0, 1))


def _canonical(array):
    """`array` with a dtype stoker stores: uint8, int64 and float32 as they are; bool as uint8,
    other integers as int64, other floats as float32."""
    if array.dtype in (np.uint8, np.int64, np.float32):
        return array
    if array.dtype == np.bool_:
        return array.astype(np.uint8)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    raise ValueError(f"a {array.dtype} array cannot be stored (uint8, int64, float32 or bytes)")


def _value(value):
    """One value as the writer takes it."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    pil = sys.modules.get("PIL.Image")
    if pil is not None and isinstance(value, pil.Image):
        return _pil_array(value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if value is None:
        raise ValueError("None cannot be stored")
    array = np.asarray(value)
    if array.ndim == 0:
        return _value(array.item())
    return _canonical(array)


class _Preparer:
    """Turns what a source yields into the writer's samples, each with the statistics of its
    encoded image (or None). Shared by the workers."""

    def __init__(self, field_names, transform, check_images):
        self.field_names = tuple(field_names)
        self.transform = transform
        self.image_record = False  # set once the schema is known
        self.check_images = check_images

    def __call__(self, raw, index):
        if self.transform is not None:
            raw = self.transform(raw)
        if isinstance(raw, collections.abc.Mapping):
            items = raw.items()
        elif isinstance(raw, (tuple, list)):
            if len(raw) != len(self.field_names):
                raise ValueError(f"sample {index} is a {type(raw).__name__} of {len(raw)} "
                                 f"values; field_names names {len(self.field_names)}: "
                                 f"{', '.join(self.field_names)}")
            items = zip(self.field_names, raw)
        else:
            items = [(self.field_names[0], raw)]
        sample = {}
        for name, value in items:
            try:
                sample[name] = _value(value)
            except ValueError as e:
                raise ValueError(f"sample {index}, field '{name}': {e}") from None
        return self.add_image_fields(sample, index) if self.image_record else (sample, None)

    def add_image_fields(self, sample, index):
        """`sample` with the image record's fields of its encoded image, unless it has them,
        and with check_images the image's statistics (else None: the writer keeps none)."""
        image = sample.get("image")
        has_fields = "height" in sample
        if not isinstance(image, (bytes, bytearray, memoryview)) or (
                has_fields and not self.check_images):
            return sample, None
        try:
            info = _stoker.image_info(image, check=self.check_images)
        except _stoker.Error as e:
            raise _stoker.Error(f"sample {index}, field 'image': {e}") from None
        if not has_fields:
            sample.update(height=info["height"], width=info["width"], original_size=len(image),
                          original_checksum=info["checksum"])
        return sample, info.get("statistics")


def _infer_schema(sample, field_names):
    """The schema of `sample` (prepared), and whether it makes an image dataset."""
    image, label = sample.get("image"), sample.get("label")
    if isinstance(image, (bytes, bytearray, memoryview)) and isinstance(label, int):
        names = {name for name, _, _ in IMAGE_SCHEMA}
        extra = [(name, value) for name, value in sample.items() if name not in names]
        return IMAGE_SCHEMA + [_infer_field(name, value) for name, value in extra], True
    return [_infer_field(name, value) for name, value in sample.items()], False


def _infer_field(name, value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return name, "bytes", ()
    if isinstance(value, int):
        return name, "int64", ()
    if isinstance(value, float):
        return name, "float32", ()
    return name, value.dtype.name, value.shape


def _is_image_schema(fields):
    return all(field in fields for field in IMAGE_SCHEMA)


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


class _Progress:
    """The progress line on stderr: redrawn at most 10 times a second; at the end a last line
    with the count and rate, or nothing after a failure."""

    def __init__(self, enabled, total, path):
        self.enabled = enabled if enabled is not None else sys.stderr.isatty()
        self.total, self.path = total, path
        self.start = self.last = time.monotonic()
        self.shown = False

    def _draw(self, text, end=""):
        sys.stderr.write(f"\r\033[K{text}{end}")
        sys.stderr.flush()

    def update(self, done):
        now = time.monotonic()
        if not self.enabled or now - self.last < 0.1:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        if self.total is not None:
            eta = (self.total - done) / rate if rate > 0 else 0
            text = f"{done}/{self.total} samples, {rate:,.0f}/s, ETA {eta:.0f} s"
        else:
            text = f"{done} samples, {rate:,.0f}/s"
        self._draw(f"writing {self.path}: {text}")
        self.shown = True

    def finish(self, done):
        if self.enabled:
            seconds = time.monotonic() - self.start
            self._draw(f"wrote {done} samples to {self.path} in {seconds:.1f} s "
                       f"({done / max(seconds, 1e-9):,.0f}/s)", end="\n")
            self.shown = False

    def close(self):
        if self.shown:
            self._draw("")
            self.shown = False


def _prepare_range(source, prepare, start, end):
    """Samples start .. end - 1 of a map-style source, prepared (each a (sample, statistics)
    pair, as _Preparer gives them). An exception names the sample
    (a note, so that its type stays what the source raised)."""
    samples = []
    for index in range(start, end):
        try:
            samples.append(prepare(source[index], index))
        except Exception as e:
            _note(e, f"stoker.write_dataset: while preparing sample {index} of the source")
            raise
    return samples


def _note(exception, text):
    if hasattr(exception, "add_note") and text not in getattr(exception, "__notes__", ()):
        exception.add_note(text)


# The source and preparer of a worker process (set by its initializer; fork shares them).
_worker_job = None


def _init_worker_process(source, prepare):
    global _worker_job
    _worker_job = (source, prepare)
    # Ctrl-C is the parent's to handle: it stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _prepare_range_in_worker(start, end):
    return _prepare_range(*_worker_job, start, end)


def _map_style_samples(source, prepare, first, workers, parallel):
    """The prepared samples of a map-style source from index `first`, in order; chunks of them
    are prepared by `workers` processes or threads a few chunks ahead. `workers` None: the
    first _PROBE_SAMPLES are prepared here and timed (with the writing between them); then one
    worker per core if a sample takes _SEQUENTIAL_SAMPLE_SECONDS or more and the rest would
    take over _SEQUENTIAL_SECONDS like that, else none."""
    n = len(source)
    if workers is None:
        probe_end = min(n, first + _PROBE_SAMPLES)
        start = time.perf_counter()
        for index in range(first, probe_end):
            yield from _prepare_range(source, prepare, index, index + 1)
        per_sample = (time.perf_counter() - start) / max(1, probe_end - first)
        first = probe_end
        cores = len(os.sched_getaffinity(0))
        worth_it = (per_sample >= _SEQUENTIAL_SAMPLE_SECONDS and
                    per_sample * (n - first) > _SEQUENTIAL_SECONDS)
        workers = cores if cores > 1 and worth_it else 0
    if workers == 0:
        for index in range(first, n):
            yield from _prepare_range(source, prepare, index, index + 1)
        return
    chunk = max(1, min(_MAX_CHUNK, (n - first) // (workers * 16)))
    if parallel == "processes":
        executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                       initializer=_init_worker_process,
                                       initargs=(source, prepare))

        def submit(start, end):
            return executor.submit(_prepare_range_in_worker, start, end)
    else:
        executor = ThreadPoolExecutor(workers, thread_name_prefix="stoker-write")

        def submit(start, end):
            return executor.submit(_prepare_range, source, prepare, start, end)
    pending = collections.deque()
    starts = iter(range(first, n, chunk))
    try:
        for start in starts:
            pending.append(submit(start, min(start + chunk, n)))
            if len(pending) >= _CHUNKS_PER_WORKER * workers:
                break
        while pending:
            samples = pending.popleft().result()
            start = next(starts, None)
            if start is not None:
                pending.append(submit(start, min(start + chunk, n)))
            yield from samples
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _iterable_samples(iterator, prepare, first):
    for index, raw in enumerate(iterator, first):
        try:
            yield prepare(raw, index)
        except Exception as e:
            _note(e, f"stoker.write_dataset: while preparing sample {index} of the source")
            raise


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
    prepare = _Preparer(field_names, transform, check_images)
    if _is_columns(source):
        source = _Columns(source)
        total = len(source)
        raw_samples = iter(source.rows(_MAX_CHUNK * 16))
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
        first = _prepare_range(source, prepare, 0, 1)[0] if total > 0 else None
    else:
        first = next(_iterable_samples(raw_samples, prepare, 0), None)
    if first is None:
        raise ValueError("the source has no samples")
    first, first_statistics = first
    if schema is None:
        fields, prepare.image_record = _infer_schema(first, field_names)
    else:
        fields = normalize_schema(schema)
        prepare.image_record = _is_image_schema(fields)
    if prepare.image_record:
        first, first_statistics = prepare.add_image_fields(first, 0)

    line = _Progress(progress, total, os.fspath(out))
    # The images' statistics come from the preparation's decode (the check): without it, none.
    with DatasetWriter(out, fields, shard_mb=shard_mb, source=source_name,
                       class_names=class_names, image_statistics=check_images) as writer:
        samples = (_map_style_samples(source, prepare, 1, workers, parallel) if map_style
                   else _iterable_samples(raw_samples, prepare, 1))
        try:
            writer.append(first, statistics=first_statistics)
            for sample, statistics in samples:
                writer.append(sample, statistics=statistics)
                line.update(writer.records)
            writer.finish()
            line.finish(writer.records)
        finally:
            samples.close()  # stops the workers now, not once the exception is let go of
            line.close()
    return writer.path
