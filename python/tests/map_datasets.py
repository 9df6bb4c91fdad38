"""Map-style datasets defined at a module's top level, so that spawned and forkserver workers
(which unpickle the dataset) can import them: test_python_dataset.py's."""

import torch
from torch.utils.data import Dataset, get_worker_info


class Numbers(Dataset):
    """Sample i: tensor(i), of `size` samples."""

    def __init__(self, size=10):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        return torch.tensor(i)


class WorkerHandle(Numbers):
    """A per-worker handle, as h5py or LMDB scripts open one: worker_init_fn sets `handle`
    through get_worker_info().dataset; sample i: (i, the handle, the type of the dataset
    get_worker_info() gives in __getitem__)."""

    handle = None

    def __getitem__(self, i):
        return i, self.handle, type(get_worker_info().dataset).__name__


def open_handle(worker_id):
    """worker_init_fn: opens the worker's handle on the dataset get_worker_info() gives."""
    get_worker_info().dataset.handle = f"handle-{worker_id}"


class Batched(Numbers):
    """A dataset with a batched fetch (one query a batch, as Hugging Face datasets' or a
    database's): sample i is ("batched", i, the batch's indices, a draw of torch's global
    generator) through __getitems__, ("single", i, [i], a draw) through __getitem__."""

    def __getitem__(self, i):
        return "single", i, [i], torch.rand(()).item()

    def __getitems__(self, indices):
        draw = torch.rand(()).item()
        return [("batched", i, list(indices), draw) for i in indices]


class Unsized(Dataset):
    """A map-style dataset without __len__ (its order a sampler's): sample i is tensor(i)."""

    def __getitem__(self, i):
        return torch.tensor(i)


class ById(Dataset):
    """Records keyed by database ids (100, 205, 317), as a sampler of those ids gives them."""

    rows = {100: 1, 205: 2, 317: 3}

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, key):
        return torch.tensor(self.rows[key])


class CorruptRecord(Numbers):
    """Sample 2 raises KeyError (a corrupt record), sample 5 an error of a type the loader
    cannot make with one message (its constructor wants two)."""

    def __getitem__(self, i):
        if i == 2:
            raise KeyError(f"corrupt record {i}")
        if i == 5:
            raise TwoPartError("record", i)
        return torch.tensor(i)


class TwoPartError(Exception):
    def __init__(self, what, index):
        super().__init__(f"bad {what} {index}")


def refuse_odd_firsts(samples):
    """collate_fn: ValueError for a batch whose first sample is odd, else default_collate."""
    if int(samples[0]) % 2:
        raise ValueError(f"odd first sample {int(samples[0])}")
    return torch.utils.data.default_collate(samples)
