"""stoker.Loader over a dataset stoker does not read natively: its ``__getitem__`` runs in
DataLoader's own worker processes (torch's machinery: the same speed as DataLoader with the
same ``num_workers``), under stoker's guarantees:

- the order is stoker's (the native loader's plan over as many samples, _stoker.sampler_plan),
  or the user's sampler's, never the workers';
- every sample's random draws are its own: before ``dataset[i]`` torch's, Python's and NumPy's
  global generators are seeded from (seed, epoch, position; with a user's sampler also the
  rank), so augmentations do not depend on which worker runs them (their states are put back
  after, so the iterating process's draws are not disturbed); a dataset with ``__getitems__``
  is called once per batch with the batch's indices, as DataLoader calls it, its generators
  seeded from the batch's first sample (its draws then depend on the batch, not on each sample
  alone);
- a sample (or collate_fn) that raises comes to the iterating process as its batch
  (_sample_failures.py), raised there in order as stoker.SampleError and its own type; the
  iterator goes on with the next batch, as DataLoader's does (state_dict() counts the failed
  batch as passed);
- ``state_dict()`` says the batches yielded; ``load_state_dict()`` continues after them
  (stoker's order: the global position, so another world size continues the same order).

An IterableDataset is iterated as DataLoader iterates it; resuming skips the batches yielded."""

import pickle
import threading
import weakref

import numpy as np

from stoker import _stoker
from stoker._native_loader import _distributed_defaults, _import_torch, _last_batch
from stoker._python_steps import sample_seed
from stoker._sample_failures import Failure
from stoker._state_shaping import SHUFFLE, check_shuffle, checked_ints
from stoker._stoker_order import stoker_order
from stoker._python_steps import _Seeded as GlobalGenerators



_STATE_FORMAT = "stoker.Loader/python-dataset/1"
# The state's counts and their ranges (the native loader's: its epochs and positions).
_STATE_KEYS = (("seed", 2**64 - 1), ("epoch", _stoker.MAX_EPOCH), ("batches", 2**63 - 1),
               ("position", 2**63 - 1))


