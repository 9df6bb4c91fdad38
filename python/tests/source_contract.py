"""The contract every record source keeps (docs/ARCHITECTURE.md, "Adding a data source"):
order, exactly once across ranks, a shuffle window of units, exact mid-epoch resume. A sample is
known by a digest of every field it is delivered with, whatever the source's fields are.
test_source_contract.py runs it over every registered source. A source that reads data in place
refuses a sample it found bad whatever fields are read (check_bad_sample_refused)."""

import hashlib

import pytest
import torch

import stoker
from stoker.sources import as_source

NO_IMAGE = {"image": None}  # the loader's other fields, for what it says of its dataset


def sample_digest(batch, i):
    """A digest of sample `i` of a dict batch: each field's name, dtype, shape and bytes."""
    digest = hashlib.sha256()
    for name in sorted(batch):
        value = batch[name][i]
        digest.update(name.encode())
        if isinstance(value, torch.Tensor):
            digest.update(f"{value.dtype}{tuple(value.shape)}".encode())
            digest.update(value.contiguous().numpy().tobytes())
        else:
            digest.update(repr(value).encode())
    return digest.hexdigest()


def batch_digests(batch):
    return [sample_digest(batch, i) for i in range(len(next(iter(batch.values()))))]


def checksums(loader):
    """The digest of each sample the loader delivers, in order."""
    return [d for batch in loader for d in batch_digests(batch)]


def check_source_contract(source, cache, count=23):
    """`source` (a path or a stoker source) of `count` distinct samples, 23 by default: three
    ranks of batches of 4 deal them once each but for the padding."""
    names = {field["name"] for field in as_source(source).fields}
    transforms = NO_IMAGE if "image" in names else None  # fields as stored: a token source's

    def loader(**options):
        options.setdefault("shuffle", True)
        return stoker.Loader(source, batch_size=4, seed=5, batch_format="dict", cache_dir=cache,
                             transforms=transforms, **options)
    everything = checksums(loader(shuffle=False))
    assert len(set(everything)) == len(everything) == count
    # Exactly once across ranks, but for the samples that pad `count` to a multiple of 3 x 4.
    dealt = sum([checksums(loader(rank=r, world_size=3, last_batch="short")) for r in range(3)],
                [])
    assert len(dealt) == -(-count // 3) * 3 and set(dealt) == set(everything)
    # A shuffle window of units too.
    assert sorted(checksums(loader(shuffle_window=2))) == sorted(everything)
    # Resumed mid-epoch, it continues with the same batches.
    whole = checksums(loader())
    first = loader()
    iterator = iter(first)
    taken = batch_digests(next(iterator)) + batch_digests(next(iterator))
    resumed = loader(workers=1)
    resumed.load_state_dict(first.state_dict())
    assert taken + checksums(resumed) == whole


def check_bad_sample_refused(source, cache, message, count=23, left_out="image"):
    """`source` (a stoker source read in place, its samples labelled) of `count` samples, one of
    them found bad when read (its error matching `message`): read without field `left_out`, on
    worker threads and on one (workers=0), the bad one fails its epoch under on_error="raise" and
    is skipped and counted under "skip", as a failed transform's sample is, never served with a
    label (issue 66)."""
    def loader(**options):
        return stoker.Loader(source, batch_size=4, shuffle=False, batch_format="dict",
                             cache_dir=cache, transforms={left_out: None}, **options)
    for workers in (2, 0):
        with pytest.raises(stoker.Error, match=message) as error:
            list(loader(workers=workers))
        assert "\n" not in str(error.value)
        skipping = loader(workers=workers, on_error="skip")
        assert sum(len(batch["label"]) for batch in skipping) == count - 1
        assert skipping.stats()["skipped"] == 1
