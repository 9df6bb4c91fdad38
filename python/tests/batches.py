"""A loader's batches as numpy arrays, and their comparison: what the remote suites check a
loader over a URL against (the local loader's, or an uninterrupted run's)."""
import numpy as np


def arrays(batch):
    """(image, label) of a dict batch or an [image, label] one, as numpy arrays."""
    image, label = (batch["image"], batch["label"]) if isinstance(batch, dict) else batch
    return image.numpy().copy(), label.numpy().copy()


def epochs(loader, count, first=0):
    """Every batch's (image, label) of epochs first..first+count-1, as numpy arrays."""
    out = []
    for e in range(first, first + count):
        loader.set_epoch(e)
        out += [arrays(b) for b in loader]
    return out


def assert_same(got, want):
    assert len(got) == len(want)
    for (gi, gl), (wi, wl) in zip(got, want):
        np.testing.assert_array_equal(gi, wi)
        np.testing.assert_array_equal(gl, wl)
