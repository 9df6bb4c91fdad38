"""A Hugging Face ``datasets.Dataset`` of images read natively: one whose table is its Arrow files
on disk as they are (``load_dataset``'s cache files, ``load_from_disk``'s ``data-*.arrow``;
their schema's metadata replaced or their features cast to the same Arrow types, nothing else),
whose columns are an ``Image()`` or ``Image(mode="RGB")`` column and an integer label
(``ClassLabel`` or ``Value("int64")``, ...), in no format (PIL images and ints),
``with_format("torch")`` or ``with_format("numpy")``, with no transform: read as
``stoker.Arrow(files)``, each sample given back in the dataset's own form (a dict of its
columns, the image as its format gives it), in its order, a ``select``'s indices mapping read as
explicit epochs. Images are decoded at their own size, the decode's buffers sized for the
largest (read from every image's header once per dataset, kept in the arrays cache; a dataset
with an image over 4,096 px a side is left to its own ``__getitem__``). An image its PIL decode
would give otherwise than stoker's RGB decode (an EXIF orientation; with ``Image()``, a mode
other than RGB) is a bad record naming its file and row (stoker.Arrow's pil_decode). A relative
image path is read from the working directory, as ``datasets`` opens it. Any other dataset (a
``set_transform``, other columns, a table in memory or not its files as they are) is left to its
own ``__getitem__`` (None)."""

import hashlib
import os
import sys
import tempfile
from typing import Callable, Optional

import numpy as np

from stoker import _stoker
from stoker._native_dataset import NativeDataset
from stoker.sources import Arrow
from stoker.transforms import DecodeImage

# The formats read natively, and the label's integer types.
_FORMATS = (None, "python", "torch", "numpy")
_INTEGERS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
# The replays of a memory-mapped table that leave its rows as its file holds them, once its
# schema's types are the file's.
_SCHEMA_ONLY = {"cast", "replace_schema_metadata"}
# The largest image side decoded natively (DecodeImage's max_size; its buffers hold images of
# that size): a dataset with larger images is left to its own __getitem__.
_MAX_SIDE = 4096


def _files(dataset) -> Optional[list]:
    """The Arrow files whose rows, in order, are `dataset`'s table, or None."""
    from datasets.table import ConcatenationTable, MemoryMappedTable
    import pyarrow as pa

    table = dataset._data
    if isinstance(table, MemoryMappedTable):
        blocks = [table]
    elif isinstance(table, ConcatenationTable) and all(len(row) == 1 for row in table.blocks):
        blocks = [row[0] for row in table.blocks]
    else:
        return None
    for block in blocks:
        if not isinstance(block, MemoryMappedTable) or \
                any(replay[0] not in _SCHEMA_ONLY for replay in block.replays):
            return None
        try:
            with pa.memory_map(block.path) as source:
                schema = pa.ipc.open_stream(source).schema
        except (OSError, pa.ArrowInvalid):
            return None
        if not schema.remove_metadata().equals(block.schema.remove_metadata()):
            return None
    return [block.path for block in blocks]


def _columns(dataset) -> Optional[tuple]:
    """(image column, label column, image mode) where `dataset` gives exactly those two, else
    None."""
    import datasets

    features = dataset.features
    shown = dataset._format_columns
    names = [name for name in dataset.column_names if shown is None or name in shown or
             dataset._output_all_columns]
    if len(names) != 2 or len(features) != 2:
        return None
    image = [n for n in names if isinstance(features[n], datasets.Image)]
    label = [n for n in names if isinstance(features[n], datasets.ClassLabel) or
             (isinstance(features[n], datasets.Value) and features[n].dtype in _INTEGERS)]
    if len(image) != 1 or len(label) != 1:
        return None
    feature = features[image[0]]
    if not feature.decode or feature.mode not in (None, "RGB"):
        return None
    return image[0], label[0], feature.mode


def _largest_side(files: list, image: str, cache_root: str) -> int:
    """The largest height or width of column `image`'s images in `files` (each image's header,
    or where its bytes are null the file at its path, opened as datasets opens it): the
    decode's capacity. Kept in `cache_root` under a digest of the files' paths, sizes and
    times, the column and the working directory, so that it is read once per dataset (an image
    file changed since and larger is named when the loader reads it). An image that cannot be
    read counts for none (its row is named when the loader reads it)."""
    stamps = [(path, os.stat(path).st_size, os.stat(path).st_mtime_ns) for path in files]
    key = hashlib.sha256(repr((stamps, image, os.getcwd())).encode()).hexdigest()[:24]
    kept = os.path.join(cache_root, f"hf-largest-side-{key}")
    try:
        with open(kept) as f:
            return int(f.read())
    except (OSError, ValueError):
        pass
    largest = _read_largest_side(files, image)
    os.makedirs(cache_root, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=cache_root, delete=False) as f:
        f.write(str(largest))
    os.replace(f.name, kept)
    return largest


