"""Data read in place, without ``stoker convert``: each class names a source kind the native
loader opens (``remote::SourceKind``). ``stoker.Loader(stoker.ImageFolder(root))``; a plain
path is a dataset, a folder of datasets, or else an image folder."""

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


def source_of(path) -> tuple:
    """(path as str, source kind) for a path or a source object."""
    if isinstance(path, ImageFolder):
        return path.root, path.source
    return os.fsdecode(path), "auto"
