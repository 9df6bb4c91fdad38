"""The Python steps in worker processes (stoker.Loader's ``python_workers=N``): the same units of
steps (a field's, _python_steps.FieldSteps, or the steps after a joint transform on the whole
sample, _joint_python.JointSteps), seeds and errors as _python_steps.PythonSteps, on N
processes at once (each runs _python_worker.worker_main).

Processes start with "forkserver" (never fork: the loader's process has native threads): a
server process, started once per Python process with torch, numpy and the first loader's step
modules imported, forks each worker, so a worker starts without importing torch again. They
start on a loader's first iteration and serve every epoch after it. Each is fed through a pipe of
its own: small messages only; the samples travel through shared memory. Each native batch's
fields with Python steps are copied into an input buffer (a memfd, mapped by the loader and by
every worker that reads it: no name in /dev/shm, so none can be left behind; one buffer a unit,
holding each of its input fields' samples, each at its own shape where a field's size varies,
the task saying where each sample's tensors lie), split into one chunk of samples per worker
and unit, and each chunk's outputs (one tensor per output field a sample; an object that is
not a plain tensor, a TorchvisionSteps' output, pickled) are written by its worker into an
output buffer of its own (a memfd it grows as needed and hands over once), from
which the loader copies them into the batch (stacked, or a list or padded for a joint
transform's fields of varying size). ``window`` native batches are taken ahead of the one the
consumer waits for, so the workers go on while it trains; batches come out in order.

Each sample's generators are seeded in its worker by sample_seed, as in the iterating thread,
so batches are the same for any number of Python workers, native workers, and after a resume.
A sample whose steps raise (or give no tensor) is the one-line error of PythonSteps, raised in
order or skipped (on_error); so is a sample whose worker died under it (its remaining samples
run again in a new worker) or that ran longer than ``timeout`` seconds (its worker is killed
and replaced), and one whose outputs take more than output_limit() (a batch of them past half
the machine's memory) or find no memory (here or in its worker). A worker writes (task, sample,
step, start time) into a small shared status block before each step: the loader reads which
sample that was. Ctrl-C while the loader waits stops every worker at once (KeyboardInterrupt;
the unfinished chunks run again in new ones if the iteration goes on). Workers ignore SIGINT
and exit when the loader's process is gone.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import pickle
import signal
import time
import weakref
from multiprocessing import connection, reduction
from typing import Dict, List, Optional

from stoker import _stoker
from stoker._python_steps import (SampleError, assembled, batch_values, check_uniform,
                                  kept_samples, record_locator, sample_message, step_name)
from stoker._python_worker import PICKLED, STATUS, Shared, worker_main

# The longest the loader blocks without looking at the clock (timeouts) and at Ctrl-C.
_POLL_SECONDS = 0.1
# The bytes of this machine's memory; a sample's outputs may take a share of it (output_limit).
def memory_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def output_limit(batch_size: int) -> int:
    """The most bytes one sample's outputs may take: one batch of `batch_size` such samples,
    held in the workers' buffers and again in the loader's batch, within half of this machine's
    memory. (The window of batches in flight may take more: outputs that then find no memory
    fail as their samples' errors.) A bound per batch, not per window, so that outputs a batch
    of which fits (float images of any usual size) are never refused."""
    return max(1, memory_bytes() // (4 * batch_size))


# The least time a worker is given to start (import and unpickle the steps) before it is
# killed.
_START_SECONDS = 60.0


def picklable_units(units: dict) -> Dict[str, tuple]:
    """{name: (the unit's type and args pickled, its steps pickled one by one)} of the units of
    Python steps (a worker makes each as type(torch, steps, *args)); ValueError naming the
    first step that cannot be pickled."""
    out = {}
    for field, unit in units.items():
        steps = []
        out[field] = (pickle.dumps((type(unit), unit.args)), steps)
        for step in unit.raw:
            try:
                steps.append(pickle.dumps(step))
            except Exception as e:  # pickling runs the object's own code: anything may raise
                raise ValueError(
                    f"field '{field}': the Python step {step_name(step)} cannot be sent to a "
                    f"worker process ({type(e).__name__}: {' '.join(str(e).split())}): define "
                    "it at a module's top level (not a lambda or local function), or pass "
                    "python_workers=0 to run the Python steps in this process") from None
    return out


# The loader's side ---------------------------------------------------------------------------


class _Batch:
    """A native batch in the workers' hands: its units' output samples as they come back."""

    def __init__(self, torch, batch: dict, units: dict, epoch: int, index: int, position: int,
                 state, padding: int, pin: bool):
        self.epoch = epoch
        self.index = index
        self.position = position
        self.state = state
        self.padding = padding
        self.size = len(next(iter(batch.values())))
        self.order = list(batch)
        outputs = {field: form for unit in units.values() for field, form in unit.outputs.items()}
        made = set(outputs) | {field + "_sizes" for field, form in outputs.items()
                               if form == "padded"}
        # The fields no unit makes, copied out of the native loader's buffers.
        self.kept = {name: _copy_value(torch, value, pin) for name, value in batch.items()
                     if name not in made}
        # Each output field's samples: one batch tensor where they are stacked, else a list.
        self.out: Dict[str, object] = {field: None if form == "stack" else [None] * self.size
                                       for field, form in outputs.items()}
        self.described = {field: [None] * self.size for field in outputs}  # (dtype, shape)
        self.errors: Dict[str, Dict[int, str]] = {name: {} for name in units}
        self.inputs: List[Shared] = []
        self.tasks = 0  # not yet done
        self.cancelled = False


def _copy(torch, value, pin: bool):
    out = torch.empty(value.shape, dtype=value.dtype, pin_memory=pin)
    return out.copy_(value)


def _copy_value(torch, value, pin: bool):
    """A field's value copied out of the native loader's buffers: a tensor, or each tensor of a
    list (a field of varying size)."""
    if isinstance(value, list):
        return [_copy(torch, v, pin) for v in value]
    return _copy(torch, value, pin)


# Where each input field's samples start in a buffer, and each sample of a list, is a multiple of
# this (a worker views them as their dtype).
_ALIGN = 16


def _input_places(inputs: list, size: int) -> tuple:
    """Where each sample of each input field (a batch tensor, or a list of tensors) lies in an
    input buffer: (total bytes, [[(byte offset, shape, dtype name) per field] per slot]), each
    field's samples C-contiguous after the one before (a batch tensor's own layout)."""
    places = [[] for _ in range(size)]
    offset = 0
    for values in inputs:
        for slot in range(size):
            if isinstance(values, list):
                offset = -(-offset // _ALIGN) * _ALIGN
            sample = values[slot]
            places[slot].append((offset, tuple(sample.shape),
                                 str(sample.dtype).rsplit(".", 1)[-1]))
            offset += sample.nbytes
        offset = -(-offset // _ALIGN) * _ALIGN
    return offset, places


class _Task:
    def __init__(self, task_id, batch: _Batch, field: str, buffer: Shared, buffer_id: int,
                 places: dict, epoch: int, slots: list):
        self.id = task_id
        self.batch = batch
        self.field = field  # the unit's name
        self.buffer = buffer
        self.buffer_id = buffer_id
        # {slot: [(byte offset, shape, dtype) of each input field's sample in the buffer]}
        self.places = places
        self.epoch = epoch
        self.slots = slots


_preloaded = False


def _context(modules):
    """The forkserver context; the first call has its server import torch, numpy, the worker
    and `modules` (those of the steps) before it forks any worker."""
    global _preloaded
    context = multiprocessing.get_context("forkserver")
    if not _preloaded:
        _preloaded = True
        context.set_forkserver_preload(["torch", "numpy", worker_main.__module__] +
                                       sorted(modules))
    return context


def _step_modules(units: dict) -> set:
    """The modules of the units' steps' functions and classes that a worker can import (not
    __main__)."""
    modules = set()
    for unit in units.values():
        for step in unit.raw:
            for owner in (step, type(step)):
                module = getattr(owner, "__module__", None)
                if isinstance(module, str) and module != "__main__" and \
                        not module.startswith("builtins"):
                    modules.add(module)
    return modules


class _Worker:
    """One worker process and what the loader knows of it."""

    def __init__(self, torch, number: int, pickled, seed, rank, limit, modules):
        context = _context(modules)
        self.conn, child = context.Pipe(duplex=True)
        self.process = context.Process(
            target=worker_main, args=(child, pickled, seed, rank, limit), daemon=True,
            name=f"stoker-python-steps-{number}")
        self.process.start()
        child.close()
        self.number = number
        self.status = Shared(torch, STATUS.size)
        self.conn.send(("status",))
        reduction.send_handle(self.conn, self.status.fd, self.process.pid)
        self.known = set()  # input buffer ids it has mapped
        self.outputs: Dict[int, Shared] = {}
        self.unmapped: Dict[int, str] = {}  # output buffers this process could not map: why
        self.free_outputs: List[int] = []
        self.output_count = 0
        self.tasks: Dict[int, _Task] = {}  # sent, not done, in order
        self.ready = False
        self.started = time.monotonic_ns()

    def stop(self, kill: bool) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(("stop",))
            except OSError:
                pass
        self.process.join(None if kill else 5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()
        self.status.close()
        for output in self.outputs.values():
            output.close()


def _stop_all(workers: list) -> None:
    """Stops `workers`: asked to, or killed where they still have work."""
    for number, worker in enumerate(workers):
        if worker is not None:
            worker.stop(kill=bool(worker.tasks))
            workers[number] = None


class PythonPool:
    """The loader's units of Python steps ({name: unit}, as PythonSteps takes them), run by
    `workers` processes; what PythonSteps is for the iterating thread. A sample whose outputs
    take more than output_limit() bytes (for batches of `batch_size`) fails as a raising step
    does, before they are sent; one whose outputs this process cannot allocate or map fails so
    too, naming why."""

    def __init__(self, torch, units: dict, seed: int, rank: int, on_error: str,
                 workers: int, timeout: float, pin: bool, batch_size: int):
        self._torch = torch
        self._pickled = picklable_units(units)
        self._modules = _step_modules(units)
        self._raw_names = {name: [step_name(s) for s in unit.raw] for name, unit in units.items()}
        # The units as the workers run them, for their inputs, outputs, names and times.
        self._steps = units
        self._seed = seed
        self._rank = rank
        self._skip = on_error == "skip"
        self._timeout = timeout
        self._pin = pin
        self.window = 2 * workers + 2  # native batches taken ahead of the consumer
        self.output_limit = output_limit(batch_size)
        self._workers: List[Optional[_Worker]] = [None] * workers
        self._free_inputs: List[Shared] = []
        self._unsent: collections.deque = collections.deque()  # tasks to (re)send, in order
        self._next_id = 0
        self.seconds = 0.0  # in the steps, summed over the workers
        self.wait_seconds = 0.0  # the iterating thread waiting for the workers
        self.skipped = 0
        self.restarts = 0  # workers replaced (died, hung)
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    def __bool__(self):
        return True

    @property
    def workers(self) -> int:
        return len(self._workers)

    def stats(self) -> dict:
        return {"python_seconds": self.seconds, "python_skipped": self.skipped,
                "python_step_seconds": {name: unit.timing()
                                        for name, unit in self._steps.items()},
                "python_wait_seconds": self.wait_seconds, "python_workers": len(self._workers),
                "python_restarts": self.restarts}

    def pids(self) -> list:
        """The worker processes' ids (those started)."""
        return [w.process.pid for w in self._workers if w is not None]

    def epoch(self, native_epoch, epoch: int, core, rewind):
        return PooledEpoch(self, native_epoch, epoch, core, rewind)

    def close(self) -> None:
        """Stops the worker processes (new ones start when needed)."""
        self._unsent.clear()
        _stop_all(self._workers)

    # Submitting ------------------------------------------------------------------------------

    def submit(self, batch: dict, epoch: int, index: int, position: int, state,
               padding: int, locate) -> _Batch:
        made = _Batch(self._torch, batch, self._steps, epoch, index, position, state, padding,
                      self._pin)
        made.locate = locate  # an error's text naming its sample's record (record_locator)
        chunks = len(self._workers)
        for name, unit in self._steps.items():
            inputs = [unit.samples(batch, field) for field in unit.inputs]
            size, places = _input_places(inputs, made.size)
            buffer = self._input(size)
            made.inputs.append(buffer)
            for k, values in enumerate(inputs):
                if isinstance(values, list):  # samples of varying shape (DecodeImage's)
                    for slot, sample in enumerate(values):
                        offset = places[slot][k][0]
                        buffer.bytes[offset:offset + sample.nbytes].view(sample.dtype) \
                            .view(sample.shape).copy_(sample)
                elif made.size:
                    offset = places[0][k][0]
                    buffer.bytes[offset:offset + values.nbytes].view(values.dtype) \
                        .view(values.shape).copy_(values)
            per = max(1, -(-made.size // chunks))  # a batch may have no sample left
            for first in range(0, made.size, per):
                slots = list(range(first, min(first + per, made.size)))
                self._next_id += 1
                made.tasks += 1
                self._unsent.append(_Task(self._next_id, made, name, buffer, buffer.id,
                                          {k: places[k] for k in slots}, epoch, slots))
        self._send_unsent()
        return made

    def _input(self, size: int) -> Shared:
        for number, buffer in enumerate(self._free_inputs):
            if buffer.size >= size:
                return self._free_inputs.pop(number)
        if len(self._free_inputs) >= self.window * len(self._steps):
            self._forget(self._free_inputs.pop(0))
        self._next_id += 1
        buffer = Shared(self._torch, max(size, 1))
        buffer.id = self._next_id
        return buffer

    def _forget(self, buffer: Shared) -> None:
        for worker in self._workers:
            if worker is not None and buffer.id in worker.known:
                worker.known.discard(buffer.id)
                try:
                    worker.conn.send(("forget", buffer.id))
                except OSError:  # it died: the wait finds out
                    pass
        buffer.close()

    def _release(self, batch: _Batch) -> None:
        self._free_inputs.extend(batch.inputs)
        batch.inputs = []

    def _send_unsent(self) -> None:
        while self._unsent:
            task = self._unsent.popleft()
            if task.batch.cancelled:
                self._done(task)
                continue
            number = (task.slots[0] * len(self._workers) // max(1, task.batch.size) +
                      task.batch.index) % len(self._workers)
            worker = self._workers[number]
            if worker is None:
                worker = self._workers[number] = _Worker(
                    self._torch, number, self._pickled, self._seed, self._rank,
                    self.output_limit, self._modules)
            try:
                if task.buffer_id not in worker.known:
                    worker.conn.send(("buffer", task.buffer_id, task.buffer.size))
                    reduction.send_handle(worker.conn, task.buffer.fd, worker.process.pid)
                    worker.known.add(task.buffer_id)
                if worker.free_outputs:
                    task.out = worker.free_outputs.pop()
                else:
                    task.out = worker.output_count
                    worker.output_count += 1
                worker.conn.send(("task", task.id, task.field, task.buffer_id,
                                  [task.places[slot] for slot in task.slots],
                                  task.epoch, task.batch.position,
                                  task.batch.index, task.slots, task.out))
            except OSError:  # the worker died: the wait finds out and sends the task again
                self._unsent.appendleft(task)
                return
            worker.tasks[task.id] = task

    def _done(self, task: _Task) -> None:
        batch = task.batch
        batch.tasks -= 1
        if batch.tasks == 0 and batch.cancelled:
            self._release(batch)

    def cancel(self, batches) -> None:
        """Drops `batches` (an iteration ended before them): their work is not waited for."""
        for batch in batches:
            batch.cancelled = True
            if batch.tasks == 0:
                self._release(batch)

    # Waiting ---------------------------------------------------------------------------------

    def wait(self, batch: _Batch) -> None:
        """Returns once every task of `batch` is done (results in it); stoker.Error if a worker
        cannot start."""
        start = time.perf_counter()
        try:
            self._send_unsent()
            while batch.tasks:
                live = [w for w in self._workers if w is not None]
                ready = connection.wait([w.conn for w in live] +
                                        [w.process.sentinel for w in live], _POLL_SECONDS)
                for worker in live:
                    if worker.conn in ready:
                        self._receive(worker)
                    elif worker.process.sentinel in ready:
                        self._lost(worker, None)
                self._check_hangs()
                self._send_unsent()
        finally:
            self.wait_seconds += time.perf_counter() - start

    def _receive(self, worker: _Worker) -> None:
        while worker.conn.poll():
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                self._lost(worker, None)
                return
            kind = message[0]
            if kind == "ready":
                worker.ready = True
            elif kind == "fatal":  # a step it could not unpickle
                _, field, number, error = message
                self._stop_all_workers(kill=True)
                raise _stoker.Error(" ".join(
                    f"field '{field}': the Python step {self._raw_names[field][number]} cannot "
                    f"be loaded in a worker process ({error}): define it in an importable "
                    "module, or pass python_workers=0".split()))
            elif kind == "output":
                worker.outputs.pop(message[1], None)
                worker.unmapped.pop(message[1], None)
                try:
                    worker.outputs[message[1]] = Shared(self._torch, message[2],
                                                         reduction.recv_handle(worker.conn))
                except OSError as e:  # out of memory (or address space): its samples fail
                    worker.unmapped[message[1]] = f"its worker's output buffer of " \
                        f"{message[2]:,} bytes could not be mapped ({e.strerror})"
                    continue
                worker.outputs[message[1]].close()  # the mapping stays
            else:  # "done"; the task leaves the worker's only once taken (Ctrl-C)
                task = worker.tasks[message[1]]
                if not task.batch.cancelled:
                    self._take(task, worker.outputs.get(task.out) or
                               worker.unmapped.get(task.out), message[3])
                del worker.tasks[message[1]]
                worker.free_outputs.append(task.out)
                self.seconds += message[2]
                timing = self._steps[task.field].seconds
                for number, seconds in enumerate(message[4]):
                    timing[number] += seconds
                self._done(task)

    def _take(self, task: _Task, output, results: list) -> None:
        """Copies each sample's outputs (`results`: (slot, [(byte offset, shape, dtype) per
        output field] or None, its error message)) out of the worker's buffer `output` (a
        Shared, or why it could not be mapped): into the batch tensor of a stacked field (made
        at the first sample's shape: a sample of another is left out, and refused at finish),
        else a tensor of its own. A sample whose outputs find no memory here fails."""
        batch = task.batch
        for slot, described, message in results:
            why = output if isinstance(output, str) else None
            if described is not None and why is None:
                try:
                    self._copy_outputs(task, output, slot, described)
                    continue
                except (OSError, MemoryError) as e:
                    why = str(e)
            if described is not None:
                message = sample_message(task.field, slot, batch.index, task.epoch,
                                         f"its outputs found no memory in the loader's process: "
                                         f"{why}")
            batch.errors[task.field][slot] = message

    def _copy_outputs(self, task: _Task, output: Shared, slot: int, described: list) -> None:
        """Sample `slot`'s outputs (`described`) copied out of `output` (_take's)."""
        torch = self._torch
        batch = task.batch
        unit = self._steps[task.field]
        for (field, form), (offset, shape, dtype) in zip(unit.outputs.items(), described):
            if dtype == PICKLED:  # a list field's object (TorchvisionSteps')
                batch.out[field][slot] = pickle.loads(
                    output.bytes[offset:offset + shape[0]].numpy().tobytes())
                continue
            dtype = getattr(torch, dtype)
            batch.described[field][slot] = (dtype, shape)
            if form != "stack":
                target = batch.out[field][slot] = self._empty(shape, dtype)
            else:
                out = batch.out[field]
                if out is None:
                    out = batch.out[field] = self._empty((batch.size,) + shape, dtype)
                if tuple(out.shape[1:]) != shape or out.dtype != dtype:
                    continue
                target = out[slot]
            target = target.reshape(-1).view(torch.uint8)
            target.copy_(output.bytes[offset:offset + len(target)])

    def _empty(self, shape: tuple, dtype):
        """An uninitialised tensor (pinned where the loader pins); MemoryError where torch's
        allocator finds no memory."""
        try:
            return self._torch.empty(shape, dtype=dtype, pin_memory=self._pin)
        except RuntimeError as e:  # torch's allocator says so by RuntimeError
            raise MemoryError(str(e)) from None

    def _check_hangs(self) -> None:
        """Kills a worker whose step has run past the timeout, or that has not started in
        max(timeout, _START_SECONDS)."""
        now = time.monotonic_ns()
        for worker in [w for w in self._workers if w is not None and w.tasks]:
            if not worker.ready and now - worker.started > max(self._timeout,
                                                               _START_SECONDS) * 1e9:
                worker.process.kill()
                self._lost(worker, None)  # raises: it did not start
            task_id, slot, number, started = STATUS.unpack_from(worker.status.map)
            if started and now - started > self._timeout * 1e9:
                worker.process.kill()
                self._lost(worker, (task_id, slot, number, "ran longer than python_timeout="
                                    f"{self._timeout:g} s: its worker process (pid "
                                    f"{worker.process.pid}) was killed and replaced"))

    def _lost(self, worker: _Worker, hung) -> None:
        """`worker` is gone: the sample it was running fails, its other tasks go to a new
        worker."""
        worker.process.join()
        if not worker.ready:
            self._stop_all_workers(kill=True)
            raise _stoker.Error(f"a Python worker process exited with code "
                                f"{worker.process.exitcode} before it started (its error is "
                                "above, on stderr; a script whose steps run in worker "
                                "processes needs if __name__ == '__main__': around its main "
                                "code)")
        if hung is None:
            task_id, slot, number, started = STATUS.unpack_from(worker.status.map)
            code = worker.process.exitcode
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            hung = (task_id, slot, number, f"was running when its worker process (pid "
                    f"{worker.process.pid}) died ({how}); a new one took its place") \
                if started else None
        self.restarts += 1
        self._workers[worker.number] = None
        tasks = list(worker.tasks.values())
        worker.tasks.clear()
        worker.stop(kill=True)
        for task in reversed(tasks):
            if hung is not None and task.id == hung[0] and hung[1] in task.slots:
                _, slot, number, text = hung
                names = self._steps[task.field].steps
                step = step_name(names[min(number, len(names) - 1)])
                task.batch.errors[task.field][slot] = sample_message(
                    task.field, slot, task.batch.index, task.epoch, f"{step} {text}")
                task.slots = [s for s in task.slots if s != slot]
            if task.slots:
                self._unsent.appendleft(task)
            else:
                self._done(task)

    def _stop_all_workers(self, kill: bool) -> None:
        for number, worker in enumerate(self._workers):
            if worker is not None:
                for task in reversed(list(worker.tasks.values())):
                    self._unsent.appendleft(task)
                worker.tasks.clear()
                worker.stop(kill=kill)
                self._workers[number] = None

    def interrupted(self) -> None:
        """Ctrl-C: every worker stopped at once; their unfinished tasks go to new ones if the
        iteration goes on."""
        self._stop_all_workers(kill=True)

    # Finishing -------------------------------------------------------------------------------

    def finish(self, batch: _Batch) -> dict:
        """The batch `batch` as the loader yields it, or stoker.Error (a failed sample under
        on_error="raise", samples of different shapes)."""
        self._release(batch)
        torch = self._torch
        try:
            failed = set()
            for name in self._steps:
                for slot in sorted(batch.errors[name]):
                    if not self._skip:
                        raise SampleError(batch.locate(slot, batch.errors[name][slot]))
                    failed.add(slot)
            keep = [slot for slot in range(batch.size) if slot not in failed]

            def output(name, field, form):
                values = batch.out[field]
                if form != "stack":
                    return batch_values(torch, name, field, form, [values[k] for k in keep],
                                        keep, batch.index, batch.epoch)
                if keep:
                    check_uniform(name, batch.index, batch.epoch,
                                  [(slot,) + batch.described[field][slot] for slot in keep])
                return {field: torch.empty(0) if not keep else
                        values if len(keep) == batch.size else values[keep]}

            out = assembled(self._steps, batch.order, lambda field: batch.kept[field] if len(
                keep) == batch.size else kept_samples(batch.kept[field], keep), output)
        except SampleError as e:
            raise _stoker.Error(str(e)) from None
        self.skipped += len(failed)
        return out


class PooledEpoch:
    """A native epoch whose batches go through a PythonPool, ``window`` batches ahead of the
    consumer. ``state``: the loader's (seed, epoch, position) after the batch last yielded
    (the native loader is further on); rewind(state) puts the native loader there."""

    def __init__(self, pool: PythonPool, native_epoch, epoch: int, core, rewind):
        self.inner = native_epoch
        self._rewind = rewind
        self._pool = pool
        self._epoch = epoch
        self._core = core
        self._pending: collections.deque = collections.deque()  # _Batch or an exception
        self._exhausted = False
        self.state = core.state()
        self.last_padding = 0

    def __iter__(self):
        return self

    def _fill(self) -> None:
        while len(self._pending) < self._pool.window and not self._exhausted:
            try:
                batch = next(self.inner)
            except StopIteration:
                self._exhausted = True
                return
            except Exception as error:  # noqa: BLE001 (raised in order by __next__)
                self._pending.append((error, self._core.state()))
                return
            state = self._core.state()
            self._pending.append(self._pool.submit(
                batch, self._epoch, self.inner.last_index, state[2], state,
                self.inner.last_padding, record_locator(self._core, self.inner.last_records)))

    def __next__(self):
        try:
            return self._next()
        except KeyboardInterrupt:
            self._pool.interrupted()
            raise

    def _next(self):
        self._fill()
        if not self._pending:
            raise StopIteration
        head = self._pending[0]
        if isinstance(head, tuple):
            self._pending.popleft()
            self.state = head[1]
            raise head[0]
        self._pool.wait(head)
        self._pending.popleft()
        self.state = head.state
        self.last_padding = head.padding
        self._fill()  # the workers go on while the consumer uses this batch
        return self._pool.finish(head)

    def __len__(self):
        return len(self.inner)

    @property
    def live(self):
        return bool(self._pending) or not self._exhausted

    def close(self):
        """Ends the iteration; the native loader goes back to the consumer's position (it ran
        ahead), so that state_dict() says where the consumer stopped, as without workers."""
        ahead = bool(self._pending)
        self._pool.cancel([b for b in self._pending if not isinstance(b, tuple)])
        self._pending.clear()
        self._exhausted = True
        self.inner.close()
        if ahead:
            self._rewind(self.state)

    def __del__(self):
        if getattr(self, "_pending", None):
            try:
                self.close()
            except Exception:  # noqa: BLE001 (the loader already gone, or being torn down)
                pass
