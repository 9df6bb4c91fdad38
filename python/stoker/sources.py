"""Data read in place, without ``stoker convert``: each class names a source kind the native
loader opens (``remote::SourceKind``). ``stoker.Loader(stoker.ImageFolder(root))``,
``stoker.Loader(stoker.WebDataset("data-{000..009}.tar"))``,
``stoker.Loader(stoker.Parquet(path))``; a plain path is a dataset, a folder of datasets, WebDataset tars (a ``.tar``, a folder of them, a
brace pattern), Parquet files (a ``.parquet`` file or pattern, or a folder holding them), or else
an image folder."""

import os


class ImageFolder:
    """``root`` in torchvision's ImageFolder layout (a folder per class), read in place: the
    same ``classes``, ``class_to_idx`` and ``samples`` as ``torchvision.datasets.ImageFolder
    (root)``, each file's bytes as the image (JPEG and PNG), its listing cached in the cache
    folder and listed again when a folder in it changes. ``root`` may be an ``http(s)://``
    folder its server lists (an index page) or an ``s3://bucket/prefix/`` folder: the same
    samples, the files downloaded into the cache folder ahead of the loader (listed at every
    open)."""

    source = "imagefolder"

    def __init__(self, root):
        self.root = os.fsdecode(root)

    def __repr__(self):
        return f"stoker.ImageFolder({self.root!r})"


class WebDataset:
    """WebDataset tars read in place: ``urls`` a ``.tar`` file, a folder of them, a brace
    pattern (``"data-{000000..000999}.tar"``, as ``braceexpand`` expands it) or a list of
    these; local paths or ``http(s)://`` and ``s3://`` URLs (an ``s3://bucket/prefix/`` folder
    or an ``http(s)://`` folder its server lists too), remote tars downloaded whole into the cache folder when first needed. Samples are
    grouped by key as the ``webdataset`` library groups them; each sample's
    ``jpg``/``jpeg``/``png``/``webp`` member is the image, its ``cls`` member the label (where
    no sample has one: ``label``, ``class`` or ``txt``), and every other member a field named
    by its extension: a ``.npy`` member's an array of its header's dtype and shape, the others
    bytes as stored (read with ``RawBytes``). Each tar's index (member offsets, checksums and
    .npy headers) is built on first open and kept in the cache folder (a remote tar's keyed by
    its URL, size and ETag), so later runs seek directly and a tar changed since is caught."""

    source = "webdataset"

    def __init__(self, urls):
        names = [urls] if isinstance(urls, (str, bytes, os.PathLike)) else list(urls)
        self.urls = [os.fsdecode(u) for u in names]
        if not self.urls or any("\n" in u for u in self.urls):
            raise ValueError(f"WebDataset: {urls!r} names no tar, or a name holds a newline")

    def __repr__(self):
        return f"stoker.WebDataset({self.urls!r})"


class Parquet:
    """Parquet files read in place, row group by row group: a file, a folder's ``*.parquet``
    files, a glob pattern (``"data/train-*.parquet"``), in name order, or a list of these; or
    ``http(s)://`` and ``s3://`` URLs (a URL, a brace pattern, an ``s3://bucket/prefix/``
    folder or an ``http(s)://`` folder its server lists), each file downloaded whole into the
    cache folder when the loader opens. ``image`` names a binary column, or a struct with a binary ``bytes`` field (Hugging Face datasets' Image feature);
    ``label`` an integer column (Spark's layout: ``image="jpg", label="cls"``). Only those two
    columns are read; the class names are Hugging Face's ClassLabel names where the files have
    them."""

    source = "parquet"

    def __init__(self, paths, image="image", label="label"):
        names = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
        self.paths = [os.fsdecode(p) for p in names]
        if not self.paths or any("\n" in p for p in self.paths):
            raise ValueError(f"Parquet: {paths!r} names no file, or a name holds a newline")
        self.image = image
        self.label = label

    def __repr__(self):
        return f"stoker.Parquet({self.paths!r}, image={self.image!r}, label={self.label!r})"


def source_of(path) -> tuple:
    """(path as str, source kind, the native loader's keywords for it) for a path or a source
    object; a WebDataset's names one a line (remote::SourceKind's kWebDataset)."""
    if isinstance(path, ImageFolder):
        return path.root, path.source, {}
    if isinstance(path, WebDataset):
        return "\n".join(path.urls), path.source, {}
    if isinstance(path, Parquet):
        return ("\n".join(path.paths), path.source,
                {"image_column": path.image, "label_column": path.label})
    return os.fsdecode(path), "auto", {}
