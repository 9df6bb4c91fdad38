"""stoker.DatasetWriter: write a dataset one sample at a time from Python (write_dataset, in
bulk_write.py, writes a whole source in parallel through it).

A schema names each field of a record and its type::

    {"image": ("uint8", (1, 28, 28)), "label": "int64", "jpeg": "bytes"}

A field is a fixed-size array, ``(dtype, shape)`` with dtype ``"uint8"``, ``"int64"`` or
``"float32"`` (numpy dtypes such as ``np.uint8`` work too) and a shape (``()`` or a bare dtype:
a scalar), a variable-length array whose leading dimension is a name, ``("float32", ("N", 4))``
(boxes: any number of rows per sample, as numpy arrays or CPU tensors of shape ``[n, 4]``;
fields naming the same dimension, such as ``"labels": ("int64", ("N",))``, have as many rows in
every sample), or ``"bytes"``: a value of any length, such as an encoded JPEG. A list of
``(name, dtype, shape)`` tuples (``DatasetWriter.schema``) and the fields of an existing
dataset (``stoker.inspect(path)["schema"]``) are schemas too.

Images are stored as stoker's importers store them: ``uint8`` arrays laid out ``[C, H, W]``
(channels first, as torchvision's ``ToTensor`` gives them) in a field named ``"image"``, and
the class index as an ``int64`` scalar named ``"label"``; the loader and ``stoker train`` look
for those names.

The manifest keeps the per-channel mean and std of image fields, which ``stoker train``
normalises by: of ``uint8`` ``[C, H, W]`` and ``[H, W]`` fields always, and of the encoded images
of an image dataset (``stoker.IMAGE_SCHEMA``) decoded to RGB, as ``stoker convert imagefolder``
computes them, unless ``image_statistics=False``.
"""


import numpy as np

from stoker import _stoker
from stoker._paths import native_path

__all__ = ["DatasetWriter", "normalize_schema"]

_DTYPES = _stoker.DTYPES  # the format's dtype names, in order
_DEFAULT_SHARD_BYTES = 256 << 20


def _dtype_name(dtype, name):
    if isinstance(dtype, str) and dtype in _DTYPES:
        return dtype
    if dtype is bytes:
        return "bytes"
    try:
        numpy_name = np.dtype(dtype).name
    except TypeError:
        numpy_name = None
    if numpy_name in _DTYPES:
        return numpy_name
    raise ValueError(f"schema field {name!r}: dtype {dtype!r} is not one of "
                     f"{', '.join(_DTYPES)}")


def _field(name, spec):
    """(name, dtype, shape) from one entry of a schema."""
    if not isinstance(name, str):
        raise ValueError(f"schema field names are str, not {type(name).__name__}: {name!r}")
    if isinstance(spec, dict):  # the JSON form: {"name": ..., "dtype": ..., "shape": [...]}
        spec = (spec["dtype"], spec.get("shape", ()))
    if isinstance(spec, (tuple, list)):
        if len(spec) != 2:
            raise ValueError(f"schema field {name!r}: expected (dtype, shape), got {spec!r}")
        dtype, shape = spec
    else:
        dtype, shape = spec, ()
    dtype = _dtype_name(dtype, name)
    if isinstance(shape, int):
        shape = (shape,)
    try:
        # A leading str names the dimension of a variable-length field.
        shape = tuple(d if i == 0 and isinstance(d, str) else int(d)
                      for i, d in enumerate(shape))
    except (TypeError, ValueError):
        raise ValueError(f"schema field {name!r}: shape {shape!r} is not a tuple of "
                         "integers (the first may be a dimension name)") from None
    if dtype == "bytes" and shape:
        raise ValueError(f"schema field {name!r}: bytes fields have no shape")
    return name, dtype, shape


