"""stoker.Loader's own settings, in four groups beside DataLoader's arguments:

    stoker.Loader(dataset, batch_size=64, shuffle=True, num_workers=8,   # DataLoader's
                  order=stoker.Order(seed=3, shuffle_window=16),          # stoker's
                  feed=stoker.Feed(device="cuda"))

``Order``: which samples each rank reads and in which order; ``Batches``: what a batch holds;
``Feed``: what builds batches and where they go; ``Storage``: how the bytes are read. Every
field's default is the loader's; a field left at None is stoker's choice (documented per
field). docs/PYTHON-LOADER.md lists them all."""

from dataclasses import dataclass, fields
from typing import Any, Optional


class _Group:
    """A settings group: its fields, as the native loader's keywords."""

    def keywords(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Order(_Group):
    """Which samples, in which order, on which rank (docs/DESIGN.md contracts 1-3).

    ``seed``: the order's and the augmentations' seed (None: 0, or the loader's ``generator``'s
    ``initial_seed()``); ``shuffle_window``: "all" (a global shuffle) or a number of shards
    read at once; ``ra_reps``: repeated augmentation's repeats (the references' RASampler);
    ``last_batch``: "short", "drop" or "pad" (None: DataLoader's ``drop_last``); ``rank``,
    ``world_size`` (None: torch.distributed's) or a 1-D DeviceMesh ``mesh``;
    ``aspect_ratio_groups``: None, or k as the detection reference's
    ``--aspect-ratio-group-factor``: each batch of one group of width / height (2k + 2
    groups, from the records' ``height`` and ``width``), made of each rank's epoch as its
    GroupedBatchSampler makes them (the last ones filled up with repeats);
    ``samples_per_record``: K, each record K samples an epoch, shuffled among all (the
    "per_record" order: a video's K clips, ``DecodeClip`` taking clip k of the K its sampler
    takes, as ``VideoFolder(clips_per_video=K)`` gives them)."""

    seed: Optional[int] = None
    shuffle_window: Any = "all"
    ra_reps: int = 1
    last_batch: Optional[str] = None
    rank: Optional[int] = None
    world_size: Optional[int] = None
    mesh: Any = None
    aspect_ratio_groups: Optional[int] = None
    samples_per_record: int = 1


@dataclass(frozen=True)
class Batches(_Group):
    """What a batch holds.

    ``batch_format``: None (DataLoader's structure: ``[image, label]`` for an image
    classification dataset, else a dict of fields), "dict", "tuple" or field names (a tuple of
    them); ``variable``: "list", "padded" or "nested", the form of fields of varying size;
    ``batch_transform``: a callable on each batch (torchvision's MixUp, CutMix: native where it
    can be); ``on_error``: "raise" or "skip" for bad records; ``python_input``: None, "tensor"
    or "pil", what Python steps are given."""

    batch_format: Any = None
    variable: Any = "list"
    batch_transform: Any = None
    on_error: str = "raise"
    python_input: Optional[str] = None


@dataclass(frozen=True)
class Feed(_Group):
    """What builds the batches and where they go.

    ``workers``: native worker threads (None: DataLoader's ``num_workers`` where > 0, else one
    per core beyond the loop's; "auto": tuned while running);
    ``prefetch``: batches built ahead (None: DataLoader's ``prefetch_factor`` times its
    workers, else stoker's); ``device``: "cpu" or "cuda[:n]", batches copied ahead on a side
    stream; ``normalize_on_device``: a Normalize done on the device; ``python_workers``: processes
    (or threads) for the steps stoker runs in Python (None: DataLoader's ``num_workers``);
    ``python_parallel``: "processes" or "threads"; ``python_timeout``: seconds a Python step may
    take on one sample (None: DataLoader's ``timeout`` where > 0, else 300; a dataset's own
    ``__getitem__``: DataLoader's ``timeout``, 0 for ever)."""

    workers: Any = None
    prefetch: Optional[int] = None
    device: Any = "cpu"
    normalize_on_device: bool = False
    python_workers: Optional[int] = None
    python_parallel: str = "processes"
    python_timeout: Optional[float] = None


@dataclass(frozen=True)
class Storage(_Group):
    """How the bytes are read.

    ``verify``: "once" (every shard's checksum checked on first read), "always" or "never";
    ``cache_dir``, ``cache_gb``, ``cache_policy``: the local cache of remote data
    (docs/REMOTE.md); ``transcode_cache``: keep large images re-encoded for cheaper crops."""

    verify: str = "once"
    cache_dir: Any = None
    cache_gb: Optional[float] = None
    cache_policy: str = "next-use"
    transcode_cache: bool = False


GROUPS = {"order": Order, "batches": Batches, "feed": Feed, "storage": Storage}
