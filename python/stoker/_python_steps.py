"""The Python steps of a field: the transforms stoker.transforms cannot run natively (a user's
function, a torchvision class it does not translate, kornia, ...) run here, on each sample the
native steps made, by a thread of their own while the iterating thread waits (or by threads),
after the native batch is built (or in worker processes: _python_pool.py, with the same seeds
and errors). A field's steps are
one unit of Python steps (FieldSteps); the steps after a joint transform, on a detection or
segmentation sample's fields together, another (_joint_python.JointSteps): the steps' own thread,
threads and worker processes run units, a sample's input tensors in, its output tensors out,
each output field stacked, or listed or padded where its size varies. And the loader's
batch transform (torchvision's MixUp, CutMix, timm's Mixup, ...), on the whole batch after them.

A step gets what the step before it gave: first the native steps' sample, a torch tensor
[C, H, W] (uint8, or float32 after ToTensor/Normalize; of its own size after DecodeImage or
Resize alone, whose batches come as lists of samples), or, for a uint8 sample whose Python steps
convert a PIL image themselves (they hold a ToTensor, PILToTensor, ToImage or timm's
MaybeToTensor, as recipes written for PIL do) or with ``python_input="pil"``, that sample as a
PIL image, so that those steps run as in the recipe (torchvision's PIL backend, timm's PIL-only
RandAugment). The steps must end in a tensor (a PIL image at the end becomes uint8 [C, H, W]),
of one shape and dtype across a batch (they are stacked); a torchvision dataset's steps get
and give what they would in its __getitem__ (_torchvision_samples.TorchvisionSteps).

Random draws: before each sample, torch's, Python's ``random`` and numpy's global generators
are seeded by sample_seed(loader seed, epoch, rank, position, slot), the position being the
loader's global position in the epoch after the sample's batch (state_dict()["position"]), and
the iterating thread's own states are put back after the batch: the same batches for any number
of native workers, again after a resume. A step taking a ``generator=`` keyword is also given
a torch.Generator seeded by that seed (FieldSteps): its draws need no global state, so such
steps may run in threads (python_parallel="threads"). A batch transform is seeded likewise by
batch_seed(seed, epoch, rank, position). An exception (any: steps never run in the main
thread, so a KeyboardInterrupt a step raises is no Ctrl-C), an output that is not a dense
tensor, or of another shape or dtype, or a step running past the timeout is one stoker.Error
naming where the sample's record lies (record_locator: a tar and member, a file and row), the
field, the sample and the step; with on_error="skip" the sample is dropped from its batch
instead and counted.
"""

from __future__ import annotations

import inspect
import random
import time
from functools import partial
from typing import Dict, List

from stoker import _cu_seqlens, _stoker
from stoker._step_threads import StepThread, StepThreads, Work
from stoker._wrapped import Wrapped

_MASK = 2**64 - 1


def _mix(x: int) -> int:
    """SplitMix64's finaliser: a well-spread 64-bit value of `x`."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def sample_seed(seed: int, epoch: int, rank: int, position: int, slot: int) -> int:
    """The seed of one sample's Python steps."""
    x = _mix(seed)
    for part in (epoch, rank, position, slot):
        x = _mix(x ^ part)
    return x


def batch_seed(seed: int, epoch: int, rank: int, position: int) -> int:
    """The seed of one batch's batch transform."""
    return sample_seed(seed, epoch, rank, position, 2**64 - 1)


class _Seeded:
    """While it is entered, seed(s) seeds torch's (CPU), Python's and numpy's global
    generators; on exit their states are put back as they were. torch's CPU generator is seeded
    directly: torch.manual_seed would also queue every device's, at ~100 us a call."""

    def __init__(self, torch, numpy):
        self._generator = torch.default_generator
        self._numpy = numpy

    def __enter__(self):
        self._saved = (self._generator.get_state(), random.getstate(),
                       self._numpy.random.get_state())
        return self

    def seed(self, seed: int) -> None:
        self._generator.manual_seed(seed)
        random.seed(seed)
        self._numpy.random.seed(seed & 0xFFFFFFFF)

    def __exit__(self, *exc):
        self._generator.set_state(self._saved[0])
        random.setstate(self._saved[1])
        self._numpy.random.set_state(self._saved[2])