def normalize_schema(schema):
    """The schema as a list of (name, dtype, shape) tuples, dtype one of uint8, int64, float32,
    bytes. Takes a dict {name: spec}, a list of fields in the JSON form
    ({"name", "dtype", "shape"}) or of (name, dtype) and (name, dtype, shape) tuples; raises
    ValueError on anything else."""
    if isinstance(schema, dict) and "fields" in schema and isinstance(schema["fields"], list):
        schema = schema["fields"]
    if isinstance(schema, dict):
        return [_field(name, spec) for name, spec in schema.items()]
    if isinstance(schema, (list, tuple)) and all(isinstance(f, dict) and "name" in f
                                                 for f in schema):
        return [_field(f["name"], f) for f in schema]
    if isinstance(schema, (list, tuple)) and all(isinstance(f, (list, tuple)) and 2 <= len(f) <= 3
                                                 for f in schema):
        return [_field(f[0], tuple(f[1:]) if len(f) == 3 else f[1]) for f in schema]
    raise ValueError("a schema is a dict {name: dtype or (dtype, shape)} or a list of fields, "
                     f"not {type(schema).__name__}")


class DatasetWriter:
    """Writes a dataset directory crash-safely, one sample at a time.

    ``out`` must not exist. Everything is written into a staging directory beside it and moved
    into place by ``finish()``; a writer aborted, garbage-collected or left by an exception
    before ``finish()`` leaves nothing behind (nor does a killed process: the next writer of
    ``out`` removes what it left). As a context manager it finishes on a normal exit and aborts
    on an exception.

    ``append(sample)`` takes a dict of field values: numpy arrays (or anything numpy.asarray
    takes, such as a CPU torch tensor) of exactly the field's dtype and shape, ints and floats
    for scalar fields, ``bytes``/``bytearray``/``memoryview`` for bytes fields. A wrong value
    raises ValueError naming the sample and the field, and the sample is not written. C-contiguous
    arrays are read in place; the GIL is released while a large record (256 KiB or more) is
    encoded and written.

    An image dataset's writer (a schema with ``stoker.IMAGE_SCHEMA``'s fields) decodes each
    appended image whole for the manifest's pixel statistics, which checks it too: a bad image
    raises stoker.Error naming the sample, and the sample is not written. ``append``'s
    `statistics` gives them instead (``write_dataset`` passes those its workers computed, so
    that no image is decoded twice). ``image_statistics=False``: images are not decoded and the
    manifest has no statistics of them (``stoker train`` then warns and normalises by
    ImageNet's mean and std unless given ``--mean``/``--std``).

    Not thread-safe: use one writer from one thread at a time (a concurrent call raises
    RuntimeError).
    """

    def __init__(self, out, schema, *, shard_mb=256, source="", class_names=(),
                 image_statistics=True):
        fields = normalize_schema(schema)
        if not isinstance(shard_mb, (int, float)) or not shard_mb > 0:
            raise ValueError(f"shard_mb must be a positive number, not {shard_mb!r}")
        self._native = _stoker.DatasetWriter(
            native_path(out), fields, shard_bytes=max(1, int(shard_mb * (1 << 20))),
            source=str(source), class_names=[str(name) for name in class_names],
            image_statistics=bool(image_statistics))

    def append(self, sample, *, statistics=None):
        """Writes `sample`, a dict {field name: value}, as the next record. `statistics`: the
        statistics of its image, (pixels, sums, squares): the image's pixel count and the sums of
        its RGB values and of their squares, a tuple of three ints each (None: the writer of an
        image dataset decodes the image for them)."""
        self._native.append(sample, statistics=statistics)

    def finish(self):
        """Writes the manifest and moves the dataset into place; returns its path."""
        self._native.finish()
        return self._native.out

    def abort(self):
        """Removes what was written. Does nothing after finish()."""
        self._native.abort()

    @property
    def path(self):
        """The dataset directory being written."""
        return self._native.out

    @property
    def records(self):
        """Samples appended so far."""
        return self._native.records

    @property
    def finished(self):
        """True once finish() has put the dataset in place."""
        return self._native.finished

    @property
    def schema(self):
        """The fields as (name, dtype, shape) tuples (a variable-length field's shape starts
        with its dimension's name)."""
        return [(name, dtype, tuple(shape)) for name, dtype, shape in self._native.fields]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and self._native.open:
            self.finish()
        else:
            self.abort()
        return False

    def __repr__(self):
        state = "finished" if self.finished else "open" if self._native.open else "aborted"
        return f"<stoker.DatasetWriter {self.path!r}: {self.records} records, {state}>"
