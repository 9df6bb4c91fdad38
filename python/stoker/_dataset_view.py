"""loader.dataset where the data is stoker's: what a script reads of a dataset object."""


class LoaderDataset:
    """``loader.dataset``: what a script reads of a DataLoader's dataset, as far as the stored
    data has it. ``len()`` is the number of records; ``classes`` (and ``class_to_idx``) are the
    manifest's ``class_names`` (as ``stoker convert imagefolder`` writes them: ImageFolder's
    classes), or an image folder's, and absent (AttributeError) where it has none; ``samples``
    an image folder's [(path, class index)], as ImageFolder's (a dataset's records do not name
    their source files: AttributeError); ``root`` is the loader's path and ``fields`` the
    stored schema. It cannot be indexed: samples come from the loader."""

    def __init__(self, path: str, records: int, schema: list, classes: list, samples):
        self.root = path
        self.fields = [dict(f) for f in schema]
        self._records = records
        self._classes = list(classes)
        self._samples = samples

    def __len__(self):
        return self._records

    @property
    def classes(self) -> list:
        if not self._classes:
            raise AttributeError(f"{self.root} has no class names (its manifest has no "
                                 "class_names)")
        return list(self._classes)

    @property
    def samples(self) -> list:
        if self._samples is None:
            raise AttributeError(f"{self.root} has no samples: a dataset's records do not name "
                                 "their source files")
        return list(self._samples)

    @property
    def class_to_idx(self) -> dict:
        return {name: i for i, name in enumerate(self.classes)}

    def __repr__(self):
        return f"stoker.LoaderDataset({self.root!r}, records={self._records})"