def step_name(step) -> str:
    """How errors and plans name a step: its repr, or its function or class name when the
    repr is the default one."""
    text = repr(step)
    return getattr(step, "__name__", type(step).__name__) if text.startswith("<") else text


class _ToFloat:
    """torchvision v1 ToTensor on the tensor the native steps made: uint8 / 255 as float32."""

    def __init__(self, torch):
        self._torch = torch

    def __call__(self, x):
        return x.to(self._torch.float32).div(255) if x.dtype == self._torch.uint8 else x

    def __repr__(self):
        return "ToTensor()"


# The steps that turn a PIL image into a tensor: Python steps holding one expect PIL images.
_PIL_CONVERSIONS = {"ToTensor", "PILToTensor", "ToImage", "MaybeToTensor", "MaybePILToTensor"}


def wants_pil(steps: list) -> bool:
    """Whether `steps` convert a PIL image themselves (so expect one)."""
    return any(type(step).__name__ in _PIL_CONVERSIONS for step in steps)


def tensor_steps(torch, steps: list) -> list:
    """`steps` ready for tensors: torchvision v1's ToTensor (which takes PIL images and arrays
    only) as its tensor equivalent, and PILToTensor (a no-op on a uint8 tensor) left out."""
    out = []
    for step in steps:
        name = type(step).__name__
        v1 = type(step).__module__.startswith("torchvision.transforms") and \
            ".v2" not in type(step).__module__
        if v1 and name == "ToTensor":
            out.append(_ToFloat(torch))
        elif v1 and name == "PILToTensor":
            continue
        else:
            out.append(step)
    return out


def to_pil(x):
    from PIL import Image
    array = x.numpy()
    return Image.fromarray(array[0] if len(array) == 1 else array.transpose(1, 2, 0))


def is_pil(x) -> bool:
    return type(x).__module__.startswith("PIL.")


def from_pil(torch, numpy, image):
    array = numpy.asarray(image)
    array = array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
    return torch.from_numpy(numpy.ascontiguousarray(array))


class SampleError(Exception):
    """A sample's Python code failed (its steps, or a Python dataset's __getitem__ or
    collate_fn): the one-line message names the sample (and the field and step)."""


def sample_message(field: str, slot: int, index: int, epoch: int, text: str) -> str:
    """One line naming sample `slot` of batch `index` of `epoch` and field `field`."""
    return " ".join(f"field '{field}', sample {slot} of batch {index} (epoch {epoch}): "
                    f"{text}".split())


def takes_generator(step) -> bool:
    """Whether `step` takes a ``generator=`` keyword (by its signature)."""
    try:
        parameter = inspect.signature(step).parameters.get("generator")
    except (TypeError, ValueError):  # no signature to read (a builtin)
        return False
    return parameter is not None and parameter.kind in (parameter.KEYWORD_ONLY,
                                                        parameter.POSITIONAL_OR_KEYWORD)


