"""NativeLoader: batches of data stoker reads itself (a dataset, tars, Parquet, an image folder),
built by native threads as torch tensors; stoker.Loader (loader.py) puts DataLoader's arguments
in front of it."""

from __future__ import annotations

import hashlib
import json
import numbers
import operator
import os
import re
import threading
import warnings
import weakref
from typing import Optional

import numpy as np

from stoker import _cu_seqlens, _device, _stoker
from stoker._data_access import data_access
from stoker._paths import native_path
from stoker.sources import as_source
from stoker._dataset_view import LoaderDataset
from stoker._batch_transforms import native_call
from stoker._joint_python import joint_units
from stoker._nested import nested_fields
from stoker._python_pool import PythonPool
from stoker._python_steps import BatchTransform, FieldSteps, PythonSteps, step_name
from stoker._state_shaping import check_shaping, checked_ints, shaping_entries
from stoker._torchvision_samples import TorchvisionSteps, step_inputs
from stoker._wrapped import ChangedFields, Wrapped as _Wrapped
from stoker._caption_steps import ATTENTION_MASK, CaptionSteps
from stoker.transforms import (Tokenize, call_text, defer_normalization, is_variable,
                               captions_with, joint_outputs, plan_fields,
                               varies_in_rows_only)

__all__ = ["NativeLoader"]

_STATE_FORMAT = "stoker.Loader/1"
# The integers of a state_dict and their largest values (the native types': seed uint64, epoch
# the loader's largest, position int64, records uint64).
_STATE_KEYS = (("seed", 2**64 - 1), ("epoch", _stoker.MAX_EPOCH), ("position", 2**63 - 1),
               ("records", 2**64 - 1))