class _Seeded:
    """The user's dataset, indexed by (index, seed) pairs: ``dataset[index]`` with torch's,
    Python's and numpy's global generators seeded (in the iterating process their states are
    put back after, so the training loop's draws are not disturbed; a worker's are its own).
    It holds the dataset alone, so that it pickles wherever the dataset does (spawned
    workers)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __getitem__(self, key):
        """``dataset[index]``: any key the sampler gave (a negative index, a dict's key), as
        DataLoader passes it."""
        index, seed = key
        return self._seeded(seed, lambda: self.dataset[index],
                            f"{type(self.dataset).__name__}[{index}]")

    def __getitems__(self, keys):
        """A batch's samples, as DataLoader's fetcher asks for them: through the dataset's own
        ``__getitems__`` where it has one (called once, seeded by the batch's first sample),
        else ``__getitem__`` sample by sample."""
        batched = getattr(self.dataset, "__getitems__", None)
        if not batched:  # DataLoader's test
            samples = []
            for key in keys:
                samples.append(self[key])
                if isinstance(samples[-1], Failure):
                    return samples[-1]
            return samples
        indices = [index for index, _ in keys]
        return self._seeded(keys[0][1], lambda: batched(indices),
                            f"{type(self.dataset).__name__}.__getitems__({indices})")

    @staticmethod
    def _seeded(seed: int, fetch, name: str):
        """fetch() with the global generators seeded from `seed`; a Failure naming `name` where
        it raises."""
        import torch  # imported here, not held: a module cannot be pickled

        generators = GlobalGenerators(torch, np)
        if torch.utils.data.get_worker_info() is not None:  # a worker's own generators
            generators.seed(seed)
            return _named(fetch, name)
        with generators:
            generators.seed(seed)
            return _named(fetch, name)


def _named(fetch, name: str):
    try:
        return fetch()
    except Exception as error:
        return Failure(error, name)


class _WorkerStart:
    """The inner DataLoader's worker_init_fn: makes ``get_worker_info().dataset`` the worker's
    copy of the user's dataset (as DataLoader's is), not the _Seeded wrapper the worker was
    given, then calls the user's `worker_init_fn` (if any). It replaces torch's record of the
    worker (torch.utils.data._utils.worker._worker_info, which get_worker_info returns): the
    WorkerInfo of torch 1.x to 2.x, frozen once made, so a new one."""

    def __init__(self, worker_init_fn):
        self._worker_init_fn = worker_init_fn

    def __call__(self, worker_id: int) -> None:
        from torch.utils.data._utils import worker

        info = worker._worker_info
        worker._worker_info = worker.WorkerInfo(id=info.id, num_workers=info.num_workers,
                                                seed=info.seed, dataset=info.dataset.dataset)
        if self._worker_init_fn is not None:
            self._worker_init_fn(worker_id)


class _Collate:
    """collate_fn (where None, DataLoader's: default_collate, or default_convert unbatched); a
    Failure where it raises, or where a sample failed (passed on)."""

    def __init__(self, torch, collate_fn, batched: bool):
        self._collate_fn = collate_fn or (torch.utils.data.default_collate if batched else
                                          torch.utils.data.default_convert)

    def __call__(self, samples):
        if isinstance(samples, Failure):
            return samples
        try:
            return self._collate_fn(samples)
        except Exception as error:
            name = getattr(self._collate_fn, "__name__", type(self._collate_fn).__name__)
            return Failure(error, f"{name} on {len(samples)} samples")


class _Plan:
    """The batches of the epoch being iterated, as (index, seed) lists (a list, or drawn from a
    user's sampler as DataLoader asks for them), for DataLoader's batch_sampler (or, unbatched,
    its sampler); `length` their number (None: the sampler has no len)."""

    def __init__(self, unbatched: bool):
        self.batches = []
        self.length = 0
        self._unbatched = unbatched

    def __iter__(self):
        if self._unbatched:
            return (batch[0] for batch in self.batches)
        return iter(self.batches)

    def __len__(self):
        if self.length is None:
            raise TypeError("the sampler given has no len()")
        return self.length


class _Epoch:
    """One epoch's batches from the inner DataLoader; counts what it yields, for the state."""

    def __init__(self, owner, epoch: int, start_batch: int, positions):
        self._owner = owner
        self._epoch = epoch
        self._batch = start_batch
        self._positions = positions  # the global position after each batch, or None
        self._here = 0  # batches this iteration yielded
        self._iterator = iter(owner._inner)
        self.live = True
        self.attached = True  # its batches move the loader's state (the latest iteration's do)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._owner._inner)

    def __next__(self):
        if not self.live:
            raise StopIteration
        try:
            batch = next(self._iterator)
        except StopIteration:
            self.live = False
            if self.attached:
                self._owner._finished(self._epoch)
            raise
        position = None if self._positions is None else self._positions[self._here]
        self._batch += 1
        self._here += 1
        if self.attached:
            self._owner._yielded(self._epoch, self._batch, position)
        if isinstance(batch, Failure):  # raised; the next call goes on with the next batch
            raise batch.error(f"epoch {self._epoch}, batch {self._batch - 1}: ") from None
        return self._owner._to_device(batch)

    def close(self):
        self.live = False

    def detach(self):
        """Goes on yielding its batches, as a DataLoader's earlier iterator does beside a newer
        one, without moving the loader's state, which the newer iteration's batches move."""
        self.attached = False


def _in_order(torch, in_order) -> dict:
    """DataLoader's in_order argument where this torch's DataLoader takes it (torch 2.6 on);
    on an older one the default alone, as that DataLoader has no other."""
    import inspect
    if "in_order" in inspect.signature(torch.utils.data.DataLoader.__init__).parameters:
        return {"in_order": in_order}
    if not in_order:
        raise ValueError(f"in_order=False needs torch 2.6's DataLoader or later (this torch is "
                         f"{torch.__version__}, whose DataLoader delivers in order only)")
    return {}

def _sampled(user_batches, seed: int, rank: int, epoch: int, start_batch: int):
    """The user's sampler's batches of epoch `epoch` from `start_batch`, as (index, seed) lists,
    drawn from it as DataLoader asks for them (as DataLoader draws them: an endless sampler too).
    Not a method: a generator left suspended (an epoch not finished) that held its loader would
    make a cycle through the loader's plan (see _live_iteration)."""
    position = 0
    for number, batch in enumerate(user_batches):
        keys = [(index, sample_seed(seed, epoch, rank, position + k, 0))
                for k, index in enumerate(batch)]
        position += len(keys)
        if number >= start_batch:
            yield keys


class PythonDatasetLoader:
    """DataLoader over `dataset` with stoker's order, per-sample seeds and resume (above)."""

    def __init__(self, torch, dataset, *, batch_size, shuffle, sampler, batch_sampler,
                 num_workers, collate_fn, pin_memory, drop_last, timeout, worker_init_fn,
                 multiprocessing_context, prefetch_factor, persistent_workers, in_order, order,
                 device):
        # What a copy is made from (__setstate__).
        self._arguments = {name: value for name, value in locals().items()
                           if name not in ("self", "torch")}
        self._torch = torch
        self._dataset = dataset
        self._iterable = isinstance(dataset, torch.utils.data.IterableDataset)
        # A user's order, batched as DataLoader batches it; None: stoker's order.
        self._user_batches = batch_sampler if sampler is None else \
            torch.utils.data.BatchSampler(sampler, batch_size or 1, drop_last)
        if num_workers > 0 and multiprocessing_context not in (None, "fork"):
            try:
                pickle.dumps(dataset)
            except Exception as error:
                raise ValueError(f"num_workers={num_workers} with a "
                                 f"{multiprocessing_context!r} context sends the dataset to each "
                                 f"worker, and a {type(dataset).__name__} cannot be pickled "
                                 f"({type(error).__name__}: {error}): make it picklable, or use "
                                 "num_workers=0") from None
        rank, world_size = _distributed_defaults(torch, order["rank"], order["world_size"],
                                                 order["mesh"])
        last_batch = _last_batch(drop_last, order["last_batch"])
        self._options = {"seed": order["seed"], "shuffle": shuffle, "rank": rank,
                         "world_size": world_size, "batch_size": batch_size or 1,
                         "last_batch": last_batch, "shuffle_window": order["shuffle_window"],
                         "ra_reps": order["ra_reps"]}
        self._device = torch.device(device)
        self._plan = _Plan(batch_size is None)
        self._batch_size = batch_size
        common = dict(num_workers=num_workers,
                      collate_fn=_Collate(torch, collate_fn, batch_size is not None),
                      pin_memory=pin_memory or self._device.type == "cuda",
                      timeout=timeout if num_workers else 0, worker_init_fn=worker_init_fn,
                      multiprocessing_context=multiprocessing_context,
                      prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
                      **_in_order(torch, in_order),
                      # its own: DataLoader would draw its workers' base seed from torch's
                      # global generator, moving the training loop's draws
                      generator=torch.Generator().manual_seed(order["seed"] % 2**63))
        if self._iterable:
            self._inner = torch.utils.data.DataLoader(dataset, batch_size=batch_size,
                                                      drop_last=drop_last, **common)
        else:
            common["worker_init_fn"] = _WorkerStart(worker_init_fn)
            seeded = _Seeded(dataset)
            if batch_size is None:
                self._inner = torch.utils.data.DataLoader(seeded, batch_size=None,
                                                          sampler=self._plan, **common)
            else:
                self._inner = torch.utils.data.DataLoader(seeded, batch_sampler=self._plan,
                                                          **common)
        self._epoch = None  # set_epoch's
        self._state = (0, 0)  # (epoch, batches of it yielded)
        self._position = 0  # the global position after the last batch yielded (stoker's order)
        self._resume = False
        self._live = None  # a weak reference to the latest iteration (_live_iteration)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        """A copy (pickle, copy.deepcopy) is this loader's arguments and where it is; it starts
        no workers and holds no iteration (a DataLoader's copy neither)."""
        return {"arguments": self._arguments,
                "progress": (self._epoch, self._state, self._position, self._resume)}

    def __setstate__(self, state: dict) -> None:
        self.__init__(_import_torch(), **state["arguments"])
        self._epoch, self._state, self._position, self._resume = state["progress"]

    # Order -------------------------------------------------------------------------------

    def indices(self, epoch: int):
        """This rank's indices of epoch `epoch` in stoker's order."""
        return stoker_order(self._length(), self._options, epoch)[0]

    def next_epoch(self) -> int:
        return self._epoch if self._epoch is not None else self._state[0]

    def _batches(self, epoch: int, start_batch: int):
        """(batches of (index, seed) from batch `start_batch`, their number or None, global
        positions after each or None) of epoch `epoch`."""
        if self._user_batches is not None:
            try:
                length = len(self._user_batches) - start_batch
            except TypeError:  # a sampler without len (a BatchSampler over one raises)
                length = None
            return _sampled(self._user_batches, self._options["seed"], self._options["rank"],
                            epoch, start_batch), length, None
        seed = self._options["seed"]
        start = self._position if self._resume else 0
        indices, sizes, positions = stoker_order(self._length(), self._options, epoch, start)
        batches, first = [], 0
        for size in sizes.tolist():
            batches.append([(int(indices[first + k]),
                             sample_seed(seed, epoch, 0, first + k + start, 0))
                            for k in range(size)])
            first += size
        return batches, len(batches), positions.tolist()

    def _length(self):
        """len(dataset); None for an IterableDataset or a dataset without __len__ in a sampler's
        order. stoker's own order needs it: TypeError in one line where the dataset lacks it."""
        if self._iterable:
            return None
        if hasattr(self._dataset, "__len__"):
            return len(self._dataset)
        if self._user_batches is not None:
            return None
        raise TypeError(f"a {type(self._dataset).__name__} has no __len__, which stoker's own "
                        "order needs: give it one, or pass a sampler (or batch_sampler)")

    # Iteration ---------------------------------------------------------------------------

    def __iter__(self):
        return self.epoch(self.next_epoch())

    def epoch(self, epoch: int):
        """An iteration of epoch `epoch`; an earlier one still going goes on beside it, as a
        DataLoader's does (a nested loop, an evaluation on the training loader), its batches no
        longer counted in the state."""
        with self._lock:
            live = self._live_iteration()
            if live is not None:
                live.detach()
            resumed = self._resume and self._state[0] == epoch
            start_batch = self._state[1] if resumed else 0
            if not resumed:
                self._position = 0
            if self._iterable:
                iteration = _SkippedEpoch(self, epoch, start_batch)
            else:
                self._plan.batches, self._plan.length, positions = self._batches(epoch,
                                                                                 start_batch)
                iteration = _Epoch(self, epoch, start_batch, positions)
            self._resume = False
            self._epoch = None
            self._state = (epoch, start_batch)
            self._live = weakref.ref(iteration)
            return iteration

    def _live_iteration(self):
        """The latest iteration while anything holds it. Weakly held: an iteration holds its
        loader, and a cycle of the two would leave the inner DataLoader's iterator to the garbage
        collector, which closes the workers' queues before the iterator's shutdown puts into
        them, so that DataLoader waited 5 s for each persistent worker and then killed it."""
        return None if self._live is None else self._live()

    def _yielded(self, epoch: int, batches: int, position) -> None:
        """`batches` of epoch `epoch` yielded, the last ending at global `position` (None: not
        stoker's order)."""
        self._state = (epoch, batches)
        if position is not None:
            self._position = position

    def _finished(self, epoch: int) -> None:
        self._state = (epoch + 1, 0)
        self._position = 0

    def _to_device(self, batch):
        if self._device.type == "cpu":
            return batch
        return self._torch.utils._pytree.tree_map(
            lambda x: x.to(self._device, non_blocking=True)
            if isinstance(x, self._torch.Tensor) else x, batch)

    def __len__(self):
        if self._iterable:
            return len(self._inner)
        if self._user_batches is not None:
            return len(self._user_batches)
        return len(stoker_order(self._length(), self._options, self.next_epoch())[1])

    def set_epoch(self, epoch: int) -> None:
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an int >= 0, not {epoch!r}")
        self._epoch = epoch

    # State -------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        epoch, batches = self._state
        return {"format": _STATE_FORMAT, "seed": self._options["seed"], "epoch": epoch,
                "batches": batches, "position": self._position,
                "order": self._order_name(),
                "samples": self._length(),
                "dataset": type(self._dataset).__qualname__, SHUFFLE: self._options["shuffle"]}

    def _order_name(self) -> str:
        """The order the state's position counts in: stoker's own, or the user's sampler (an
        IterableDataset's own)."""
        return "stoker" if self._user_batches is None and not self._iterable else "sampler"

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"not the state_dict of a stoker.Loader over a Python dataset "
                             f"(format {_STATE_FORMAT!r})")
        checked_ints(state, _STATE_KEYS)
        if state.get("order", self._order_name()) != self._order_name():
            raise ValueError(f"state_dict['order'] is {state['order']!r}: its position counts "
                             f"in that order, and this loader's is {self._order_name()!r} (give "
                             f"it the same sampler, or none)")
        if state["seed"] != self._options["seed"]:
            raise ValueError(f"state_dict['seed'] is {state['seed']}; this loader's seed is "
                             f"{self._options['seed']}")
        check_shuffle(state, self._options["shuffle"])
        if state.get("dataset") != type(self._dataset).__qualname__ or \
                state.get("samples") != self._length():
            raise ValueError(f"the state_dict is of a {state.get('dataset')} of "
                             f"{state.get('samples')} samples, not this "
                             f"{type(self._dataset).__qualname__}")
        if self._order_name() == "stoker" and state["position"] > self._length():
            raise ValueError(f"the state_dict's position {state['position']} is past an epoch "
                             f"of {self._length()} samples")
        with self._lock:
            live = self._live_iteration()
            if live is not None:
                live.close()
            self._state = (state["epoch"], state["batches"])
            self._position = state["position"]
            self._resume = True
            self._epoch = None

    # Information -------------------------------------------------------------------------

    @property
    def plan(self) -> dict:
        name = type(self._dataset).__name__
        return {"dataset": [(f"{name}.__getitem__", "python")],
                "notes": {"dataset": [f"stoker does not read a {name} natively: its own "
                                      "__getitem__ runs in DataLoader's worker processes, in "
                                      "stoker's order, each sample seeded"]}}

    @property
    def options(self) -> dict:
        return dict(self._options, num_workers=self._inner.num_workers,
                    device=str(self._device))

    @property
    def fields(self) -> list:
        return []

    @property
    def tuning(self):
        return None

    def stats(self) -> dict:
        return {}

    def close(self) -> None:
        with self._lock:
            live = self._live_iteration()
            if live is not None:
                live.close()
            self._inner._iterator = None

    def __repr__(self):
        return (f"stoker.Loader({type(self._dataset).__name__}, batch_size={self._batch_size}, "
                f"num_workers={self._inner.num_workers})")


class _SkippedEpoch(_Epoch):
    """An IterableDataset's epoch, its first `start_batch` batches skipped (a resume)."""

    def __init__(self, owner, epoch: int, start_batch: int):
        super().__init__(owner, epoch, start_batch, None)
        for _ in range(start_batch):
            next(self._iterator)
