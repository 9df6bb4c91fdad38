"""LoaderCore.explicit_epoch: a caller's batches (a torch Sampler's) read by the native workers,
in the caller's order, for any worker count; start and state() count the caller's sequence; bad
input is a one-line ValueError before any work."""

import os

import numpy as np
import pytest

from stoker import _stoker

BATCH_SIZES = [16, 1, 7, 16, 3, 16, 1]


def sequence():
    """60 indices of the labelled dataset (label == index) in 7 batches of unequal sizes, record
    77 three times, the last record and record 0 among them."""
    indices = [(k * 389 + 1002) % 1003 for k in range(60)]
    indices[10] = indices[11] = indices[40] = 77
    return indices


def cut(indices, sizes):
    out, at = [], 0
    for size in sizes:
        out.append(indices[at:at + size])
        at += size
    return out


def native_loader(path, workers):
    import torch

    native = _stoker.LoaderCore(os.fspath(path))
    native.configure(batch_size=16, shuffle=True, seed=3, last_batch="short", workers=workers,
                     prefetch=2, rank=0, world_size=1, verify="once", on_error="raise",
                     fields=[{"name": "label", "ops": []}],
                     to_tensor=torch.utils.dlpack.from_dlpack)
    return native


def labels(epoch, states=None, native=None):
    out = []
    for batch in epoch:
        out.append(batch["label"].tolist())
        if states is not None:
            states.append(native.state()[1:])
    return out


@pytest.mark.parametrize("workers", [0, 1, 3])
@pytest.mark.parametrize("as_array", [False, True])
def test_labels_come_in_the_given_batches_and_order(labelled, workers, as_array):
    native = native_loader(labelled, workers)
    indices = np.array(sequence(), dtype=np.int64) if as_array else sequence()
    epoch = native.explicit_epoch(4, indices, BATCH_SIZES)
    assert len(epoch) == 7
    states = []
    assert labels(epoch, states, native) == cut(sequence(), BATCH_SIZES)
    assert states == [(4, 16), (4, 17), (4, 24), (4, 40), (4, 43), (4, 59), (5, 0)]
    # A strided int64 view is read as its elements; the loader's own epochs still work.
    strided = np.repeat(np.array(sequence(), dtype=np.int64), 2)[::2]
    assert labels(native.explicit_epoch(0, strided, BATCH_SIZES)) == cut(sequence(), BATCH_SIZES)
    assert len(native.epoch(0)) == native.batches_per_epoch()


def test_start_and_restore_continue_the_sequence(labelled):
    first = native_loader(labelled, 2)
    epoch = first.explicit_epoch(1, sequence(), BATCH_SIZES)
    for _ in range(3):
        next(epoch)
    epoch.close()
    seed, e, position = first.state()
    assert (e, position) == (1, 24)
    second = native_loader(labelled, 2)
    second.restore(seed=seed, epoch=e, position=position, shuffle_window=0, ra_reps=1)
    rest = second.explicit_epoch(e, sequence(), BATCH_SIZES, start=second.state()[2])
    assert len(rest) == 4
    assert labels(rest) == cut(sequence(), BATCH_SIZES)[3:]
    assert second.state()[1:] == (2, 0)


def test_bad_input_is_a_one_line_value_error(labelled):
    native = native_loader(labelled, 2)
    out_of_range = sequence()
    out_of_range[30] = 1_200_000
    with pytest.raises(ValueError, match=r"^the sampler's batch 3 holds index 1200000, outside "
                                         r"the dataset's 1003 records$"):
        native.explicit_epoch(0, out_of_range, BATCH_SIZES)
    with pytest.raises(ValueError, match="^start 5 is not where one of the sampler's batches"):
        native.explicit_epoch(0, sequence(), BATCH_SIZES, start=5)
    with pytest.raises(ValueError, match="^the sampler's batch sizes sum to 59, not the 60"):
        native.explicit_epoch(0, sequence(), BATCH_SIZES[:-1])
    with pytest.raises(ValueError, match="^indices must be 1-D, not of 2 dimensions$"):
        native.explicit_epoch(0, np.zeros((2, 30), dtype=np.int64), BATCH_SIZES)
    with pytest.raises(ValueError, match="^indices must be a sequence of ints or a 1-D int64"):
        native.explicit_epoch(0, "0123", BATCH_SIZES)
    assert native.stats()["batches"] == 0
    # Any integer array is taken, as its values.
    int32 = np.array(sequence(), dtype=np.int32)
    assert labels(native.explicit_epoch(0, int32, BATCH_SIZES)) == cut(sequence(), BATCH_SIZES)


def test_an_empty_sequence_is_an_epoch_of_no_batches(labelled):
    native = native_loader(labelled, 2)
    epoch = native.explicit_epoch(0, [], [])
    assert len(epoch) == 0
    assert labels(epoch) == []
    assert labels(native.explicit_epoch(0, np.zeros(0, dtype=np.int64), [])) == []