def _int(name: str, value, minimum: int, maximum: int) -> int:
    """`value` as an int in [minimum, maximum]. For the loader's options that range is the
    native type's: their own limits are checked once, by the native loader, naming the option."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be in [{minimum}, {maximum}], not {value}")
    return int(value)


_INT32 = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)


def _count(name: str, value, minimum: int, auto: bool = False):
    """A count option as the native loader takes it: None (its default), "auto" where `auto`
    allows it, or an int of at least `minimum` (the largest is the native loader's to check)."""
    if value is None:
        return None
    if isinstance(value, str) and auto:
        if value != "auto":
            raise ValueError(f"{name} must be an int, None or 'auto', not {value!r}")
        return value
    value = _int(name, value, *_INT32)
    if value < minimum:
        choices = ", None or 'auto'" if auto else " or None"
        raise ValueError(f"{name} must be an int >= {minimum}{choices}, not {value}")
    return value


def _text(name: str, value) -> str:
    """A setting spelt by name ("once", "raise"): the native loader checks the name."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _last_batch(drop_last, last_batch) -> str:
    """The native last_batch mode from DataLoader's `drop_last` and stoker's `last_batch`."""
    if last_batch is None:
        return "drop" if drop_last else "short"
    if last_batch not in _stoker.LAST_BATCH_MODES:
        raise ValueError(f"last_batch must be one of {', '.join(_stoker.LAST_BATCH_MODES)}, "
                         f"not {last_batch!r}")
    if drop_last and last_batch != "drop":
        raise ValueError(f"drop_last=True contradicts last_batch={last_batch!r}")
    return last_batch


def _shuffle_window(value) -> int:
    """The native shuffle window of Python's "all" (0: the global shuffle) or a number of
    shards >= 1 (the largest is the native loader's to check)."""
    if value == "all" and isinstance(value, str):
        return 0
    if isinstance(value, str):
        raise ValueError(f"shuffle_window must be 'all' or an int >= 1, not {value!r}")
    value = _int("shuffle_window", value, *_INT64)
    if value < 1:
        raise ValueError(f"shuffle_window must be 'all' or an int >= 1, not {value}")
    return value


VALID = "valid"  # the mask field of last_batch="pad"

# The fields of an image classification dataset's samples, as torchvision's ImageFolder gives
# them: with DataLoader's default_collate its batches are lists [images, labels].
DEFAULT_TUPLE = ("image", "label")


def _classification(transforms, schema: list) -> bool:
    """Whether a loader's samples are an image classification dataset's (image, label), as
    torchvision's ImageFolder gives them: the dataset has both fields and `transforms` names no
    other."""
    names = {f["name"] for f in schema}
    mapping = transforms if isinstance(transforms, dict) else {}
    return set(DEFAULT_TUPLE) <= names and set(mapping) <= set(DEFAULT_TUPLE) and \
        all(mapping.get(name, True) is not None for name in DEFAULT_TUPLE)


def _batch_names(batch_format) -> Optional[tuple]:
    """The field names of a `batch_format` that is a sequence of them (else None), checked
    for type and repeats; "dict", "tuple" and None pass through."""
    if batch_format is None or batch_format in ("dict", "tuple"):
        return None
    if isinstance(batch_format, str) or not isinstance(batch_format, (tuple, list)):
        raise ValueError(f"batch_format must be 'dict', 'tuple', None or a sequence of field "
                         f"names, not {batch_format!r}")
    names = tuple(batch_format)
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"batch_format must name at least one field, each a str, not "
                         f"{batch_format!r}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"batch_format names {', '.join(map(repr, repeated))} twice")
    return names


def _transforms_for_names(transforms, names: tuple, schema: list, pad: bool,
                          added: dict):
    """`transforms` as a mapping that leaves out the dataset's fields `names` does not name
    (so they are never read); ValueError for a name the dataset lacks or the transforms drop.
    `added`: {name the loader adds: the field it comes with} (max_seqlen, attention_mask)."""
    fields = [f["name"] for f in schema]
    # A padded field's sizes (NAME_sizes) stand for the field, as what the loader adds does.
    names = tuple(added[n] if n in added else
                  n[:-len("_sizes")] if n.endswith("_sizes") and n[:-len("_sizes")] in fields
                  else n for n in names)
    unknown = [n for n in names if n not in fields and not (pad and n == VALID)]
    if unknown:
        extra = f" (and {VALID!r} with last_batch='pad')" if not pad else f" and {VALID!r}"
        raise ValueError(f"batch_format names {', '.join(map(repr, unknown))}, which the "
                         f"dataset lacks (fields: {', '.join(fields)}{extra})")
    if transforms is None:
        mapping = {}
    elif isinstance(transforms, dict):
        mapping = dict(transforms)
    else:
        mapping = {"image": transforms}  # field_specs says if the dataset has no "image"
    dropped = [n for n in names if n in mapping and mapping[n] is None]
    if dropped:
        raise ValueError(f"batch_format names {', '.join(map(repr, dropped))}, which the "
                         "transforms leave out (None)")
    jointly = joint_outputs(mapping, schema)
    untransformed = [f["name"] for f in schema if f["dtype"] == "bytes" and f["name"] in names
                     and f["name"] not in mapping and f["name"] != "image"
                     and f["name"] not in jointly]
    if untransformed:
        raise ValueError(f"batch_format names the bytes field{'s' * (len(untransformed) > 1)} "
                         f"{', '.join(map(repr, untransformed))}: give "
                         f"{'them' if len(untransformed) > 1 else 'it'} a transform, "
                         f"stoker.transforms.RawBytes(max_length) for the bytes as stored")
    for name in fields:
        if name not in names:
            mapping[name] = None
    return mapping


def _added_fields(source, transforms, schema: list) -> dict:
    """{field the loader adds to a batch: the field it comes with}: max_seqlen with a flattened
    cu_seqlens (_cu_seqlens.py), attention_mask with a caption whose Tokenize returns one,
    cu_seqlens, max_seqlen and position_ids with a packed caption; ValueError where two fields
    would add one name, or one would take a field's name (one the transforms keep)."""
    added = {_cu_seqlens.LONGEST: _cu_seqlens.FIELD} if source.batch_cu_seqlens else {}
    claims = [(ATTENTION_MASK, field, "return_attention_mask")
              for field in captions_with(transforms, "return_attention_mask")]
    claims += [(name, field, "packed") for field in captions_with(transforms, "packed")
               for name in _cu_seqlens.PACKED]
    dropped = {n for n, t in transforms.items() if t is None} if isinstance(transforms, dict) \
        else set()
    stored = {f["name"] for f in schema} - dropped
    for name, field, option in claims:
        others = [other for n, other, _ in claims if n == name and other != field]
        if others or name in stored:
            taken = f"fields {field!r} and {others[0]!r} both return" if others else \
                f"the dataset has a field {name!r}, and field {field!r} returns"
            raise ValueError(f"Tokenize({option}=True): {taken} {name!r}: one of them, or "
                             f"leave the dataset's out (transforms={{{name!r}: None}})")
        added[name] = field
    return added


_VARIABLE_FORMS = ("list", "padded", "nested")


def _variable_forms(variable, specs: list, schema: list) -> dict:
    """{field: "list", "padded" or "nested"} for the variable fields of `specs` (RawBytes,
    DecodeImage, stored variable-length fields of `schema`), from the loader's `variable`: one
    form for all, or a mapping {field: form} (the rest "list"); ValueError naming a bad form, a
    field that does not vary, or "nested" for one that varies in more than its rows."""
    names = [s["name"] for s in specs if is_variable(s, schema)]
    if isinstance(variable, dict):
        fixed = [n for n in variable if n not in names]
        if fixed:
            raise ValueError(f"variable names {', '.join(map(repr, fixed))}, which "
                             f"{'is not a field' if len(fixed) == 1 else 'are not fields'} of "
                             f"varying size (those: {', '.join(names) or 'none'})")
        forms = {n: variable.get(n, "list") for n in names}
    else:
        forms = {n: variable for n in names}
    by_name = {s["name"]: s for s in specs}
    for name, form in forms.items():
        if form not in _VARIABLE_FORMS:
            raise ValueError(f"variable: field {name!r} must be 'list', 'padded' or 'nested', "
                             f"not {form!r}")
        if form == "nested" and not varies_in_rows_only(by_name[name], schema):
            raise ValueError(f"variable: field {name!r} varies in more than its first dimension; "
                             "'nested' (torch's jagged layout) takes one: 'list' or 'padded'")
    return forms


def _check_sizes_names(forms: dict, specs: list) -> None:
    """ValueError where a padded or nested field's sizes, NAME_sizes, would take the name of a
    field the batch holds (it would silently replace it, or be lost)."""
    delivered = {s["name"] for s in specs}
    for name, form in forms.items():
        if form in ("padded", "nested") and f"{name}_sizes" in delivered:
            raise ValueError(f"variable: field {name!r} {form} comes with its sizes as "
                             f"'{name}_sizes', a field the dataset has too: leave that one out "
                             f"(transforms={{'{name}_sizes': None}}) or take {name!r} as a "
                             "'list'")


def _warn_gray_color_jitter(specs: list, schema: list) -> None:
    """Warns where ColorJitter's saturation or hue (natively, or inside a RandomApply or
    RandomChoice) meets a 1-channel field: torchvision leaves such images unchanged by them, and
    so does stoker, but not in silence."""
    shapes = {f["name"]: f["shape"] for f in schema}
    for spec in specs:
        shape = shapes.get(spec["name"])
        if not spec["ops"] or not shape or shape[0] != 1:
            continue
        calls = [op for op in spec["ops"] if op["op"] == "color_jitter"]
        for op in spec["ops"]:  # a combinator's calls: "[color_jitter:k=v,...;NAME]"
            for text in re.findall(r"color_jitter:([^;\]]*)", str(op.get("ops", ""))):
                calls.append(dict(pair.split("=", 1) for pair in text.split(",") if "=" in pair))
        if any(float(call.get(k, 0) or 0) != 0 for call in calls for k in ("saturation", "hue")):
            warnings.warn(f"field '{spec['name']}' has 1 channel: ColorJitter's saturation and "
                          f"hue leave it unchanged (as torchvision's do)", stacklevel=3)


class _Formatted(_Wrapped):
    """An iteration whose dict batches become sequences of the fields `names` in that order:
    lists (default_collate's form of tuple samples) or tuples. Taken by itemgetter, in C, in
    its own __next__ (no change()): a token file's batch takes microseconds, and each Python
    call counts. Tuples straight from the native epoch need none (LoaderEpoch.as_tuple, where
    no other step comes between)."""

    def __init__(self, inner, names: tuple, as_list: bool):
        super().__init__(inner)
        fields = operator.itemgetter(*names)
        self._fields = fields if len(names) > 1 else lambda batch: (fields(batch),)
        self._as_list = as_list

    def __next__(self):
        fields = self._fields(next(self.inner))
        return list(fields) if self._as_list else fields


class _BatchTransformEpoch(_Wrapped):
    """An iteration whose batches (as the loader yields them) go through its batch transform;
    ``state()`` gives the loader's (seed, epoch, position) after the batch just made."""

    def __init__(self, inner, transform: BatchTransform, epoch: int, state):
        super().__init__(inner)
        self._transform = transform
        self._epoch = epoch
        self._state = state
        self._index = 0

    def change(self, batch):
        self._index += 1
        return self._transform.apply(batch, self._epoch, self._index - 1, self._state()[2])


class _SourceNotes(_Wrapped):
    """An iteration after each of whose batches ``tell`` says what the dataset's source noted
    since (a damaged transcode-cache file rebuilt)."""

    def __init__(self, inner, tell):
        super().__init__(inner)
        self._tell = tell

    def change(self, batch):
        self._tell()
        return batch


def _python_steps(torch, plan, seed, rank, on_error, python_input, python_workers,
                  python_parallel, python_timeout, pin, forms, batch_size, num_workers=0,
                  torchvision_inputs=None):
    """The loader's Python steps: each field's (FieldSteps; a torchvision dataset's,
    TorchvisionSteps, given `torchvision_inputs`, {field: "pil" or "tensor"}), or the steps
    after a joint transform on the whole sample (JointSteps, the joint fields in `forms`), run
    in the iterating thread or threads (PythonSteps) or by worker processes (PythonPool, sized
    for batches of `batch_size`).
    python_workers None: DataLoader's `num_workers` (where, for processes, every step can be
    sent to one; else the iterating thread)."""
    if python_parallel not in ("processes", "threads"):
        raise ValueError(f"python_parallel must be 'processes' or 'threads', not "
                         f"{python_parallel!r}")
    if python_input not in (None, "tensor", "pil"):
        raise ValueError(f"python_input must be None, 'tensor' or 'pil', not {python_input!r}")
    if isinstance(python_timeout, bool) or not isinstance(python_timeout, numbers.Real) or \
            not python_timeout > 0:
        raise ValueError(f"python_timeout must be a number of seconds > 0, not "
                         f"{python_timeout!r}")
    if plan.joint is not None:
        units = joint_units(torch, plan.joint, forms)
    elif torchvision_inputs is not None:
        units = {field: TorchvisionSteps(torch, steps, field, torchvision_inputs[field])
                 for field, steps in plan.python.items()}
    else:
        units = {field: (CaptionSteps if isinstance(steps[0], Tokenize) else FieldSteps)(
            torch, steps, field, python_input) for field, steps in plan.python.items()}
    if python_parallel == "threads":
        if python_workers is None:
            python_workers = num_workers
        python_workers = _int("python_workers", python_workers, 0, 1024)
        return PythonSteps(torch, units, seed, rank, on_error, python_workers,
                           float(python_timeout))

    def pool():
        return PythonPool(torch, units, seed, rank, on_error, python_workers,
                          float(python_timeout), pin, batch_size)

    if python_workers is None:
        python_workers = num_workers if units else 0
        if python_workers:
            try:
                return pool()
            except ValueError:  # a step that cannot go to a process: run them here
                python_workers = 0
    python_workers = _int("python_workers", python_workers, 0, 1024)
    if python_workers and units:
        return pool()
    return PythonSteps(torch, units, seed, rank, on_error, 0, float(python_timeout))


class _FlatCuSeqlens(_Wrapped):
    """An iteration whose batches' cu_seqlens are the flattened batch's (_cu_seqlens.py)."""

    def __init__(self, inner, torch):
        super().__init__(inner)
        self._torch = torch

    def change(self, batch):
        return _cu_seqlens.flatten_cu_seqlens(self._torch, batch)


class _GoodBatches(_Wrapped):
    """An iteration under on_error="skip" that leaves out the batches whose every sample the
    Python steps failed (the native loader leaves out those whose every record was bad, with
    the same errors): never an empty batch. stoker.Error, one line, where leaving one out would
    give rank `rank` of `world_size` > 1 fewer batches than its peers, and where epoch `epoch`
    of `dataset` has no good record in its first ALL_BAD_RECORDS (or in all of it)."""

    def __init__(self, inner, dataset: str, epoch: int, batch_size: int, rank: int,
                 world_size: int):
        super().__init__(inner)
        self._where = (dataset, epoch, batch_size, rank, world_size)
        self._index = 0  # of the next batch
        self._good = False  # a batch with a record came

    def __next__(self):
        dataset, epoch, batch_size, rank, world_size = self._where
        while True:
            try:
                batch = next(self.inner)
            except StopIteration:
                if self._index and not self._good:
                    self._none_good()
                raise
            self._index += 1
            if len(next(iter(batch.values()))):
                self._good = True
                return batch
            if world_size > 1:
                raise _stoker.Error(
                    f"on_error='skip': every record of batch {self._index - 1} of epoch {epoch} "
                    f"of {dataset} on rank {rank} was bad, and leaving the batch out would give "
                    f"this rank fewer batches than its {world_size - 1} peers (which would wait "
                    "for it): remove the bad records (on_error='raise' names the first and why)")
            if not self._good and self._index * batch_size >= _stoker.ALL_BAD_RECORDS:
                self._none_good()

    def _none_good(self):
        dataset, epoch = self._where[:2]
        raise _stoker.Error(
            f"on_error='skip': no record of epoch {epoch} of {dataset} was good in its first "
            f"{self._index} batches (all left out): check the data (on_error='raise' names the "
            "first bad record and why)")


class _RefusedBatches(_Wrapped):
    """A native explicit epoch with its sampler's refused batches ({number of a kept batch:
    [the message of each batch refused right before it]}, ExplicitOrder.sampled) back in
    place: each raises IndexError when its turn comes, and the iteration goes on after it, as
    DataLoader's fetch of that batch raises. `first`: the number of the native epoch's first
    batch (a resumed epoch starts after some)."""

    def __init__(self, inner, refused: dict, first: int):
        super().__init__(inner)
        self._refused = {number: list(messages) for number, messages in refused.items()
                         if number >= first}
        self._next = first  # the number of the native epoch's next batch

    def __next__(self):
        waiting = self._refused.get(self._next)
        if waiting:
            raise IndexError(waiting.pop(0))
        batch = next(self.inner)
        self._next += 1
        return batch

    def __len__(self):
        return len(self.inner) + sum(len(messages) for messages in self._refused.values())

    @property
    def last_index(self):
        return self.inner.last_index

    @property
    def last_records(self):
        return self.inner.last_records


class _StateOf:
    """An iteration that runs ahead of the batches it yields, as CudaEpoch takes a native
    loader: ``state()`` is its ``state``."""

    def __init__(self, iteration):
        self._iteration = iteration

    def state(self):
        return self._iteration.state


class _ValidMasks(_Wrapped):
    """A native epoch whose batches gain VALID: a bool [batch_size] tensor, False for the
    padding at the batch's end (samples repeated from the epoch's start)."""

    def __init__(self, torch, native_epoch):
        super().__init__(native_epoch)
        self._torch = torch

    def change(self, batch):
        size = len(next(iter(batch.values())))
        valid = self._torch.ones(size, dtype=self._torch.bool)
        valid[size - self.inner.last_padding:] = False
        batch[VALID] = valid
        return batch


class _FirstBatchEpoch:
    """``iter(loader)``: an iteration whose epoch is chosen when its first batch (or its len) is
    asked for, as a DataLoader's DistributedSampler draws its order then; so a set_epoch
    between iter() and the first batch counts (Lightning sets the epoch there)."""

    def __init__(self, start, started=None):
        self._start = start  # () -> the iteration, Loader.epoch of the epoch chosen
        self._started_hook = started  # (self) -> None, once started
        self._iteration = None

    def _started(self):
        if self._iteration is None:
            self._iteration = self._start()
            if self._started_hook is not None:
                self._started_hook(self)
        return self._iteration

    def end(self, why: str) -> None:
        """Makes the next batch asked for raise RuntimeError(why): its iteration was ended."""
        self._iteration = _Ended(why)

    def __iter__(self):
        return self

    def __next__(self):  # one Python call a batch once started
        iteration = self._iteration
        return next(iteration if iteration is not None else self._started())

    def __len__(self):
        return len(self._started())

    def close(self):
        if self._iteration is not None:
            self._iteration.close()


class _Ended:
    """An iteration a newer one of its loader ended: each next() says so."""

    def __init__(self, why: str):
        self._why = why

    def __next__(self):
        raise RuntimeError(self._why)

    def __len__(self):
        return 0

    def close(self):
        pass


def _env_int(name: str) -> Optional[int]:
    text = os.environ.get(name)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"the environment variable {name}={text!r} is not an int") from None


def _mesh_shard(mesh, rank, world_size):
    """rank and world_size from a 1-D DeviceMesh: this process's index in it and its size."""
    if rank is not None or world_size is not None:
        raise ValueError("give mesh or rank/world_size, not both")
    if not all(hasattr(mesh, name) for name in ("ndim", "get_local_rank", "size")):
        raise TypeError(f"mesh must be a torch.distributed DeviceMesh, not "
                        f"{type(mesh).__name__}")
    if isinstance(mesh.ndim, bool) or not isinstance(mesh.ndim, numbers.Integral):
        raise TypeError(f"mesh.ndim must be an int, not {type(mesh.ndim).__name__}: mesh must be "
                        f"a torch.distributed DeviceMesh")
    if mesh.ndim != 1:
        names = getattr(mesh, "mesh_dim_names", None) or ()
        raise ValueError(f"mesh has {mesh.ndim} dimensions {tuple(names)}: pass its "
                         f"data-parallel one, e.g. mesh[{(names or ('dp',))[0]!r}]")
    return mesh.get_local_rank(), mesh.size()


def _distributed_defaults(torch, rank, world_size, mesh=None):
    """rank and world_size: `mesh`'s (a 1-D DeviceMesh, the data-parallel dimension), else as
    given, else torch.distributed's when it is initialised, else the RANK / WORLD_SIZE
    environment variables, else 0 and 1. A world_size larger than torch.distributed's (shards
    no process reads) raises ValueError saying how to reshard."""
    if mesh is not None:
        return _mesh_shard(mesh, rank, world_size)
    dist = torch.distributed
    initialized = dist.is_available() and dist.is_initialized()
    if rank is None or world_size is None:
        if initialized:
            default_rank, default_world = dist.get_rank(), dist.get_world_size()
        else:
            default_rank, default_world = _env_int("RANK"), _env_int("WORLD_SIZE")
        rank = rank if rank is not None else (default_rank if default_rank is not None else 0)
        world_size = world_size if world_size is not None else (
            default_world if default_world is not None else 1)
    processes = dist.get_world_size() if initialized else None
    if processes is not None and isinstance(world_size, numbers.Integral) and \
            world_size > processes:
        raise ValueError(
            f"world_size={world_size}, but torch.distributed runs {processes} "
            f"process{'es' if processes > 1 else ''}: leave rank and world_size out (or pass "
            f"mesh=) to shard over this run, and load_state_dict() a world size {world_size} "
            f"run's state to reshard its epoch")
    return rank, world_size


def _dataset_id(native, files: list) -> str:
    """A dataset's identity for state_dict: a digest of its shards' names, record counts and
    index checksums (its manifest's) and, for data read in place, of its files' blocks (their
    sizes and modification times or ETags), so that a state restores only into the dataset it
    was taken of, unchanged."""
    text = json.dumps([list(shard) for shard in native.shards])
    if files:  # a stoker dataset's id stays what it was before files were kept
        text += json.dumps([block[2] for block in files])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _files_difference(saved, current: list) -> str:
    """The first file that differs between a state's "files" and `current` (one phrase), or ""
    where the state keeps none (a stoker dataset's, or one saved before) or is not readable."""
    if not saved or not isinstance(saved, list) or \
            not all(isinstance(b, list) and len(b) == 3 and all(isinstance(x, str) for x in b)
                    for b in saved):
        return ""
    return _stoker.LoaderCore.file_blocks_difference(saved, current)


def _import_torch():
    """torch, or ImportError in one line saying to install it (the rest of stoker needs none)."""
    try:
        import torch
    except ImportError:
        raise ImportError("stoker.Loader needs PyTorch, which this Python cannot import: "
                          "pip install torch") from None
    return torch


def _tensor_from_dlpack(torch):
    """The cheapest DLPack capsule -> tensor call this torch has."""
    return getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack


class NativeLoader:
    """Batches of data stoker reads natively (stoker.Loader's engine: loader.py gives it
    DataLoader's arguments and the settings groups).

    ``path``: a dataset directory, an image folder read in place (``stoker.ImageFolder``) or
    a dataset's ``s3://`` or ``http(s)://`` URL (cached in ``cache_dir``, ``cache_gb``).
    ``transforms``: {field: transform} or one transform for "image" (stoker.transforms, or
    torchvision's and timm's, translated; what cannot be runs in Python worker processes);
    torchvision v2's on a detection dataset move its image, boxes, labels and masks together.
    Fields come as stored otherwise, as tensors viewing pooled buffers (no copy: ``.clone()``
    what you keep). ``batch_format``: field names for tuples, "tuple" or "dict";
    ``variable``: "list", "padded" (with NAME_sizes) or "nested" (torch's jagged nested tensor,
    for fields that vary in their first dimension only) for fields of varying size (on a CUDA
    ``device`` too).

    ``loader.set_epoch(e)`` then ``for batch in loader``; batch b of an epoch depends on
    (seed, epoch, rank, world_size, batch_size, last_batch, shuffle_window, ra_reps), never
    on ``workers`` (None: a thread per core; "auto": tuned). ``rank``/``world_size`` default
    to torch.distributed's. ``last_batch``: "short", "drop" or "pad" (a ``valid`` mask).
    ``state_dict()``/``load_state_dict()`` resume mid-epoch. ``device="cuda"`` copies batches
    ahead on a side stream. One thread at a time uses a Loader. ``torchvision_steps``: the
    data is a torchvision dataset's, whose Python steps run as in its ``__getitem__``
    (_torchvision_samples.TorchvisionSteps).

    Every argument in full: docs/PYTHON-LOADER.md, "stoker.Loader's arguments in full".
    """

    def __init__(self, path, batch_size=256, shuffle=True, seed=0, drop_last=False,
                 workers=None, prefetch=None, transforms=None, device="cpu", rank=None,
                 world_size=None, verify="once", on_error="raise", normalize_on_device=False,
                 last_batch=None, mesh=None, shuffle_window="all", cache_dir=None,
                 cache_gb=None, cache_policy="next-use", batch_format=None,
                 batch_transform=None, python_input=None, ra_reps=1, python_workers=None,
                 python_parallel="processes", python_timeout=300, variable="list",
                 transcode_cache=False, pin_memory=False, order_of=None, num_workers=0,
                 samples_per_record=1, torchvision_steps=False):
        torch = _import_torch()
        self._torch = torch
        # str, bytes, os.PathLike (the name need not be UTF-8) or a source (stoker.ImageFolder,
        # stoker.Parquet, stoker.Mixture)
        source = as_source(path)
        path = source._path()
        batch_size = _int("batch_size", batch_size, *_INT64)
        # A user's sampler or batch sampler (samplers.ExplicitOrder) orders the epochs instead
        # of stoker's plan; the buffers hold its largest batch.
        self._order_of = order_of
        if order_of is not None:
            batch_size = max(batch_size, order_of.largest_batch())
        seed = _int("seed", seed, 0, 2**64 - 1)
        # The loader settings (_stoker.LOADER_SETTINGS) as Python spells them, for the native
        # loader's table of settings to parse (None: the default) and check.
        settings = {"workers": _count("workers", workers, 0, auto=True),
                    "prefetch": _count("prefetch", prefetch, 1),
                    "verify": _text("verify", verify), "on_error": _text("on_error", on_error),
                    "shuffle_window": _shuffle_window(shuffle_window),
                    "ra_reps": _count("ra_reps", ra_reps, 1)}
        rank, world_size = _distributed_defaults(torch, rank, world_size, mesh)
        world_size = _int("world_size", world_size, *_INT32)
        rank = _int("rank", rank, *_INT32)
        last_batch = _last_batch(drop_last, last_batch)
        self._device = _device.resolve(torch, device)
        cuda = self._device.type == "cuda"
        if normalize_on_device and not cuda:
            raise ValueError("normalize_on_device=True needs device='cuda' (on the CPU the "
                             "workers normalise, in the same pass as the crop)")
        access = data_access(cache_dir, cache_gb, cache_policy)
        if not isinstance(transcode_cache, bool):
            raise TypeError(f"transcode_cache must be True or False, not "
                            f"{type(transcode_cache).__name__}")
        self._native = source.open(shuffle_window=settings["shuffle_window"],
                                   transcode_cache=transcode_cache,
                                   global_batch=batch_size * world_size, **access)
        # Each record K samples an epoch: the "per_record" order, its positions K x records.
        per_record = _int("samples_per_record", samples_per_record, 1, 65536)
        self._native.set_samples_per_record(per_record, settings["shuffle_window"] or 0)
        if order_of is not None:
            order_of.bind(len(self._native))
        names = _batch_names(batch_format)
        classified = batch_format is None and _classification(transforms, self._native.schema)
        if classified:
            names = DEFAULT_TUPLE
        self._added = _added_fields(source, transforms, self._native.schema)
        if names is not None:
            transforms = _transforms_for_names(transforms, names, self._native.schema,
                                               last_batch == "pad", self._added)
        plan = plan_fields(transforms, self._native.schema)
        specs = plan.specs
        if last_batch == "pad" and any(spec["name"] == VALID for spec in specs):
            raise ValueError(f"last_batch='pad' adds the field {VALID!r}, which {path} has: "
                             f"leave it out (transforms={{{VALID!r}: None}})")
        # A field of varying size with Python steps comes to them as a list of its samples;
        # they make it one batch tensor. The steps after a joint transform read either form
        # and give back the one asked for.
        forms = {name: form for name, form in
                 _variable_forms(variable, specs, self._native.schema).items()
                 if plan.joint or name not in plan.python}
        self._flat_cu_seqlens = source.batch_cu_seqlens and _cu_seqlens.FIELD in forms
        if self._flat_cu_seqlens:  # read padded, then flattened (_cu_seqlens.py)
            forms[_cu_seqlens.FIELD] = "padded"
            _cu_seqlens.check_batch(batch_size, next(
                f["shape"][0] for f in self._native.schema if f["name"] == "input_ids"))
        for steps in plan.python.values():
            if isinstance(steps[0], Tokenize) and steps[0].packed:
                _cu_seqlens.check_batch(batch_size, steps[0].context_length,
                                        "Tokenize(packed=True)", "context_length")
        _warn_gray_color_jitter(specs, self._native.schema)
        _check_sizes_names(forms, specs)
        specs = [dict(s, padded=True) if forms.get(s["name"]) in ("padded", "nested") else s
                 for s in specs]
        self._nested = [name for name, form in forms.items() if form == "nested"]
        self._boolean = [spec["name"] for spec in specs if spec["name"] in source.boolean_fields]
        deferred = {}
        if normalize_on_device:  # not where Python steps follow it, nor on a varying size
            _, deferred = defer_normalization([s for s in specs if s["name"] not in plan.python
                                               and s["name"] not in forms])
            specs = [defer_normalization([s])[0][0] if s["name"] in deferred else s
                     for s in specs]
        if batch_transform is not None and not callable(batch_transform):
            raise ValueError(f"batch_transform must be callable (torchvision's MixUp, CutMix, "
                             f"...), not {type(batch_transform).__name__}")
        # Natively after the native steps; after Python steps or device normalisation, in Python.
        native_batch = None if plan.python or deferred else native_call(batch_transform)
        # Batches built in page-locked memory for a CUDA device, or where DataLoader's
        # pin_memory asks for it.
        self._pinned = _device.pinned_memory(torch) if cuda or pin_memory else None
        self._native.configure(
            batch_size=batch_size, shuffle=bool(shuffle), seed=seed, last_batch=last_batch,
            rank=rank, world_size=world_size, fields=specs, to_tensor=_tensor_from_dlpack(torch),
            pinned_memory=self._pinned, batch_transform=native_batch, **settings)
        if order_of is not None:  # its own order (a Subset's) follows the loader's options
            order_of.bind(len(self._native), self._native.options)
        shapes = {name: shape for name, _, shape in self._native.fields}
        self._normalize = {
            name: _device.normalizer(torch, *_stoker.normalization(shapes[name], mean, std),
                                     unit, len(shapes[name]), self._device)
            for name, (mean, std, unit) in deferred.items()}
        self._plan = plan
        self._python_parallel = python_parallel
        self._python = _python_steps(torch, plan, seed, rank, on_error, python_input,
                                     python_workers, python_parallel, python_timeout, cuda,
                                     {n: "padded" if f == "nested" else f
                                      for n, f in forms.items()}, batch_size, num_workers,
                                     step_inputs(transforms, plan.python, python_input)
                                     if torchvision_steps else None)
        # A torchvision dataset's Python steps give its own samples, and its fields of varying
        # size come listed: either way the loader collates them as DataLoader does
        # (default_collate stacks a batch whose samples agree, a batch of one always).
        self.samples_to_collate = bool(torchvision_steps and (plan.python or
                                                              "list" in forms.values()))
        self._batch_plan = [] if batch_transform is None else \
            [(call_text(native_batch), "native") if native_batch else
             (step_name(batch_transform), "python")]
        self._batch_transform = not native_batch and batch_transform and \
            BatchTransform(torch, batch_transform, seed, rank)
        self._path = path
        self._source = source  # whose parameters that shape the samples a state keeps
        self._shown = _stoker.shown_location(native_path(path))  # a URL without its secrets
        self._names = self._tuple_names(batch_format, names, last_batch == "pad")
        self._as_list = classified
        self._dataset_view = None  # loader.dataset
        self._shuffle_window = settings["shuffle_window"]  # the native form (0: all)
        self._ra_reps = self._native.options["ra_reps"]
        self._identity = None  # (dataset id, file blocks): _data_identity()
        self._epoch: Optional[int] = None  # set_epoch's
        self._resume = False  # load_state_dict positioned the next iteration
        self._live = None  # weakref to the latest iteration
        self._live_front = None  # weakref to the `for` loop's iterator over it (_end_live)
        self._live_thread = None  # the thread that started it
        self._transcode_cache = transcode_cache
        self._notes_said = 0  # the source's notes told in a warning
        # Held while the above change, so that two threads starting iterations (or one starting
        # and one saving the state) meet the thread check one after the other.
        self._lock = threading.Lock()

    # Iteration ---------------------------------------------------------------------------

    def __iter__(self):
        """The batches of the epoch set_epoch names when the first of them is asked for, else
        of the loader's current epoch then."""
        with self._lock:
            self._check_thread("start an iteration")
        return _FirstBatchEpoch(lambda: self.epoch(self.next_epoch()), self._front_started)

    def _front_started(self, front) -> None:
        self._live_front = weakref.ref(front)

    def __len__(self):
        """Batches per epoch on this rank."""
        if self._order_of is not None:
            return len(self._order_of)
        return self._native.batches_per_epoch()

    def next_epoch(self) -> int:
        """The epoch the next iteration goes through: set_epoch's, else the state's."""
        return self._epoch if self._epoch is not None else self._native.state()[1]

    def indices(self, epoch: int):
        """This rank's indices of epoch `epoch`, batch after batch (int64 array), as a sampler
        over the dataset given yields them (a Subset's positions)."""
        if self._order_of is not None:
            return self._order_of.positions(epoch)[0]
        return self._native.indices(epoch)

    def set_epoch(self, epoch: int) -> None:
        """Makes every later ``for batch in loader`` iterate epoch `epoch` (DistributedSampler's
        convention); the samples' order and augmentation follow from it."""
        epoch = _int("epoch", epoch, 0, _stoker.MAX_EPOCH)
        with self._lock:
            self._check_thread("set_epoch")
            self._epoch = epoch

    def epoch(self, epoch: int):
        """An iterator over the batches of epoch `epoch` (from where a restored state left it,
        if load_state_dict saved this epoch mid-way). Starting it ends this thread's previous
        iteration of the loader; ``len()`` of it is its number of batches."""
        epoch = _int("epoch", epoch, 0, _stoker.MAX_EPOCH)
        with self._lock:
            self._end_live("start an iteration")
            seed, state_epoch, position = self._native.state()
            if not (self._resume and state_epoch == epoch) and \
                    (state_epoch, position) != (epoch, 0):
                self._native.restore(seed=seed, epoch=epoch, position=0,
                                     shuffle_window=self._shuffle_window, ra_reps=self._ra_reps)
            self._resume = False
            if self._order_of is None:
                iteration = self._native.epoch(epoch)
            else:
                indices, sizes, refused = self._order_of.batches(epoch)
                start = self._native.state()[2]
                iteration = self._native.explicit_epoch(epoch, indices, sizes, start,
                                                        repeats=self._order_of.repeats)
                if refused:
                    iteration = _RefusedBatches(iteration, refused, int(np.searchsorted(
                        np.cumsum(sizes), start, side="right")))
            native = iteration
            source = self._native  # what says the state after each batch of `iteration`
            if self._python:
                iteration = self._python.epoch(iteration, epoch, self._native, self._rewind)
                source = _StateOf(iteration)
            state = source.state
            options = self._native.options
            if options["on_error"] == "skip":
                iteration = _GoodBatches(iteration, self._shown, epoch, options["batch_size"],
                                         options["rank"], options["world_size"])
            if options["last_batch"] == "pad":
                iteration = _ValidMasks(self._torch, iteration)
            if self._flat_cu_seqlens:  # on the host, before any copy to a device
                iteration = _FlatCuSeqlens(iteration, self._torch)
            if self._device.type == "cuda":
                iteration = _device.CudaEpoch(self._torch, source, iteration, self._device,
                                              self._normalize)
                state = lambda cuda=iteration: cuda.state  # noqa: E731 (it runs ahead)
            if self._boolean:  # uint8 masks of 0 and 1 viewed as bool, no copy
                iteration = ChangedFields(iteration, self._boolean, lambda batch, name, torch=(
                    self._torch): batch[name].view(torch.bool))
            if self._nested:
                iteration = nested_fields(self._torch, iteration, self._nested)
            if self._names != "dict" and not (iteration is native and not self._as_list and
                                              native.as_tuple(list(self._names))):
                iteration = _Formatted(iteration, self._names, self._as_list)
            if self._batch_transform:
                iteration = _BatchTransformEpoch(iteration, self._batch_transform, epoch, state)
            if self._transcode_cache:  # what notes anything (a damaged file rebuilt)
                iteration = _SourceNotes(iteration, self._warn_source_notes)
            self._live = weakref.ref(iteration)
            self._live_thread = threading.get_ident()
            return iteration

    def _tuple_names(self, batch_format, names, pad: bool):
        """The fields of a sequence batch in order, or "dict" for dicts."""
        delivered = []
        for name, _, _ in self._native.fields:
            delivered.append(name)
            if self._native.variable_fields.get(name) == "padded" and name not in self._nested \
                    and not (self._flat_cu_seqlens and name == _cu_seqlens.FIELD):
                delivered.append(name + "_sizes")
            delivered += [added for added, field in self._added.items() if field == name]
        if batch_format == "tuple":
            names = tuple(delivered)
        elif names is None:
            return "dict"
        return names + (VALID,) if pad and VALID not in names else names

    # State -------------------------------------------------------------------------------

    def _rewind(self, state) -> None:
        """The native loader back at `state` (seed, epoch, position), where an iteration that
        ran ahead of its consumer (the Python workers') left it."""
        self._native.restore(seed=state[0], epoch=state[1], position=state[2],
                             shuffle_window=self._shuffle_window, ra_reps=self._ra_reps)

    def state_dict(self) -> dict:
        """Where the loader is, as a JSON-serialisable dict: restoring it (into a loader over
        the same dataset with the same seed and batch_size, any workers, world_size or
        batch_format) makes the next iteration continue the epoch after the last batch yielded
        before this call."""
        with self._lock:
            self._check_thread("state_dict")
            live = self._live_iteration()
            while hasattr(live, "inner") and not hasattr(live, "state"):
                live = live.inner  # to the outermost iteration that runs ahead, if one does
            seed, epoch, position = live.state if hasattr(live, "state") else \
                self._native.state()
        options = self._native.options
        return {"format": _STATE_FORMAT, "seed": seed, "epoch": epoch, "position": position,
                "records": len(self._native), "dataset": self._data_identity()[0],
                "batch_size": options["batch_size"], "world_size": options["world_size"],
                "shuffle_window": options["shuffle_window"], "ra_reps": options["ra_reps"],
                "order": self._order_name(), **shaping_entries(options["shuffle"], self._source),
                **self._files_entry()}

    def _data_identity(self) -> tuple:
        """(the dataset's id, its files' blocks [[first, last, digest]]: [] for a stoker
        dataset), taken once: an image folder's files are stat'ed."""
        if self._identity is None:
            files = [list(block) for block in self._native.file_blocks()]
            self._identity = (_dataset_id(self._native, files), files)
        return self._identity

    def _files_entry(self) -> dict:
        """A state's "files" (the blocks that name a changed file), for data read in place."""
        files = self._data_identity()[1]
        return {"files": files} if files else {}

    def _order_name(self) -> str:
        """Whose order the state's position counts in: "stoker"'s, a mixture's (its text:
        "mixture:weights=[...],..."), a user's "sampler"'s or an aspect-ratio grouping's."""
        if self._order_of is not None:
            return self._order_of.name
        return self._native.order or "stoker"

    def load_state_dict(self, state: dict) -> None:
        """Continues from `state` (state_dict() of a loader over the same dataset, with the
        same seed, shuffle, shuffle_window, ra_reps and source parameters that shape the samples;
        batch_size and world_size may differ: the global sample order goes on). Ends this
        thread's live iteration; the next one continues the saved epoch. A `state` that is not
        such a dict — a key missing, a value not an int or out of range, another seed, shuffle,
        shuffle_window, ra_reps, source parameter (seq_len, ...) or dataset — raises ValueError
        naming the key, and changes nothing. A state without "shuffle_window" or "ra_reps"
        (saved before they existed) is "all"'s or 1's; one without "shuffle" or "source" is not
        checked for them."""
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"not a stoker.Loader state_dict (format {_STATE_FORMAT!r})")
        values = checked_ints(state, _STATE_KEYS)
        if state.get("order", "stoker") != self._order_name():
            raise ValueError(f"state_dict['order'] is {state.get('order', 'stoker')!r}: its "
                             f"position counts in that order, and this loader's is "
                             f"{self._order_name()!r} (give it the same sampler or mixture, or "
                             f"none)")
        if values["seed"] != self._native.options["seed"]:
            raise ValueError(f"state_dict['seed'] is {values['seed']}; this loader's seed is "
                             f"{self._native.options['seed']}")
        for key, default in (("shuffle_window", "all"), ("ra_reps", 1)):
            value = state.get(key, default)
            if value != self._native.options[key]:
                raise ValueError(f"state_dict[{key!r}] is {value!r}; this loader's {key} is "
                                 f"{self._native.options[key]!r}")
        check_shaping(state, self._native.options["shuffle"], self._source)
        if values["records"] != len(self._native):
            raise ValueError(f"the state_dict is of a dataset of {values['records']} records; "
                             f"{self._shown} has {len(self._native)}")
        if "dataset" not in state:  # the one thing that tells another dataset of as many records
            raise ValueError("the state_dict lacks 'dataset'")
        dataset, files = self._data_identity()
        if state["dataset"] != dataset:
            difference = _files_difference(state.get("files"), files)
            if difference:
                raise ValueError(f"the state_dict is of other data than {self._shown}: "
                                 f"{difference}")
            raise ValueError(f"the state_dict is of another dataset (id {state['dataset']!r}); "
                             f"{self._shown} is {dataset!r}")
        # Stoker's own order bounds the position by its epoch's length (a mixture's samples per
        # epoch, K x records for samples_per_record K); an explicit order's epoch is the
        # sampler's, which its first iteration checks the position against.
        if self._order_of is None and values["position"] >= self._native.epoch_samples():
            raise ValueError(f"the state_dict's position {values['position']} is not inside an "
                             f"epoch of {self._native.epoch_samples()} samples")
        with self._lock:
            self._end_live("load a state_dict")
            self._native.restore(seed=values["seed"], epoch=values["epoch"],
                                 position=values["position"], shuffle_window=self._shuffle_window,
                                 ra_reps=self._ra_reps)
            self._resume = True
            self._epoch = None

    # Information -------------------------------------------------------------------------

    @property
    def options(self) -> dict:
        """The options in force (auto workers and prefetch resolved; batch_format "dict" or
        the tuple of field names a batch holds in order)."""
        return dict(self._native.options, device=str(self._device),
                    normalize_on_device=bool(self._normalize),
                    python_workers=getattr(self._python, "workers", 0),
                    python_parallel=self._python_parallel,
                    pinned_by_workers=self._pinned is not None, batch_format=self._names)

    @property
    def batch_size(self) -> int:
        """Samples per batch (the last one of an epoch may have fewer: ``last_batch``)."""
        return self._native.options["batch_size"]

    @property
    def dataset(self) -> LoaderDataset:
        """The dataset's length and classes (LoaderDataset)."""
        if self._dataset_view is None:  # one, so that its classes are read once
            self._dataset_view = LoaderDataset(self._shown, len(self._native),
                                               self._native.schema, self._native.class_names,
                                               self._native.samples)
        return self._dataset_view

    @property
    def tuning(self) -> Optional[dict]:
        """With workers="auto": the tuning so far — "workers" and "prefetch" in use (chosen once
        "settled"), "reason" with the measured rates, every setting tried in "trials". Else
        None."""
        return self._native.tuning

    @property
    def fields(self) -> list:
        """The batch's fields: [(name, dtype, per-sample shape)], as delivered; (name, None,
        None) for a field whose last steps run in Python (their output decides)."""
        python = self._plan.python_fields()
        return [(name, None, None) if name in python else
                (name, "float32" if name in self._normalize else dtype, shape)
                for name, dtype, shape in self._native.fields]

    @property
    def plan(self) -> dict:
        """Every field's steps and where each runs: {field: [(step, "native" or "python")]},
        the batch transform's under "batch_transform", and under "notes" {field: [sentence]}
        why a field's steps from one on run in Python (a step stoker cannot run, or whose
        native pixels are torchvision's other backend's) and where a native step deviates from
        torchvision (a crop after ToImage). The native operations run on the
        loader's worker threads; the Python steps (what stoker.transforms cannot translate)
        after them, in ``options["python_workers"]`` worker processes, or in the iterating
        thread where that is 0 (stoker/_python_steps.py, stoker/_python_pool.py); a batch
        transform stoker does not run natively as each batch is yielded."""
        plan = self._plan.describe()
        if self._plan.notes:
            plan["notes"] = self._plan.notes
        if self._batch_plan:
            plan["batch_transform"] = self._batch_plan
        return plan

    def stats(self) -> dict:
        """Time per stage and counts since the loader was made (summed over its threads);
        "python_seconds" and "python_skipped": the Python steps' time (summed over their worker
        processes, batch_transform's included) and the samples they dropped (on_error="skip");
        "python_step_seconds", {field: [(step, seconds)]}, the time in each of them (summed over
        samples and workers). With Python worker processes also "python_wait_seconds" (the iterating
        thread waiting for them: when it is most of the time, they limit the loader),
        "python_workers" and "python_restarts" (workers replaced: died or hung).
        "video_frames_decoded" / "video_frames_delivered": what decoding clips from keyframes
        costs per frame delivered (the frames the decoders decoded, those they held or dropped
        included, the skipped not: docs/DATA.md). A Mixture's: "source_samples" and "source_tokens", each
        source's samples delivered and their tokens (docs/DATA.md#mixing-sources)."""
        batch = self._batch_transform.seconds if self._batch_transform else 0.0
        python = self._python.stats()
        python["python_seconds"] += batch
        return dict(self._native.stats(), **python)

    def close(self) -> None:
        """Ends this thread's live iteration and stops the Python steps' worker processes
        (new ones start if the loader is iterated again)."""
        with self._lock:
            self._end_live("close")
        self._python.close()

    def __repr__(self):
        o = self._native.options
        return (f"stoker.Loader({self._shown!r}, batch_size={o['batch_size']}, "
                f"workers={o['workers']}, rank={o['rank']}, world_size={o['world_size']}, "
                f"device='{self._device}')")

    def _warn_source_notes(self) -> None:
        """A UserWarning, where the dataset's source noted something since the last one (a
        damaged transcode-cache file rebuilt: the library prints nothing), telling it once."""
        count, line = self._native.source_notes(self._notes_said)
        if line:
            self._notes_said = count
            warnings.warn(line, UserWarning, stacklevel=5)  # the loop over the loader's batches

    # Threads -----------------------------------------------------------------------------

    def _live_iteration(self):
        live = self._live() if self._live is not None else None
        return live if live is not None and live.live else None

    def _check_thread(self, what: str) -> None:
        if self._live_iteration() is not None and self._live_thread != threading.get_ident():
            raise RuntimeError(f"cannot {what}: another thread is iterating this stoker.Loader "
                               "(use a loader from one thread at a time)")

    def _end_live(self, what: str) -> None:
        """Ends the live iteration, if one is: the native loader runs one epoch at a time. A
        `for` loop over it that asks for its next batch then gets a RuntimeError saying why,
        not a silent end of its epoch."""
        self._check_thread(what)
        live = self._live_iteration()
        if live is None:
            return
        live.close()
        front = self._live_front() if self._live_front is not None else None
        if front is not None and front._iteration is live:
            front.end(f"this iteration of the stoker.Loader over {self._shown} ended when "
                      f"the loader was asked to {what} (a loader over data stoker reads runs "
                      f"one epoch at a time): for a nested loop or an evaluation beside the "
                      f"training loop, iterate a second stoker.Loader")
