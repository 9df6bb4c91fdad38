"""stoker.Loader: torch.utils.data.DataLoader's contract — its arguments with their meanings,
its attributes, samplers, collate_fn and batch structure — with stoker's deterministic order,
exact resume and native speed behind it. Data stoker reads itself (a path, stoker's sources, a
recognised torchvision dataset) goes to the native loader (_native_loader.py); any other dataset
to DataLoader's own worker processes under stoker's order (_python_dataset.py)."""

from __future__ import annotations

import difflib
import multiprocessing
import numbers
import os
import warnings

from stoker._collate import Collated, Unbatched, splits_batches
from stoker._datasets import native_dataset
from stoker._mixed_fields import MixedFieldsLoader, reads_per_source
from stoker._native_loader import NativeLoader, _import_torch
from stoker._python_dataset import PythonDatasetLoader
from stoker.settings import GROUPS
from stoker.sources import Mixture, _Source

__all__ = ["Loader"]

# stoker.Loader's keywords before the settings groups, and the group each now belongs to.
_GROUP_OF = {name: group for group, cls in GROUPS.items()
             for name in cls.__dataclass_fields__}
_GROUP_OF["transforms"] = "dataset"


def _dataloader_rules(torch, dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
                      drop_last, timeout, multiprocessing_context, prefetch_factor,
                      persistent_workers) -> None:
    """DataLoader's checks of its arguments, with its messages (ValueError, TypeError), and
    its RandomSampler's of an empty dataset to shuffle."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
        raise TypeError(f"num_workers must be an int, not {type(num_workers).__name__}")
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if isinstance(dataset, torch.utils.data.IterableDataset):
        for name, value in (("shuffle", shuffle not in (None, False) and shuffle),
                            ("sampler", sampler), ("batch_sampler", batch_sampler)):
            if value:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                                 f"option, but got {name}={value}")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or
                                      drop_last):
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                         "sampler, and drop_last")
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually "
                         "exclusive with drop_last")
    _multiprocessing_context_rules(torch, multiprocessing_context, num_workers)
    if shuffle and sampler is None and batch_sampler is None and \
            isinstance(dataset, torch.utils.data.Dataset) and \
            not isinstance(dataset, torch.utils.data.IterableDataset) and \
            hasattr(dataset, "__len__") and len(dataset) == 0:
        raise ValueError("num_samples should be a positive integer value, but got "
                         "num_samples=0")


def _multiprocessing_context_rules(torch, context, num_workers) -> None:
    """DataLoader's checks of multiprocessing_context: a start method's name or a context, and
    only with worker processes."""
    if context is None:
        return
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = torch.multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context={context!r}")
    elif not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={context}")


# DataLoader's arguments, as stoker.Loader takes them.
# DataLoader's attributes that cannot change after it is made (its __setattr__'s).
_SET_ONCE = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
             "persistent_workers")

_DATALOADER_ARGUMENTS = ("batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
                         "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn",
                         "multiprocessing_context", "generator", "prefetch_factor",
                         "persistent_workers", "pin_memory_device", "in_order")


def _where(name: str) -> str:
    """Where a setting goes: " (stoker.Feed(workers=...))" for a group's field, "" for
    DataLoader's own."""
    group = _GROUP_OF.get(name)
    if group is None or group == "dataset":
        return ""
    return f" (stoker.{GROUPS[group].__name__}({name}=...))"


def _settings(groups: dict, legacy: dict) -> dict:
    """{group: {field: value}} from the settings objects given (None: defaults) and the
    keywords of stoker.Loader before the groups (each into its group; one set both ways, or a
    keyword no group has, raises TypeError naming it)."""
    settings = {}
    for name, cls in GROUPS.items():
        given = groups[name]
        if given is None:
            given = cls()
        if not isinstance(given, cls):
            raise TypeError(f"{name} must be a stoker.{cls.__name__}, not "
                            f"{type(given).__name__}")
        settings[name] = given.keywords()
    settings["dataset"] = {}
    for key, value in legacy.items():
        group = _GROUP_OF.get(key)
        if group is None:
            known = list(_GROUP_OF) + list(_DATALOADER_ARGUMENTS)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}{_where(close[0])}?" if close else ""
            raise TypeError(f"stoker.Loader() got an unexpected keyword argument {key!r}{hint}")
        default = GROUPS[group]() if group in GROUPS else None
        if default is not None and settings[group][key] != getattr(default, key):
            raise TypeError(f"{key} is set twice: as a keyword and in stoker.{group.title()}")
        settings[group][key] = value
    return settings


