"""stoker's order of an epoch over a number of samples, as the native loader plans it
(pipeline/sampler.h; docs/DESIGN.md contracts 1-3), for the orders Python carries out: a Python
dataset's, a Subset's, and ``loader.sampler``'s indices. It needs no torch."""

import numpy as np

from stoker import _stoker


def stoker_order(size: int, options: dict, epoch: int, start: int = 0):
    """(indices, sizes, positions) of one rank's epoch in stoker's order over `size` samples:
    the native loader's plan (sampler.h) for the loader options `options`; over none, an epoch
    of no batches, as DataLoader's over an empty dataset."""
    if size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    return _stoker.sampler_plan(size, seed=options["seed"], shuffle=options["shuffle"],
                                rank=options["rank"], world_size=options["world_size"],
                                batch_size=options["batch_size"],
                                last_batch=options["last_batch"], epoch=epoch, start=start,
                                shuffle_window=0 if options["shuffle_window"] == "all"
                                else options["shuffle_window"],
                                ra_reps=options["ra_reps"])