class FieldSteps:
    """A field's Python steps ready to run, one of the loader's units of Python steps (as the
    steps after a joint transform, _joint_python.JointSteps): ``inputs`` the fields a sample's
    steps read, here the field alone, ``outputs`` {field: how its samples make a batch:
    "stack", "list" or "padded"}, here the field stacked; ``raw`` the steps as given and
    ``args``, from which a worker process makes the same unit (type(unit)(torch, raw, *args));
    ``pil`` (whether they get PIL images: with `python_input` "pil", or None where they convert
    one themselves, wants_pil), and ``generator``, for each step whether it takes a generator=
    keyword: it is then called with a torch.Generator seeded by the sample's seed, so its draws
    need no global state."""

    def __init__(self, torch, steps: list, field: str, python_input=None):
        self.raw = steps
        self.args = (field, python_input)
        self.inputs = (field,)
        self.outputs = {field: "stack"}
        self.pil = python_input == "pil" or (python_input is None and wants_pil(steps))
        self.steps = steps if self.pil else tensor_steps(torch, steps)
        self.generator = [takes_generator(step) for step in self.steps]
        self.seconds = [0.0] * len(self.steps)  # in each step, over every sample

    def timing(self) -> list:
        """[(step, seconds in it)]."""
        return [(step_name(step), seconds) for step, seconds in zip(self.steps, self.seconds)]

    def samples(self, batch: dict, field: str):
        """The samples of input `field` of a native batch, each indexed by its slot."""
        return batch[field]

    def run(self, torch, numpy, values: tuple, seed: int, where: tuple, on_step=None) -> tuple:
        """(the sample, values[0], after the steps: a plain torch.Tensor); SampleError if a
        step raises or they give no tensor. `seed`: the sample's (for the generator= steps; the
        caller seeds the global generators); `where`: (field, slot, batch index, epoch), for the
        message; on_step(i) is called before step i."""
        x = values[0]
        generator = torch.Generator().manual_seed(seed) if any(self.generator) else None
        if self.pil and x.dtype == torch.uint8 and x.dim() == 3:
            x = to_pil(x)
        return self.rest(torch, numpy, x, 0, generator, where, on_step)

    def rest(self, torch, numpy, x, first: int, generator, where: tuple, on_step) -> tuple:
        """(x after steps[first:], a plain torch.Tensor), as run() gives it."""
        x = self.through(x, first, generator, where, on_step)
        if is_pil(x):
            x = from_pil(torch, numpy, x)
        if not isinstance(x, torch.Tensor):
            raise SampleError(sample_message(
                *where, f"the Python steps gave a {type(x).__name__}, not a torch.Tensor (last "
                f"step {step_name(self.steps[-1])})"))
        return (plain_tensor(torch, x, where, self.steps),)

    def through(self, x, first: int, generator, where: tuple, on_step):
        """x after steps[first:], as run() calls them (SampleError naming the step that
        raises)."""
        for number in range(first, len(self.steps)):
            step = self.steps[number]
            if on_step is not None:
                on_step(number)
            kwargs = {"generator": generator} if self.generator[number] else {}
            x = call_step(step, (x,), kwargs, where, self.seconds, number)
        return x


def padded(torch, values: list):
    """One tensor [batch, largest sample...] with zeros around each sample, and its sizes,
    int64 [batch, rank]: the native "padded" form."""
    if not values:
        return torch.empty(0), torch.empty((0, 0), dtype=torch.int64)
    sizes = torch.tensor([list(v.shape) for v in values], dtype=torch.int64)
    largest = sizes.max(dim=0).values.tolist() if values[0].dim() else []
    out = torch.zeros([len(values), *largest], dtype=values[0].dtype)
    for k, v in enumerate(values):
        out[(k, *(slice(0, n) for n in v.shape))] = v
    return out, sizes


def batch_values(torch, unit: str, field: str, form: str, samples: list, slots: list,
                 index: int, epoch: int) -> dict:
    """{field: its batch value} of output `field`'s `samples` (those of `slots`, made by the
    unit named `unit`) in `form`: stacked (one shape and dtype), a list, padded (one rank and
    dtype; with its NAME_sizes) or packed (rows of one dtype, concatenated: with cu_seqlens,
    max_seqlen and position_ids, _cu_seqlens.packed); SampleError naming the first sample
    that does not fit."""
    if form == "list":
        return {field: samples}
    if form == "stack":
        if not samples:
            return {field: torch.empty(0)}
        check_uniform(unit, index, epoch,
                      [(slot, x.dtype, x.shape) for slot, x in zip(slots, samples)])
        return {field: torch.stack(samples)}
    for slot, v in zip(slots, samples):
        if form == "packed" and v.dim() != 1:
            raise SampleError(sample_message(
                unit, slot, index, epoch, f"the Python steps gave {field} {v.dtype} "
                f"{list(v.shape)}: a packed batch joins rows (1-D)"))
        if v.dim() != samples[0].dim() or v.dtype != samples[0].dtype:
            raise SampleError(sample_message(
                unit, slot, index, epoch, f"the Python steps gave {field} {v.dtype} "
                f"{list(v.shape)}, but sample {slots[0]} {samples[0].dtype} "
                f"{list(samples[0].shape)}: a {form} batch holds one rank and dtype"))
    if form == "packed":
        return _cu_seqlens.packed(torch, field, samples)
    values, sizes = padded(torch, samples)
    return {field: values, field + "_sizes": sizes}


