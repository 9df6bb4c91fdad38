"""``stoker.Order(aspect_ratio_groups=k)``: torchvision's detection reference's batches of one
aspect-ratio group (its ``--aspect-ratio-group-factor k``: ``create_aspect_ratio_groups`` and
``GroupedBatchSampler``) made natively from stoker's order of each rank's epoch, so that the
same epoch gives the same batches as the reference's sampler would given that order. The
groups come from the records' ``height`` and ``width`` fields (what ``convert coco``,
``convert voc`` and ``convert imagefolder`` write), read once when the loader opens."""

import math

import numpy as np

from stoker._samplers import ExplicitOrder
from stoker._stoker_order import stoker_order


def group_of_each(heights, widths, factor: int) -> np.ndarray:
    """Each record's group: its width / height (float64) placed among the reference's bins,
    2 ** linspace(-1, 1, 2k + 1) for k > 0 and [1.0] for k = 0, by how many of them are at
    most it (bisect_right)."""
    bins = np.sort(2 ** np.linspace(-1, 1, 2 * factor + 1)) if factor > 0 else np.array([1.0])
    ratios = np.asarray(widths, dtype=np.float64) / np.asarray(heights, dtype=np.float64)
    return np.searchsorted(bins, ratios, side="right")


def grouped_batches(indices, groups, batch_size: int) -> list:
    """The batches GroupedBatchSampler makes of `indices` (in order): a group's batch goes out
    when it has batch_size members; at the end, until there are len(indices) // batch_size
    batches, the part-filled groups, most members first (ties: the group whose last batch went
    out, or which began, earliest first, the reference's dict order), each filled up by
    repeating that group's members from its first."""
    pending = {}  # group -> its members since its last batch, in the reference's dict order
    members = {}  # group -> every member so far
    batches = []
    for index in indices:
        group = groups[index]
        members.setdefault(group, []).append(index)
        pending.setdefault(group, []).append(index)
        if len(pending[group]) == batch_size:
            batches.append(pending.pop(group))
            pending[group] = []  # the group goes to the end of the order, as the reference's
    wanted = len(indices) // batch_size
    by_size = sorted(pending.items(), key=lambda item: len(item[1]), reverse=True)
    for group, part in by_size[:wanted - len(batches)]:
        missing = batch_size - len(part)
        cycled = members[group] * math.ceil(missing / len(members[group]))
        batches.append(part + cycled[:missing])
    return batches


class AspectRatioOrder(ExplicitOrder):
    """The native loader's epochs as aspect-ratio-grouped batches of stoker's order (of a
    Subset's positions where given). `sizes()` gives the records' (heights, widths)."""

    def __init__(self, factor: int, batch_size: int, subset, sizes):
        super().__init__(None, None, batch_size, False, subset)
        self.factor = factor
        self._sizes = sizes
        self._groups = None
        self.name = f"aspect_ratio_groups={factor}"

    def groups(self) -> np.ndarray:
        """Each position's group, read once."""
        if self._groups is None:
            heights, widths = self._sizes()
            groups = group_of_each(heights, widths, self.factor)
            self._groups = groups if self.subset is None else groups[self.subset]
        return self._groups

    def _count(self) -> int:
        return self.size if self.subset is None else len(self.subset)

    def sampled(self, epoch: int):
        # Every index of the rank's epoch: the grouping decides the batches, and which to drop.
        indices, _, _ = stoker_order(self._count(), dict(self.options, last_batch="short"),
                                     epoch)
        batches = grouped_batches(indices.tolist(), self.groups(), self.batch_size)
        flat = [index for batch in batches for index in batch]
        return (np.asarray(flat, dtype=np.int64),
                np.full(len(batches), self.batch_size, dtype=np.int64), {})

    def batch_lists(self, epoch: int) -> list:
        """The epoch's batches as lists of positions (``loader.batch_sampler``'s)."""
        flat, sizes = self.positions(epoch)
        return [chunk.tolist() for chunk in np.split(flat, np.cumsum(sizes)[:-1])] \
            if len(sizes) else []

    def largest_batch(self) -> int:
        return self.batch_size

    def __len__(self):
        return len(stoker_order(self._count(), dict(self.options, last_batch="short"), 0)[0]) \
            // self.batch_size