def _warn_unsplit(torch, order) -> None:
    """A warning where torch.distributed runs on several ranks and `order`, the user's sampler
    or batch_sampler, is not split by rank (has no ``num_replicas``, as DistributedSampler and
    Lightning's wrapper of it have): every rank then reads all its indices, as with a
    DataLoader, but Lightning and Accelerate, which split a DataLoader's sampler, leave a
    stoker.Loader as it is."""
    sampler = getattr(order, "sampler", order)
    if hasattr(order, "num_replicas") or hasattr(sampler, "num_replicas") or \
            not torch.distributed.is_available() or not torch.distributed.is_initialized() or \
            torch.distributed.get_world_size() < 2:
        return
    warnings.warn(f"stoker.Loader: the {type(order).__name__} given is not split across the "
                  f"{torch.distributed.get_world_size()} ranks: each rank reads every index it "
                  f"gives (as a DataLoader would; Lightning and Accelerate split a DataLoader's "
                  f"sampler, not a stoker.Loader's): give one split by rank (torch's "
                  f"DistributedSampler, Lightning's DistributedSamplerWrapper around yours), "
                  f"or leave the order to stoker, which splits it", stacklevel=3)


def _aspect_ratio_order(factor, native, sampler, batch_sampler, batch_size, storage):
    """The AspectRatioOrder of Order(aspect_ratio_groups=factor), else ValueError naming what
    stands in its way."""
    from stoker._aspect_ratio_groups import AspectRatioOrder

    if isinstance(factor, bool) or not isinstance(factor, numbers.Integral) or factor < 0:
        raise ValueError(f"Order(aspect_ratio_groups=) is a whole number >= 0 (the reference's "
                         f"--aspect-ratio-group-factor), not {factor!r}")
    if sampler is not None or batch_sampler is not None:
        raise ValueError("Order(aspect_ratio_groups=) groups stoker's own order: leave out "
                         "sampler and batch_sampler (or give torchvision's GroupedBatchSampler "
                         "as batch_sampler= alone)")
    if native is None or batch_size is None:
        raise ValueError("Order(aspect_ratio_groups=) needs batches (a batch_size) of a dataset "
                         "stoker reads natively; for another dataset give torchvision's "
                         "GroupedBatchSampler as batch_sampler=")

    def sizes():
        try:
            pairs = list(Loader(native.source, batch_size=4096, batch_format=("height", "width"),
                                storage=GROUPS["storage"](**storage)))
        except (ValueError, KeyError) as error:
            raise ValueError(f"Order(aspect_ratio_groups=) groups by each record's height and "
                             f"width fields, which {native.source!r} lacks ({error}); give "
                             f"torchvision's GroupedBatchSampler as batch_sampler=") from None
        return ([h for pair in pairs for h in pair[0].tolist()],
                [w for pair in pairs for w in pair[1].tolist()])
    return AspectRatioOrder(int(factor), batch_size, native.subset, sizes)