def assembled(units: dict, names: list, kept, made) -> dict:
    """The batch of the native batch's fields `names`, in order, after the units of Python
    steps `units` ({name: unit}): each field a unit makes is made(unit name, field, form), a
    dict (a padded field's NAME_sizes with it), the unit's outputs that `names` lacks (a
    caption's attention_mask) after its first; every other field kept(field)."""
    outputs = {field: (name, form) for name, unit in units.items()
               for field, form in unit.outputs.items()}
    sizes = {field + "_sizes" for field, (_, form) in outputs.items() if form == "padded"}
    out = {}
    for field in names:
        if field in outputs:
            name = outputs[field][0]
            out.update(made(name, field, outputs[field][1]))
            if field == next(iter(units[name].outputs)):
                for extra, form in units[name].outputs.items():
                    if extra not in names:
                        out.update(made(name, extra, form))
        elif field not in sizes:  # a padded output's sizes are made with it
            out[field] = kept(field)
    return out


def call_step(step, args: tuple, kwargs: dict, where: tuple, seconds: list, number: int,
              call=None):
    """step(*args, **kwargs) (or call(*args, **kwargs), a way of running `step`), its time
    added to seconds[number]; SampleError naming `where` (field, slot, batch index, epoch) and
    the step if it raises."""
    start = time.perf_counter()
    try:
        return (call or step)(*args, **kwargs)
    except BaseException as e:  # a user's code: anything it raises, off the main thread
        raise SampleError(sample_message(*where, f"{step_name(step)} raised "
                                         f"{error_text(e)}")) from None
    finally:
        seconds[number] += time.perf_counter() - start


def error_text(e: BaseException) -> str:
    """"TYPE: message" of an exception (TYPE alone without one), even of one whose __str__
    raises."""
    try:
        text = str(e)
    except Exception as failed:  # noqa: BLE001 (the exception's own code)
        return f"{type(e).__name__} (its message could not be made: " \
            f"{type(failed).__name__}: {failed})"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def plain_tensor(torch, x, where: tuple, steps: list):
    """`x`, a step's output tensor, as a plain dense torch.Tensor; SampleError for a sparse or
    other non-strided one (naming the last of `steps`)."""
    if x.layout != torch.strided:
        raise SampleError(sample_message(
            *where, f"the Python steps gave a sparse tensor ({x.layout}), not a dense one (last "
            f"step {step_name(steps[-1])}): end them in .to_dense()"))
    return x.as_subclass(torch.Tensor)


def kept_samples(values, keep: list):
    """The samples `keep` of a field's value: a batch tensor, or a list of samples (a field of
    varying size)."""
    return [values[k] for k in keep] if isinstance(values, list) else values[keep]


def check_uniform(field: str, index: int, epoch: int, samples: list) -> None:
    """SampleError unless every (slot, dtype, shape) of `samples` has the first one's dtype
    and shape (a batch stacks them)."""
    first_slot, dtype, shape = samples[0]
    for slot, other_dtype, other_shape in samples:
        if other_shape != shape or other_dtype != dtype:
            raise SampleError(sample_message(
                field, slot, index, epoch, f"the Python steps gave {other_dtype} "
                f"{list(other_shape)}, but sample {first_slot} {dtype} {list(shape)}: a batch "
                "stacks one shape and dtype"))


