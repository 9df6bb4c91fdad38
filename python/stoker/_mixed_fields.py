"""A stoker.Mixture read source by source (docs/DATA.md#mixing-sources): its sources have
different fields, or their own transforms. The mixture order over the sources' records deals
the batches (sampler_plan, as the native mixture's loader deals them: the same weights, epochs,
ranks and positions); each source's own native loader reads that source's samples of each batch,
with its fields and transforms, as explicit epochs; the batch joins them: a dict holding each
field collated over the batch's samples whose source has it, in batch order (a field none of
them has is left out), and ``source``, each sample's source index (int64)."""

import hashlib
import json

import numpy as np

from stoker import _stoker
from stoker._data_access import data_access
from stoker._dataset_view import LoaderDataset
from stoker._native_loader import _STATE_FORMAT, _STATE_KEYS, NativeLoader
from stoker._state_shaping import check_shaping, checked_ints, shaping_entries
from stoker.transforms import captions_with

SOURCE = "source"  # the batch's field of each sample's source index


def mixed_view(views: list) -> LoaderDataset:
    """loader.dataset of a mixture read source by source: its records (all the sources'), the
    fields of them all (each once, the first source's schema of it), no classes or samples."""
    fields, seen = [], set()
    for view in views:
        for field in view.fields:
            if field["name"] not in seen:
                seen.add(field["name"])
                fields.append(field)
    return LoaderDataset(" + ".join(v.root for v in views), sum(len(v) for v in views), fields,
                         [], None)


def reads_per_source(mixture, storage: dict) -> bool:
    """Whether `mixture` is read source by source: a source has its own transforms, or the
    sources' stored fields differ (each opened with the loader's `storage` settings)."""
    if any(part.transforms for part in mixture.sources):
        return True
    access = data_access(storage.get("cache_dir"), storage.get("cache_gb"),
                         storage.get("cache_policy", "next-use"))
    schemas = [part.open(**access).schema for part in mixture.sources]
    return any(schema != schemas[0] for schema in schemas[1:])


def _unlike(name: str, parts: list, p: int, q: int, a: str, b: str) -> ValueError:
    return ValueError(f"Mixture: field {name!r} is {a} in source {p} ({parts[p]!r}) and {b} in "
                      f"source {q} ({parts[q]!r}): one batch cannot hold both (make them alike "
                      f"with the sources' transforms)")


def _check_same(state: dict, mine: dict, keys: tuple) -> None:
    """ValueError naming the first of `keys` whose value in `state` is not `mine`'s."""
    for key in keys:
        if state.get(key) != mine[key]:
            raise ValueError(f"state_dict[{key!r}] is {state.get(key)!r}; this loader's is "
                             f"{mine[key]!r}")


class _PartOrder:
    """A source's explicit epoch (NativeLoader's order_of): its samples of each batch of the
    mixture's epoch, set before the epoch starts."""

    name = "mixture"
    repeats = False  # a record the mixture deals twice in an epoch draws alike, on any rank

    def __init__(self, batch_size: int):
        self.batch_size = batch_size
        self.plan = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def bind(self, size, options=None):
        pass

    def largest_batch(self) -> int:
        return self.batch_size

    def batches(self, epoch: int):
        return (*self.plan, {})

    def __len__(self):
        return len(self.plan[1])


class _MixedEpoch:
    """The batches of one epoch of a MixedFieldsLoader, each joined from its sources' pieces;
    after each, the loader's state is the position past it."""

    def __init__(self, loader, epoch: int, start: int):
        self._loader = loader
        self._epoch = epoch
        indices, sizes, self._positions = loader._plan(epoch, start)
        self._source = np.searchsorted(loader._starts[1:], indices, side="right")
        self._ends = np.cumsum(sizes)
        batch_of = np.repeat(np.arange(len(sizes)), sizes)
        self._parts = []
        for p, part in enumerate(loader._parts):
            mine = self._source == p
            counts = np.bincount(batch_of[mine], minlength=len(sizes))
            part._order_of.plan = (indices[mine] - loader._starts[p], counts[counts > 0])
            self._parts.append(part.epoch(epoch) if mine.any() else None)
        self._next = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._ends)

    def __next__(self):
        b = self._next
        if b >= len(self._ends):
            raise StopIteration
        source = self._source[self._ends[b - 1] if b else 0:self._ends[b]]
        pieces = {int(p): next(self._parts[p]) for p in np.unique(source)}
        batch = self._loader._joined(pieces, source)
        self._loader._delivered += np.bincount(source, minlength=len(self._parts))
        self._next = b + 1
        position = int(self._positions[b])
        self._loader._state = (self._epoch + 1, 0) if b + 1 == len(self._ends) else \
            (self._epoch, position)
        return batch

    def close(self):
        for part in self._parts:
            if part is not None:
                part.close()


