"""A user's collate_fn over batches the native loader built: each batch split into its samples
(views, no copy), as DataLoader's fetcher hands them to collate_fn; and batch_size=None, one
sample at a time."""

from stoker._wrapped import Wrapped


def splits_batches(torch, collate_fn) -> bool:
    """Whether batches must be split for `collate_fn`: not for None or default_collate, which
    would give the batch as the native loader built it."""
    return collate_fn is not None and collate_fn is not torch.utils.data.default_collate


def samples_of(batch) -> list:
    """The samples of a batch (a list or tuple of fields, or a dict of them; a field a tensor or
    a list of per-sample values), in the structure torchvision's datasets give them: tuples for
    a list or tuple batch; for a detection batch (a dict with "image" and "boxes") (image,
    target) with the other fields in the target dict, as the detection references' datasets
    give them; else dicts."""
    if isinstance(batch, dict):
        names = list(batch)
        samples = [dict(zip(names, values)) for values in zip(*batch.values())]
        if "image" in batch and "boxes" in batch:
            return [(sample.pop("image"), sample) for sample in samples]
        return samples
    return [tuple(values) for values in zip(*batch)]


class Collated(Wrapped):
    """An iteration whose batches go through `collate_fn` as lists of their samples, each in
    the dataset's own form where `form` makes it (a recognised dataset's)."""

    def __init__(self, inner, collate_fn, form=None):
        super().__init__(inner)
        self._collate_fn = collate_fn
        self._form = form

    def change(self, batch):
        samples = samples_of(batch)
        return self._collate_fn([self._form(s) for s in samples] if self._form else samples)


class Unbatched(Wrapped):
    """An iteration of batches of one sample as that sample, through `convert` as DataLoader's
    batch_size=None passes it (default_convert: a tuple becomes a list)."""

    def __init__(self, inner, convert, form=None):
        super().__init__(inner)
        self._convert = convert
        self._form = form

    def change(self, batch):
        sample = samples_of(batch)[0]
        return self._convert(self._form(sample) if self._form else sample)