class PythonSteps:
    """The loader's units of Python steps ({name: unit}: a FieldSteps per field that has some,
    or the steps after a joint transform, _joint_python.JointSteps), applied to native batches
    (dicts of tensors) one sample after another by a thread of their own while the iterating
    thread waits (which Ctrl-C interrupts), or with `threads` > 1 by that many threads, the
    samples of the next ``window`` batches at once; threads need every step to take a
    generator= keyword: the global generators are not seeded there, and each sample's draws
    depend on its seed only, the same batches for any number of threads. A step running
    longer than `timeout` seconds on a sample is that sample's error (StepThreads)."""

    def __init__(self, torch, units: dict, seed: int, rank: int, on_error: str,
                 threads: int = 0, timeout: float = 300.0):
        import numpy
        self._torch = torch
        self._numpy = numpy
        self._units = units
        if threads > 1 and units:
            for name, unit in units.items():
                for step, generator in zip(unit.steps, unit.generator):
                    if not generator:
                        raise ValueError(
                            f"field '{name}': python_parallel='threads' needs every Python "
                            f"step to take a generator= keyword (a torch.Generator seeded per "
                            f"sample); {step_name(step)} does not: use "
                            "python_parallel='processes'")
        self.workers = threads if threads > 1 and units else 0
        self._threads = StepThreads(max(1, self.workers), timeout)
        self._timeout = timeout
        self._seed = seed
        self._rank = rank
        self._skip = on_error == "skip"
        self.seconds = 0.0  # spent in the steps, over every batch
        self.skipped = 0  # samples dropped (on_error="skip")

    def __bool__(self):
        return bool(self._units)

    def stats(self) -> dict:
        # With threads, the steps' own time (summed over samples and threads), as the worker
        # processes count theirs, and the batches' assembly.
        seconds = self.seconds + (sum(sum(unit.seconds) for unit in self._units.values())
                                  if self.workers else 0.0)
        return {"python_seconds": seconds, "python_skipped": self.skipped,
                "python_step_seconds": {name: unit.timing()
                                        for name, unit in self._units.items()}}

    def epoch(self, native_epoch, epoch: int, core, rewind=None):
        """The iteration of `native_epoch` (epoch `epoch` of the LoaderCore `core`) through
        these steps: a batch at a time (it never runs ahead), or with threads ``window``
        batches ahead of the consumer (_python_pool.PooledEpoch, whose `rewind` puts the
        native loader back where the consumer stopped)."""
        if not self.workers:
            return SerialEpoch(native_epoch, self, epoch, core)
        from stoker._python_pool import PooledEpoch
        return PooledEpoch(self, native_epoch, epoch, core, rewind)

    def close(self) -> None:
        """Stops the threads (new ones start when needed)."""
        self._threads.close()

    def apply(self, batch: dict, epoch: int, index: int, position: int, locate) -> dict:
        """`batch` with each unit's output fields made by its steps from each sample (batch
        `index` of this iteration of `epoch`, the loader at global `position` after it), one
        sample after another, the global generators seeded by each sample's seed; samples that
        failed dropped from every field under on_error="skip". locate(slot, text): an error's
        text naming where its sample's record lies (record_locator)."""
        start = time.perf_counter()
        size = len(next(iter(batch.values())))
        failed: set = set()
        calls = []
        with _Seeded(self._torch, self._numpy) as generators:
            for name, unit in self._units.items():
                inputs = unit_inputs(unit, batch)
                calls += [partial(self._seeded_one, generators, failed, name, unit, inputs,
                                  epoch, index, position, slot) for slot in range(size)]

            def stop(k, result):  # the first failure under raise; else its sample is dropped
                if isinstance(result, SampleError):
                    failed.add(k % size)
                return isinstance(result, SampleError) and not self._skip

            work = self._threads.submit(Work(calls, stop))
            try:
                self._threads.wait([work])
            except KeyboardInterrupt:  # the batch is dropped; a sample running finishes alone
                self._threads.cancel([work])
                raise
        made = {name: work.results[k * size:(k + 1) * size]
                for k, name in enumerate(self._units)}
        return self._combine(batch, made, epoch, index, start, locate)

    # With threads, batches ahead (PooledEpoch's pool) --------------------------------------

    window = 2  # the native batches whose samples the threads take ahead of the consumer's

    def submit(self, batch: dict, epoch: int, index: int, position: int, state,
               padding: int, locate) -> "_Ahead":
        """Every sample of `batch` handed to the threads; the batch copied off the native
        loader's buffers, which it then holds none of."""
        batch = {name: [v.clone() for v in value] if isinstance(value, list) else value.clone()
                 for name, value in batch.items()}
        size = len(next(iter(batch.values())))
        works = {}
        for name, unit in self._units.items():
            inputs = unit_inputs(unit, batch)
            works[name] = [self._threads.submit(Work([partial(
                self._one, name, unit, inputs, epoch, index, position, slot)]))
                for slot in range(size)]
        return _Ahead(batch, works, epoch, index, state, padding, locate)

    def wait(self, ahead: "_Ahead") -> None:
        self._threads.wait([w for ws in ahead.works.values() for w in ws])

    def finish(self, ahead: "_Ahead") -> dict:
        made = {name: [w.results[0] for w in ws] for name, ws in ahead.works.items()}
        return self._combine(ahead.batch, made, ahead.epoch, ahead.index, time.perf_counter(),
                             ahead.locate)

    def cancel(self, aheads: list) -> None:
        self._threads.cancel([w for ahead in aheads for ws in ahead.works.values() for w in ws])

    def interrupted(self) -> None:
        """Ctrl-C while the consumer waited: the samples already running finish on their own."""

    # ---------------------------------------------------------------------------------------

    def _one(self, name, unit, inputs, epoch, index, position, slot, thread: StepThread):
        """Sample `slot` of `inputs` ({field: samples}) after `unit`'s steps (a tuple, one
        tensor per output), or the SampleError it raised, run by `thread` (told each step's
        start)."""
        seed = sample_seed(self._seed, epoch, self._rank, position, slot)
        where = (name, slot, index, epoch)

        def on_step(number):
            thread.at(time.monotonic(), lambda: SampleError(sample_message(
                *where, f"{step_name(unit.steps[number])} ran longer than python_timeout="
                f"{self._timeout:g} s: a Python thread cannot be stopped, so its own was left "
                "running (a daemon) and a new one took its place")))

        try:
            return unit.run(self._torch, self._numpy,
                            tuple(inputs[field][slot] for field in unit.inputs), seed, where,
                            on_step)
        except SampleError as e:
            return e

    def _seeded_one(self, generators, failed, name, unit, inputs, epoch, index, position, slot,
                    thread):
        """_one after the global generators are seeded by the sample's seed; None for a sample
        in `failed` (a slot that failed in another unit)."""
        if slot in failed:
            return None
        if getattr(unit, "seeded", True):  # not where the steps draw nothing (a caption's)
            generators.seed(sample_seed(self._seed, epoch, self._rank, position, slot))
        return self._one(name, unit, inputs, epoch, index, position, slot, thread)

    def _combine(self, batch: dict, made: Dict[str, List], epoch: int, index: int,
                 start: float, locate) -> dict:
        """The batch of `batch`'s fields with each unit's outputs made of `made`'s ({unit:
        [outputs or SampleError or None (not run: failed before)]}); the first SampleError, by
        unit and slot, is one stoker.Error, or under on_error="skip" its sample is dropped
        from every field."""
        size = len(next(iter(batch.values())))
        failed: set = set()
        try:
            for name in made:
                for slot in range(size):
                    if slot not in failed and isinstance(made[name][slot], SampleError):
                        if not self._skip:
                            raise SampleError(locate(slot, str(made[name][slot])))
                        failed.add(slot)
            keep = [slot for slot in range(size) if slot not in failed]

            def output(name, field, form):
                k = list(self._units[name].outputs).index(field)
                return batch_values(self._torch, name, field, form,
                                    [made[name][slot][k] for slot in keep], keep, index, epoch)

            out = assembled(self._units, list(batch), lambda field: kept_samples(
                batch[field], keep) if failed else batch[field], output)
        except SampleError as e:
            raise _stoker.Error(str(e)) from None
        self.skipped += len(failed)
        self.seconds += time.perf_counter() - start
        return out


