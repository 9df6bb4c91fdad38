"""Data read in place, without ``stoker convert``: each class names a source kind the native
loader opens (``remote::SourceKind``). ``stoker.Loader(stoker.ImageFolder(root))``; a plain
path is a dataset, a folder of datasets, Parquet files (a ``.parquet`` file or pattern, or a folder
holding them), or else an image folder."""

import os


class ImageFolder:
    """``root`` in torchvision's ImageFolder layout (a folder per class), read in place: the
    same ``classes``, ``class_to_idx`` and ``samples`` as ``torchvision.datasets.ImageFolder
    (root)``, each file's bytes as the image (JPEG and PNG), its listing cached in the cache
    folder and listed again when a folder in it changes."""

    source = "imagefolder"

    def __init__(self, root):
        self.root = os.fsdecode(root)

    def __repr__(self):
        return f"stoker.ImageFolder({self.root!r})"


class Parquet:
    """Parquet files read in place, row group by row group: a file, a folder's ``*.parquet``
    files, or a glob pattern (``"data/train-*.parquet"``), in name order. ``image`` names a binary
    column, or a struct with a binary ``bytes`` field (Hugging Face datasets' Image feature);
    ``label`` an integer column (Spark's layout: ``image="jpg", label="cls"``). Only those two
    columns are read; the class names are Hugging Face's ClassLabel names where the files have
    them."""

    source = "parquet"

    def __init__(self, path, image="image", label="label"):
        self.path = os.fsdecode(path)
        self.image = image
        self.label = label

    def __repr__(self):
        return f"stoker.Parquet({self.path!r}, image={self.image!r}, label={self.label!r})"


def source_of(path) -> tuple:
    """(path as str, source kind, the native loader's keywords for it) for a path or a source
    object."""
    if isinstance(path, ImageFolder):
        return path.root, path.source, {}
    if isinstance(path, Parquet):
        return path.path, path.source, {"image_column": path.image, "label_column": path.label}
    return os.fsdecode(path), "auto", {}
