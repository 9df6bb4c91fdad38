"""The samplers of stoker.Loader: ``loader.sampler`` and ``loader.batch_sampler`` as DataLoader
has them (for stoker's own order: its indices, ``set_epoch`` and ``len``), and ExplicitOrder,
the indices of a user's sampler or batch sampler as the native loader reads them."""

import weakref

import numpy as np
import torch.utils.data

from stoker._stoker_order import stoker_order


class _HeldByLoader:
    """A sampler its loader holds, holding the loader weakly (the loader's native core must go
    when the loader goes; ReferenceError after, as a weak proxy's), pickled and copied with it:
    its pickled state names the loader itself."""

    def _hold(self, loader) -> None:
        self._owner = weakref.ref(loader)

    @property
    def _loader(self):
        loader = self._owner()
        if loader is None:
            raise ReferenceError("weakly-referenced object no longer exists")
        return loader

    def __getstate__(self):
        return dict(self.__dict__, _owner=self._loader)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._hold(state["_owner"])


class LoaderSampler(_HeldByLoader, torch.utils.data.Sampler):
    """``loader.sampler`` where stoker orders the samples: iterating it gives this rank's
    dataset indices of the loader's next epoch (padding included, as DistributedSampler's);
    ``set_epoch(e)`` is ``loader.set_epoch(e)``; ``len()`` the indices an epoch deals this
    rank. It is a RandomSampler where the loader shuffles and a SequentialSampler where not
    (sampler_of), as DataLoader's is: frameworks tell shuffled loaders so."""

    def __init__(self, loader, data_source):
        self._hold(loader)
        self.data_source = data_source
        self.replacement = False
        self._num_samples = None
        self.generator = loader.generator

    def set_epoch(self, epoch: int) -> None:
        self._loader.set_epoch(epoch)

    def __iter__(self):
        return iter(self._loader._order(self._loader._epoch_now()).tolist())

    def __len__(self):
        return len(self._loader._order(self._loader._epoch_now()))

    def __repr__(self):
        return f"stoker.LoaderSampler({self._loader!r})"


class _RandomLoaderSampler(LoaderSampler, torch.utils.data.RandomSampler):
    __iter__ = LoaderSampler.__iter__
    __len__ = LoaderSampler.__len__


class _SequentialLoaderSampler(LoaderSampler, torch.utils.data.SequentialSampler):
    __iter__ = LoaderSampler.__iter__
    __len__ = LoaderSampler.__len__


def sampler_of(loader, data_source, shuffle: bool) -> LoaderSampler:
    """``loader.sampler`` for stoker's order: a RandomSampler or SequentialSampler, as
    DataLoader's `shuffle` makes one."""
    kind = _RandomLoaderSampler if shuffle else _SequentialLoaderSampler
    return kind(loader, data_source)


class LoaderBatchSampler(_HeldByLoader, torch.utils.data.BatchSampler):
    """``loader.batch_sampler``: DataLoader's BatchSampler over ``loader.sampler`` (its
    ``sampler``, ``batch_size`` and ``drop_last``), or where stoker groups the batches
    (`grouped`: an AspectRatioOrder) those batches; ``set_epoch`` sets the loader's epoch."""

    def __init__(self, loader, sampler, batch_size: int, drop_last: bool, grouped=None):
        super().__init__(sampler, batch_size, drop_last)
        self._hold(loader)
        self._grouped = grouped

    def set_epoch(self, epoch: int) -> None:
        self._loader.set_epoch(epoch)

    def __iter__(self):
        if self._grouped is None:
            return super().__iter__()
        return iter(self._grouped.batch_lists(self._loader._epoch_now()))

    def __len__(self):
        return super().__len__() if self._grouped is None else len(self._grouped)