def record_locator(core, records):
    """locate(slot, text): `text` (a sample's error) after where the dataset record of the
    batch's sample `slot` lies, as the loader names a bad record (a tar and member, a file and
    row: core.record_error); `records`: the batch's (the native epoch's last_records)."""
    return lambda slot, text: core.record_error(int(records[slot]), text)


def unit_inputs(unit, batch: dict) -> dict:
    """{field: its samples, indexed by slot} of `unit`'s input fields in `batch`, as its run()
    takes them (gathered(), where the unit has it, takes a field's samples together: a caption
    unit's, _caption_steps.py)."""
    return {field: gathered(unit, unit.samples(batch, field)) for field in unit.inputs}


def gathered(unit, samples: list) -> list:
    """`samples` of a unit's input field as its run() takes them: the unit's gathered() of
    them where it has one, else as they are."""
    gather = getattr(unit, "gathered", None)
    return samples if gather is None else gather(samples)


class _Ahead:
    """A native batch (copied) whose samples the threads run: ``works`` {field: [Work per
    slot]}, and the (epoch, index, state, padding) PooledEpoch reads."""

    def __init__(self, batch, works, epoch, index, state, padding, locate):
        self.locate = locate
        self.batch = batch
        self.works = works
        self.epoch = epoch
        self.index = index
        self.state = state
        self.padding = padding