def _read_largest_side(files: list, image: str) -> int:
    """_largest_side's, read from every image."""
    import PIL.Image
    import pyarrow as pa

    largest = 1
    for path in files:
        with pa.memory_map(path) as source:
            column = pa.ipc.open_stream(source).read_all().column(image)
        for chunk in column.chunks:
            structs = pa.types.is_struct(chunk.type)
            images = chunk.field("bytes") if structs else chunk
            paths = chunk.field("path") if structs and chunk.type.get_field_index("path") >= 0 \
                else None
            for i in range(len(chunk)):
                try:
                    if images[i].is_valid:
                        info = _stoker.image_info(images[i].as_buffer(), check=False)
                        size = (info["width"], info["height"])
                    elif paths is not None and paths[i].is_valid:
                        with PIL.Image.open(paths[i].as_py()) as opened:
                            size = opened.size
                    else:
                        continue
                except (OSError, ValueError, _stoker.Error):
                    continue
                largest = max(largest, *size)
    return largest


def _form(kind, names: list, image: str) -> Callable:
    """A native sample (image uint8 [3, H, W], label) as the dataset's format gives it: a dict
    of its columns in its order."""
    def as_format(value, is_image):
        if kind == "torch":
            return value
        if kind == "numpy":
            return np.ascontiguousarray(value.permute(1, 2, 0).numpy()) if is_image else \
                np.int64(value)
        if is_image:
            import PIL.Image
            return PIL.Image.fromarray(np.ascontiguousarray(value.permute(1, 2, 0).numpy()))
        return int(value)

    def form(sample):
        values = dict(zip(("image", "label"), sample))
        return {name: as_format(values["image" if name == image else "label"], name == image)
                for name in names}

    return form


def hugging_face_dataset(dataset, cache_root: str) -> Optional[NativeDataset]:
    """`dataset` as stoker.Arrow over its files, its samples in its own form; for another
    datasets.Dataset, a NativeDataset of source None saying why (module docstring); None for
    anything else. `cache_root`: where its largest image side is kept."""
    datasets = sys.modules.get("datasets")
    if datasets is None or type(dataset) is not datasets.Dataset:
        return None

    def refused(why):
        return NativeDataset(None, notes={"dataset": [
            f"a Hugging Face datasets.Dataset is read natively only where stoker gives exactly "
            f"its samples; this one's {why}"]})

    if not _stoker.with_parquet:
        return refused("files are Arrow, which this stoker was built without "
                       "(STOKER_WITH_PARQUET)")
    kind = dataset._format_type
    if kind not in _FORMATS or dataset._format_kwargs:
        return refused(f"format ({kind!r}) or transform is not one of no format, \"torch\" and "
                       f"\"numpy\" with no transform")
    columns = _columns(dataset)
    if columns is None:
        return refused("columns are not an Image() or Image(mode=\"RGB\") column and an "
                       "integer label, alone")
    files = _files(dataset)
    if files is None:
        return refused("table is not its Arrow files on disk as they are (it is in memory, or "
                       "changed since it was read)")
    image, label, mode = columns
    largest = _largest_side(files, image, cache_root)
    if largest > _MAX_SIDE:
        return refused(f"largest image is {largest} px a side, over the {_MAX_SIDE} decoded "
                       f"natively")
    source = Arrow(files, image=image, label=label, relative_to=os.getcwd(),
                   pil_decode="rgb" if mode == "RGB" else "own")
    names = [name for name in dataset.column_names if name in (image, label)]
    subset = None if dataset._indices is None else \
        dataset._indices.column(0).to_pylist()
    native = NativeDataset(source, {"image": DecodeImage(max_size=largest)}, {"dataset": [
        f"Hugging Face's datasets.Dataset is read natively as stoker.Arrow over its "
        f"{len(files)} Arrow file{'s' if len(files) != 1 else ''}, in place: the same rows "
        f"in its order{', its indices mapping as explicit epochs' if subset else ''}, the "
        f"{kind or 'python'} format's samples, decoded at their own size (at most {largest} px "
        f"a side, read once from their headers and kept in {cache_root})"]}, subset=subset)
    native.batch_format, native.form = ("image", "label"), _form(kind, names, image)
    return native