def _indices_of(batch, number: int, size: int) -> tuple:
    """(the indices of batch `number` of a user's sampler as ints in [0, size), a negative
    one counted from the end as a list's; or None and the IndexError message naming the batch,
    the index and `size` where one lies outside); ValueError naming the batch for an index
    that is not an int."""
    indices = []
    for index in batch:
        if isinstance(index, torch.Tensor):
            index = index.item()
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise ValueError(f"the sampler's batch {number} holds {index!r}, not an int: a "
                             "dataset stoker reads natively takes integer indices")
        if not -size <= index < size:
            return None, (f"the sampler's batch {number} holds index {index}, outside the "
                          f"dataset's {size} samples")
        indices.append(int(index) % size)
    return indices, None


class ExplicitOrder:
    """The epochs the native loader reads as explicit index plans: a user's ``sampler``
    (batched by ``batch_size`` and ``drop_last``, as DataLoader's BatchSampler does) or
    ``batch_sampler``, iterated once an epoch (the sampler decides the epoch:
    DistributedSampler's ``set_epoch``); or, for a Subset of a dataset stoker reads natively
    without a sampler, stoker's own order over the Subset's positions. `subset`: the Subset's
    indices, which positions map to (None: the positions are the dataset's indices).
    ``batches(epoch)`` gives (indices int64 [samples], sizes int64 [batches], the batches
    refused for an index outside the dataset: sampled)."""

    repeats = True  # an index's k-th occurrence in an epoch draws its own augmentation

    def __init__(self, sampler, batch_sampler, batch_size, drop_last: bool, subset=None):
        if batch_sampler is None and sampler is not None:
            batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size or 1, drop_last)
        self.batch_sampler = batch_sampler  # None: stoker's order over the subset
        self.batch_size = batch_size or 1
        self.subset = None if subset is None else np.asarray(subset, dtype=np.int64)
        self.size = None  # the dataset's, once the native loader has opened it
        self.options = None  # the native loader's, for stoker's own order
        self.name = "sampler"  # whose order a state_dict's position counts in

    def bind(self, size: int, options=None) -> None:
        self.size = size
        self.options = options

    def positions(self, epoch: int):
        """(indices, sizes) of epoch `epoch` before the Subset's mapping: what a sampler over
        the dataset given (the Subset) yields, its refused batches left out (sampled)."""
        return self.sampled(epoch)[:2]

    def sampled(self, epoch: int):
        """(indices, sizes, refused) of epoch `epoch` before the Subset's mapping, where
        `refused` is {number of a kept batch: [the IndexError message of each batch refused
        right before it]} (the number of kept batches for those after the last): a batch
        holding an index outside the dataset is refused, as DataLoader's fetch of it raises
        while the batches around it come."""
        if self.batch_sampler is None:
            indices, sizes, _ = stoker_order(len(self.subset), self.options, epoch)
            return indices, sizes, {}
        limit = self.size if self.subset is None else len(self.subset)
        indices, sizes, refused = [], [], {}
        for number, batch in enumerate(self.batch_sampler):
            batch, outside = _indices_of(batch, number, limit)
            if outside is not None:
                refused.setdefault(len(sizes), []).append(outside)
                continue
            if not batch:
                raise ValueError(f"the batch sampler's batch {number} is empty")
            indices.extend(batch)
            sizes.append(len(batch))
        return np.asarray(indices, dtype=np.int64), np.asarray(sizes, dtype=np.int64), refused

    def batches(self, epoch: int):
        """(indices, sizes, refused) of epoch `epoch` (sampled's), the indices the dataset's."""
        indices, sizes, refused = self.sampled(epoch)
        if self.subset is not None:
            indices = self.subset[indices]
        return indices, sizes, refused

    def largest_batch(self) -> int:
        """The batch size the native buffers are made for: the loader's for its own order, the
        batch sampler's batch_size where it says one, else its largest batch this epoch."""
        if self.batch_sampler is None:
            return self.batch_size
        size = getattr(self.batch_sampler, "batch_size", None)
        if isinstance(size, int) and size > 0:
            return size
        return max((len(batch) for batch in self.batch_sampler), default=1)

    def __len__(self):
        if self.batch_sampler is None:
            return len(self.positions(0)[1])
        return len(self.batch_sampler)