class SerialEpoch(Wrapped):
    """A native epoch whose batches go through the Python steps a batch at a time.
    ``state``: the loader's (seed, epoch, position) after the batch last yielded."""

    def __init__(self, native_epoch, steps: PythonSteps, epoch: int, core):
        super().__init__(native_epoch)
        self._steps = steps
        self._epoch = epoch
        self._core = core
        self.state = core.state()

    def change(self, batch):
        self.state = self._core.state()
        return self._steps.apply(batch, self._epoch, self.inner.last_index, self.state[2],
                                 record_locator(self._core, self.inner.last_records))


def _shape_of(batch) -> str:
    """A batch's structure in a few words: "a list (float32 [8, 3, 224, 224], int64 [8])"."""
    def one(value):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return f"{str(value.dtype).replace('torch.', '')} {list(value.shape)}"
        return type(value).__name__
    if isinstance(batch, dict):
        return "a dict (" + ", ".join(f"{k}: {one(v)}" for k, v in batch.items()) + ")"
    if isinstance(batch, (tuple, list)):
        items = ", ".join(one(v) for v in batch)
        return f"its fields as arguments ({items})"
    return one(batch)


class BatchTransform:
    """The loader's batch transform `function`, called on each batch as the loader yields it (a
    tuple as ``function(*batch)``, a dict as ``function(batch)``), seeded per batch."""

    def __init__(self, torch, function, seed: int, rank: int):
        import numpy
        self._torch = torch
        self._numpy = numpy
        self._function = function
        self._seed = seed
        self._rank = rank
        self.seconds = 0.0

    def apply(self, batch, epoch: int, index: int, position: int):
        start = time.perf_counter()
        with _Seeded(self._torch, self._numpy) as generators:
            generators.seed(batch_seed(self._seed, epoch, self._rank, position))
            try:
                out = self._function(*batch) if isinstance(batch, (tuple, list)) else \
                    self._function(batch)
            except Exception as e:  # a user's code: anything it raises is the batch's error
                raise _stoker.Error(" ".join(
                    f"batch {index} (epoch {epoch}): the batch transform "
                    f"{step_name(self._function)} raised {error_text(e)}, given "
                    f"{_shape_of(batch)} (another form: "
                    f"stoker.Batches(batch_format=...))".split())) from None
        if isinstance(batch, (tuple, list)) and isinstance(out, (tuple, list)):
            out = type(batch)(out)
        self.seconds += time.perf_counter() - start
        return out
