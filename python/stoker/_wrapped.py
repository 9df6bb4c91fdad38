"""The iterations the loader stacks on its native epoch (formats, masks, Python steps, batch
transforms) share this pass-through."""


class Wrapped:
    """An iteration that changes each batch of the iteration ``inner`` (its ``change``) and
    passes the rest through: its length, liveness, the last batch's padding and closing."""

    def __init__(self, inner):
        self.inner = inner

    def __iter__(self):
        return self

    def __next__(self):
        return self.change(next(self.inner))

    def change(self, batch):
        raise NotImplementedError

    def __len__(self):
        return len(self.inner)

    @property
    def live(self):
        return self.inner.live

    @property
    def last_padding(self):
        return self.inner.last_padding

    def close(self):
        self.inner.close()


class ChangedFields(Wrapped):
    """An iteration whose dict batches' fields `names` become what ``changed(batch, name)``
    gives (which may pop other fields of the batch)."""

    def __init__(self, inner, names, changed):
        super().__init__(inner)
        self._names = names
        self._changed = changed

    def change(self, batch):
        for name in self._names:
            batch[name] = self._changed(batch, name)
        return batch