class MixedFieldsLoader:
    """stoker.Loader's engine for a Mixture read source by source (the module's doc): a
    NativeLoader per source over explicit epochs, the mixture's plan and state here."""

    def __init__(self, mixture, batch_size=256, shuffle=True, seed=0, drop_last=False,
                 transforms=None, batch_format=None, last_batch=None, order_of=None,
                 batch_transform=None, ra_reps=1, **options):
        torch = __import__("torch")
        self._torch = torch
        refused = [(transforms is not None, "the loader's transforms= (give each source its "
                    "own)"), (mixture.transforms is not None, "the Mixture's transforms (give "
                    "each source its own)"),
                   (batch_format not in (None, "dict"), f"batch_format={batch_format!r} (its "
                    f"batches are dicts)"),
                   (order_of is not None, "a sampler, batch_sampler or Subset"),
                   (batch_transform is not None, "batch_transform="),
                   (last_batch == "pad", "last_batch='pad'"), (ra_reps != 1, "ra_reps"),
                   (mixture.batch_cu_seqlens, "return_cu_seqlens='batch'"),
                   (any(captions_with(part.transforms, "packed") for part in mixture.sources),
                    "Tokenize(packed=True) (the batch joins each field's samples)")]
        for bad, what in refused:
            if bad:
                raise ValueError(f"{mixture!r}: sources of different fields (or their own "
                                 f"transforms) are read source by source, which takes no {what}")
        self._mixture = mixture
        self._parts = [NativeLoader(part, batch_size=batch_size, shuffle=shuffle, seed=seed,
                                    drop_last=drop_last, last_batch=last_batch,
                                    transforms=part.transforms, batch_format="dict",
                                    order_of=_PartOrder(batch_size), **options)
                       for part in mixture.sources]
        self._global_batch = batch_size * self._parts[0].options["world_size"]
        sizes = [len(part._native) for part in self._parts]
        self._tokens = [part._native.tokens for part in self._parts]
        self._delivered = np.zeros(len(sizes), np.int64)  # each source's samples, for stats
        self._starts = np.cumsum([0] + sizes)
        self._check_fields()
        # The mixture's samples per epoch: the position after an epoch dealt to one rank.
        self._epoch_size = int(_stoker.sampler_plan(
            int(self._starts[-1]), seed=0, shuffle=False, rank=0, world_size=1,
            batch_size=2**62, last_batch="short", epoch=0, start=0, parts=sizes,
            part_tokens=self._tokens, mixture=self._params())[2][-1])
        first = self._parts[0].options
        self._options = dict(first, last_batch=first["last_batch"] if last_batch is None
                             else last_batch, batch_format="dict")
        self._last_batch = "drop" if drop_last else (last_batch or "short")
        self._options["last_batch"] = self._last_batch
        self._state = (0, 0)  # (epoch, position) after the last batch yielded
        self._resume = False  # load_state_dict positioned the next iteration
        self._epoch = None  # set_epoch's
        self._live = None
        self.dataset = mixed_view([part.dataset for part in self._parts])

    def _check_fields(self) -> None:
        """ValueError for a field two sources give in another dtype or per-sample shape."""
        known = {}
        for p, part in enumerate(self._parts):
            for name, dtype, shape in part.fields:
                if name == SOURCE:
                    raise ValueError(f"Mixture: source {p} ({self._mixture.sources[p]!r}) has a "
                                     f"field {SOURCE!r}, the name the batch gives each "
                                     f"sample's source index")
                if dtype is None or shape is None:  # decided by Python steps
                    continue
                kind = f"{dtype} {list(shape)}"
                q, other = known.setdefault(name, (p, kind))
                if other != kind:
                    raise _unlike(name, self._mixture.sources, q, p, other, kind)

    def _plan(self, epoch: int, start: int = 0):
        o = self._options
        return _stoker.sampler_plan(
            int(self._starts[-1]), seed=o["seed"], shuffle=o["shuffle"], rank=o["rank"],
            world_size=o["world_size"], batch_size=o["batch_size"], last_batch=self._last_batch,
            epoch=epoch, start=start, parts=[int(n) for n in np.diff(self._starts)],
            part_tokens=self._tokens, mixture=self._params())

    def _params(self) -> dict:
        params = self._mixture._params(self._global_batch)
        return dict(params, weights=[float(w) for w in params["weights"]])

    def _joined(self, pieces: dict, source: np.ndarray) -> dict:
        """The batch of the sources' `pieces` ({source: its dict batch of its samples, in
        batch order}) for samples of sources `source`: each field's rows in batch order."""
        torch = self._torch
        batch = {}
        names = list(dict.fromkeys(name for piece in pieces.values() for name in piece))
        for name in names:
            having = [p for p in pieces if name in pieces[p]]
            values = [pieces[p][name] for p in having]
            if len(having) == 1:
                batch[name] = values[0]
                continue
            kept = source[np.isin(source, having)]
            at = np.empty(len(kept), np.int64)  # where each row sits in the concatenation
            offset = 0
            for p in having:
                mine = kept == p
                at[mine] = offset + np.arange(mine.sum())
                offset += int(mine.sum())
            batch[name] = self._concatenated(name, having, values, at)
        batch[SOURCE] = torch.from_numpy(source.astype(np.int64))
        return batch

    def _concatenated(self, name: str, having: list, values: list, at: np.ndarray):
        """The rows of `values` (the sources `having`'s pieces of field `name`) concatenated,
        taken in the order `at`; ValueError naming the sources where they cannot be."""
        torch = self._torch

        def kind(value):
            if isinstance(value, torch.Tensor):
                return f"{str(value.dtype).replace('torch.', '')} {list(value.shape[1:])}"
            return "a list" if isinstance(value, list) else type(value).__name__
        kinds = [kind(v) for v in values]
        for i in range(1, len(values)):
            if kinds[i] != kinds[0] or not isinstance(values[0], (torch.Tensor, list)):
                raise _unlike(name, self._mixture.sources, having[0], having[i], kinds[0],
                              kinds[i])
        if isinstance(values[0], list):  # a field of varying size, as a list of samples
            rows = [row for value in values for row in value]
            return [rows[i] for i in at]
        return torch.cat(values)[torch.from_numpy(at).to(values[0].device)]

    # Iteration ---------------------------------------------------------------------------

    def __iter__(self):
        return self.epoch(self.next_epoch())

    def epoch(self, epoch: int):
        epoch = int(epoch)
        if self._live is not None:
            self._live.close()
        start = self._state[1] if self._resume and self._state[0] == epoch else 0
        self._resume = False
        self._state = (epoch, start)
        self._live = _MixedEpoch(self, epoch, start)
        return self._live

    def __len__(self):
        return len(self._plan(0)[1])

    def next_epoch(self) -> int:
        return self._epoch if self._epoch is not None else self._state[0]

    def set_epoch(self, epoch: int) -> None:
        self._epoch = int(epoch)

    def indices(self, epoch: int):
        return self._plan(epoch)[0]

    # State -------------------------------------------------------------------------------

    def _order_name(self) -> str:
        p = self._params()
        changes = "" if not p["change_at"] and p["share_of"] == "samples" else (
            f"change_at={json.dumps(p['change_at'], separators=(',', ':'))},later_weights="
            f"{json.dumps(p['later_weights'], separators=(',', ':'))},share_of={p['share_of']},")
        return (f"mixture:weights={json.dumps(p['weights'], separators=(',', ':'))},"
                f"samples_per_epoch={p['samples_per_epoch']},until={p['until']},{changes}"
                f"per_source")

    def _dataset_id(self) -> str:
        ids = [part.state_dict()["dataset"] for part in self._parts]
        return hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:16]

    def state_dict(self) -> dict:
        o = self._options
        epoch, position = self._state
        return {"format": _STATE_FORMAT, "seed": o["seed"], "epoch": epoch,
                "position": position, "records": int(self._starts[-1]),
                "dataset": self._dataset_id(), "batch_size": o["batch_size"],
                "world_size": o["world_size"], "shuffle_window": o["shuffle_window"],
                "ra_reps": 1, "order": self._order_name(),
                **shaping_entries(o["shuffle"], self._mixture)}

    def load_state_dict(self, state: dict) -> None:
        """As NativeLoader's: another world size or batch size goes on with the same order; a
        state of another mixture, seed, shuffle, source parameter or data raises ValueError
        naming the key."""
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"not a stoker.Loader state_dict (format {_STATE_FORMAT!r})")
        checked_ints(state, _STATE_KEYS)
        mine = self.state_dict()
        _check_same(state, mine, ("order", "seed"))
        check_shaping(state, self._options["shuffle"], self._mixture)
        _check_same(state, mine, ("records", "dataset", "shuffle_window"))
        if state["position"] >= self._epoch_size:
            raise ValueError(f"the state_dict's position {state['position']} is not inside an "
                             f"epoch of {self._epoch_size} samples")
        if self._live is not None:
            self._live.close()
        self._state = (int(state["epoch"]), int(state["position"]))
        self._resume = True
        self._epoch = None

    # Information -------------------------------------------------------------------------

    @property
    def options(self) -> dict:
        return dict(self._options)

    @property
    def fields(self) -> list:
        """Every source's fields, each once, and ``source``."""
        fields = {}
        for part in self._parts:
            for field in part.fields:
                fields.setdefault(field[0], field)
        return list(fields.values()) + [(SOURCE, "int64", [])]

    @property
    def plan(self) -> dict:
        """Each source's plan, by its index."""
        return {"sources": [part.plan for part in self._parts]}

    @property
    def tuning(self):
        return None

    def stats(self) -> dict:
        """Each source's loader's stats, by its index; each source's samples delivered, and
        their tokens (None: not token data), as the native mixture's."""
        records = np.diff(self._starts)
        return {"sources": [part.stats() for part in self._parts],
                "source_samples": [int(n) for n in self._delivered],
                "source_tokens": [int(n) * t // int(r) if t else None for n, t, r in
                                  zip(self._delivered, self._tokens, records)]}

    def close(self) -> None:
        for part in self._parts:
            part.close()

    def __repr__(self):
        return f"stoker.Loader({self._mixture!r}, batch_size={self._options['batch_size']})"
