"""The contract every record source keeps (docs/ARCHITECTURE.md, "Adding a data source"):
order, exactly once across ranks, a shuffle window of units, exact mid-epoch resume. Shared by
the tests of each source read in place."""

import stoker

NO_IMAGE = {"image": None}  # the loader's other fields, for what it says of its dataset


def checksums(loader):
    return [c for b in loader for c in b["original_checksum"].tolist()]


def check_source_contract(source, cache, count=23):
    """`source` (a path or a stoker source) of `count` distinct images, 23 by default: three
    ranks of batches of 4 deal them once each but for the padding."""
    def loader(**options):
        options.setdefault("shuffle", True)
        return stoker.Loader(source, batch_size=4, seed=5, batch_format="dict", cache_dir=cache,
                             transforms=NO_IMAGE, **options)
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
    taken = [c for _ in range(2) for c in next(iterator)["original_checksum"].tolist()]
    resumed = loader(workers=1)
    resumed.load_state_dict(first.state_dict())
    assert taken + checksums(resumed) == whole