class Loader:
    """``torch.utils.data.DataLoader``'s arguments, attributes and batches, with stoker's
    guarantees: the order (and every random draw of stoker's transforms) depends on the seed,
    the epoch, the rank and world size, never on workers or timing; ``state_dict()`` and
    ``load_state_dict()`` resume mid-epoch exactly, also on another world size.

    ``dataset``: a stoker dataset's path or URL, ``stoker.Dataset``, ``stoker.ImageFolder``,
    ``stoker.WebDataset``, ``stoker.Parquet`` (read natively, their transforms translated), a
    torchvision dataset stoker recognises (``loader.plan`` says which run natively), or any
    map-style or iterable dataset (its ``__getitem__`` in ``num_workers`` worker processes, as
    DataLoader runs it). Every other argument means what DataLoader's does; stoker's own
    settings come in four groups: ``order=stoker.Order(...)``, ``batches=stoker.Batches(...)``,
    ``feed=stoker.Feed(...)`` and ``storage=stoker.Storage(...)`` (stoker/settings.py).

    docs/MIGRATING.md maps DataLoader to stoker.Loader argument by argument."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, order=None, batches=None, feed=None, storage=None, **legacy):
        torch = _import_torch()
        from stoker._samplers import ExplicitOrder, LoaderBatchSampler, sampler_of  # torch's
        from torch.utils.data.dataloader import _InfiniteConstantSampler  # DataLoader's own

        _dataloader_rules(torch, dataset, batch_size, shuffle, sampler, batch_sampler,
                          num_workers, drop_last, timeout, multiprocessing_context,
                          prefetch_factor, persistent_workers)
        settings = _settings({"order": order, "batches": batches, "feed": feed,
                              "storage": storage}, legacy)
        self.num_workers = num_workers
        # DataLoader's values where None was given: its collate function, 2 batches a worker
        # ahead, the multiprocessing context a start method names.
        self.collate_fn = collate_fn if collate_fn is not None else (
            torch.utils.data.default_convert if batch_size is None and batch_sampler is None
            else torch.utils.data.default_collate)
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = torch.multiprocessing.get_context(
            multiprocessing_context) if isinstance(multiprocessing_context, str) \
            else multiprocessing_context
        self.generator = generator
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else \
            prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        if pin_memory and not torch.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
            pin_memory = False
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, not "
                            f"{type(generator).__name__}")  # DataLoader's fails at iteration
        seed = settings["order"]["seed"]
        if seed is None:
            seed = generator.initial_seed() if generator is not None else 0
        settings["order"]["seed"] = seed
        feed = settings["feed"]
        if feed["workers"] is None and num_workers > 0:  # DataLoader's parallel loaders
            feed["workers"] = num_workers
        # A dataset's own __getitem__ waits as DataLoader's does (timeout 0: for ever) unless
        # Feed(python_timeout=) says otherwise; stoker's Python steps 300 s by default.
        dataset_timeout = timeout if feed["python_timeout"] is None else feed["python_timeout"]
        if feed["python_timeout"] is None:
            feed["python_timeout"] = timeout if timeout > 0 else 300
        if feed["prefetch"] is None and prefetch_factor:
            feed["prefetch"] = prefetch_factor * num_workers
        native = native_dataset(torch, dataset, settings["dataset"].get("transforms"))
        self._notes = {}
        if native is not None and native.source is None:  # recognised, read by __getitem__
            native, self._notes = None, native.notes
        self._form = None  # a recognised dataset's samples in its own form
        if native is not None and native.form is not None and \
                settings["batches"]["batch_format"] is None:
            settings["batches"]["batch_format"] = native.batch_format
            self._form = native.form
        groups = settings["order"].pop("aspect_ratio_groups")
        per_record = settings["order"].pop("samples_per_record")
        explicit = None
        if groups is not None:
            explicit = _aspect_ratio_order(groups, native, sampler, batch_sampler, batch_size,
                                           settings["storage"])
        elif native is not None and (sampler is not None or batch_sampler is not None or
                                     native.subset is not None):
            explicit = ExplicitOrder(sampler, batch_sampler, batch_size, drop_last,
                                     native.subset)
        if per_record != 1 and (native is None or explicit is not None):
            raise ValueError("Order(samples_per_record=) is stoker's own order over a dataset "
                             "it reads: leave out sampler, batch_sampler and "
                             "aspect_ratio_groups")
        if native is not None and isinstance(native.source, Mixture) and \
                reads_per_source(native.source, settings["storage"]):
            if per_record != 1:
                raise ValueError("Order(samples_per_record=) deals one dataset, not a Mixture")
            self._engine = MixedFieldsLoader(
                native.source, batch_size=1 if batch_size is None else batch_size,
                shuffle=bool(shuffle), drop_last=drop_last,
                transforms=settings["dataset"].get("transforms"), pin_memory=pin_memory,
                order_of=explicit, num_workers=num_workers, **settings["order"],
                **settings["batches"], **feed, **settings["storage"])
        elif native is not None:
            self._engine = NativeLoader(
                native.source, batch_size=1 if batch_size is None else batch_size,
                shuffle=bool(shuffle), drop_last=drop_last, transforms=native.transforms,
                pin_memory=pin_memory, order_of=explicit, num_workers=num_workers,
                samples_per_record=per_record, torchvision_steps=native.torchvision_steps,
                **settings["order"],
                **settings["batches"], **feed, **settings["storage"])
            self._notes = native.notes
        else:
            self._engine = PythonDatasetLoader(
                torch, dataset, batch_size=batch_size, shuffle=bool(shuffle), sampler=sampler,
                batch_sampler=batch_sampler, num_workers=num_workers, collate_fn=collate_fn,
                pin_memory=pin_memory, drop_last=drop_last, timeout=dataset_timeout,
                worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
                prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
                in_order=in_order, order=settings["order"], device=feed["device"])
        # The user's dataset object; for a path, what a script reads of one (len, classes).
        self.dataset = self._engine.dataset if isinstance(dataset, (str, bytes, os.PathLike)) \
            else dataset
        if isinstance(dataset, _Source):
            dataset._view = self._engine.dataset  # opened with the loader's storage settings
        self._unbatched = batch_size is None and native is not None  # else DataLoader's own
        # Samples of the dataset's own (a torchvision dataset's Python steps') are collated as
        # DataLoader collates them.
        own = getattr(self._engine, "samples_to_collate", False)
        self._collate = native is not None and (splits_batches(torch, collate_fn) or (
            (own or self._form is not None and native.collated) and not self._unbatched))
        if groups is not None:
            explicit.groups()  # read now: a dataset without sizes fails here, in one line
        self._user_order = batch_sampler if batch_sampler is not None else sampler
        # Where the user's sampler draws, DataLoader's base seed is drawn before it
        # (_draw_base_seed); stoker's own order leaves torch's generators alone.
        self._draws_base_seed = self._user_order is not None
        self._base_seed_drawn = False
        iterable = isinstance(dataset, torch.utils.data.IterableDataset)
        if batch_sampler is not None or iterable:  # DataLoader's own sampler, as it sets it
            self.sampler = sampler if sampler is not None else _InfiniteConstantSampler() \
                if iterable else torch.utils.data.SequentialSampler(self.dataset)
        if batch_sampler is not None:
            self.batch_size, self.drop_last, self.batch_sampler = None, False, batch_sampler
        elif iterable:
            self.batch_size, self.drop_last = batch_size, drop_last
            self.batch_sampler = None if batch_size is None else \
                torch.utils.data.BatchSampler(self.sampler, batch_size, drop_last)
        else:
            self.batch_size, self.drop_last = batch_size, drop_last
            self.sampler = sampler if sampler is not None else \
                sampler_of(self, self.dataset, bool(shuffle))
            self.batch_sampler = None if batch_size is None else \
                LoaderBatchSampler(self, self.sampler, batch_size, drop_last,
                                   explicit if groups is not None else None)
        self._initialized = True

    def __setattr__(self, name, value):
        """DataLoader's rule: what decides the batches is not set after the loader is made."""
        if name in _SET_ONCE and getattr(self, "_initialized", False):
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    # Iteration ---------------------------------------------------------------------------

    def __iter__(self):
        """The next epoch's batches (set_epoch's, else the one after the last finished)."""
        if self._user_order is not None:
            _warn_unsplit(_import_torch(), self._user_order)
            self._user_order = None  # said once
        self._draw_base_seed()
        return self._finished(iter(self._engine))

    def _draw_base_seed(self) -> None:
        """DataLoader draws its workers' base seed from `generator` (else torch's global
        generator) as each iteration starts (once, with persistent workers), before its sampler
        draws anything: drawn here too where the user's sampler draws, so that a sampler drawing
        from the same generator (RandomSampler without a generator, WeightedRandomSampler) gives
        the order it gives under DataLoader. stoker's workers seed each sample themselves."""
        if not self._draws_base_seed or (self._base_seed_drawn and self.persistent_workers):
            return
        torch = _import_torch()
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        self._base_seed_drawn = True

    def epoch(self, epoch: int):
        """An iterator over the batches of epoch `epoch` (from where a restored state left it)."""
        return self._finished(self._engine.epoch(epoch))

    def _finished(self, iteration):
        """`iteration` as the loop sees it: each batch through collate_fn, or one sample at a
        time for batch_size=None."""
        if self._collate:
            iteration = Collated(iteration, self.collate_fn, self._form)
        if self._unbatched:
            iteration = Unbatched(iteration, _import_torch().utils.data.default_convert, self._form)
        return iteration

    def __len__(self):
        """Batches per epoch on this rank (DataLoader's len: for an IterableDataset, its
        len() where it has one, batched)."""
        return len(self._engine)

    def set_epoch(self, epoch: int) -> None:
        """Makes every later iteration be epoch `epoch` (DistributedSampler's convention): the
        order and every random draw follow from it."""
        self._engine.set_epoch(epoch)

    # State -------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Where the loader is (a JSON-serialisable dict): a loader over the same data and seed
        that loads it continues after the last batch yielded before this call."""
        return self._engine.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Continues from `state` (another world size or batch size continues the same global
        order where stoker orders the samples); ValueError naming the key that does not fit."""
        self._engine.load_state_dict(state)

    # Information -------------------------------------------------------------------------

    @property
    def plan(self) -> dict:
        """Each field's steps and where each runs ("native" or "python"), with "notes" saying
        why anything runs in Python (a dataset stoker does not read natively, a step it cannot
        translate)."""
        plan = self._engine.plan
        notes = plan.setdefault("notes", {})
        for key, lines in self._notes.items():  # the dataset's own first
            notes[key] = lines + notes.get(key, [])
        if not notes:
            del plan["notes"]
        if self._collate:
            plan["collate_fn"] = [(getattr(self.collate_fn, "__name__", "collate_fn"), "python")]
        return plan

    @property
    def options(self) -> dict:
        """The options in force, as the engine resolved them (workers, prefetch, rank, ...)."""
        return self._engine.options

    @property
    def fields(self) -> list:
        """The batch's fields, [(name, dtype, per-sample shape)], where stoker builds the batch
        natively ((name, None, None) where Python steps decide); [] for a Python dataset."""
        return self._engine.fields

    @property
    def tuning(self):
        """With Feed(workers="auto"): the tuning so far (what it chose and why); else None."""
        return self._engine.tuning

    def stats(self) -> dict:
        """Time per stage and counts since the loader was made (native data; {} otherwise)."""
        return self._engine.stats()

    def close(self) -> None:
        """Ends the live iteration and stops worker processes (new ones start if iterated)."""
        self._engine.close()

    def __repr__(self):
        return repr(self._engine)

    def __getstate__(self) -> dict:
        """Pickled and copied (copy.deepcopy) as DataLoader is, over a Python dataset: the copy
        has copies of the dataset, sampler and settings and is where this loader was (no live
        iteration). Over data stoker reads natively: TypeError (a native reader is live state)."""
        if not isinstance(self._engine, PythonDatasetLoader):
            raise TypeError("a stoker.Loader over data stoker reads natively cannot be pickled "
                            "or copied (its native reader is live state): make another "
                            "stoker.Loader with the same arguments")
        return self.__dict__

    def __getattr__(self, name: str):
        """The engine's own attributes (its native core, its Python steps: read by tests)."""
        if name.startswith("__") or "_engine" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["_engine"], name)

    def _order(self, epoch: int):
        """This rank's dataset indices of epoch `epoch`, batch after batch (stoker's order)."""
        return self._engine.indices(epoch)

    def _epoch_now(self) -> int:
        return self._engine.next_epoch()

