"""A worker process of the Python steps (_python_pool.py is the loader's side): it unpickles
the units of steps once (a field's, or the steps after a joint transform), then runs each task
the loader sends through its pipe (a chunk of one unit's samples of one batch, each sample's
input tensors in an input buffer) and writes each sample's output tensors into an output buffer
of its own, grown as needed and handed to the loader once. Before each step it writes (task, sample,
step, start time) into its status block, so that the loader can name the sample of a worker
that hangs or dies. It ignores SIGINT (Ctrl-C is the loader's) and exits when its parent, the
forkserver, is gone (which goes with the loader's process).

The buffers are memfds: no name in /dev/shm, so none can be left behind.
"""

from __future__ import annotations

import math
import mmap
import os
import pickle
import signal
import struct
import threading
import time
from multiprocessing import reduction
from typing import Dict, Optional

from stoker._python_steps import (SampleError, _Seeded, error_text, gathered, sample_message,
                                  sample_seed, step_name)


# A worker's status block: the task, slot and step it runs, and when the sample started
# (time.monotonic_ns(); 0 while it runs none).
STATUS = struct.Struct("qqqq")


class Shared:
    """A memfd of `size` bytes mapped here (its own fd unless one is given, then adopted);
    OSError (the fd closed) where it cannot be made or mapped (no memory left)."""

    def __init__(self, torch, size: int, fd: Optional[int] = None):
        made = fd is None
        self.fd = os.memfd_create("stoker-python-steps", os.MFD_CLOEXEC) if made else fd
        self.size = size
        try:
            if made:
                os.ftruncate(self.fd, size)
            self.map = mmap.mmap(self.fd, size)
        except OSError:
            self.close()
            raise
        self.bytes = torch.frombuffer(self.map, dtype=torch.uint8)

    def close(self) -> None:
        """Closes the fd (the mapping stays while this object does)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self):
        if hasattr(self, "fd"):
            self.close()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def worker_main(conn, pickled: Dict[str, tuple], seed: int, rank: int, limit: int):
    """A worker process: runs the tasks the loader sends until it says stop or goes away. A
    sample whose outputs take more than `limit` bytes fails (SampleError's message), as does one
    whose outputs find no shared memory."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the loader's to handle
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    import numpy
    import torch
    torch.set_num_threads(1)
    units = {}
    for name, (unit, payloads) in pickled.items():
        steps = []
        for number, payload in enumerate(payloads):
            try:
                steps.append(pickle.loads(payload))
            except Exception as e:  # unpickling runs the object's own code
                conn.send(("fatal", name, number, f"{type(e).__name__}: {e}"))
                return
        make, args = pickle.loads(unit)  # _python_pool.picklable_units'
        units[name] = make(torch, steps, *args)
    conn.send(("ready",))
    status = None
    inputs: Dict[int, Shared] = {}
    outputs: Dict[int, Shared] = {}
    generators = _Seeded(torch, numpy)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        kind = message[0]
        if kind == "status":
            status = Shared(torch, STATUS.size, reduction.recv_handle(conn))
        elif kind == "buffer":
            inputs[message[1]] = Shared(torch, message[2], reduction.recv_handle(conn))
            inputs[message[1]].close()  # the mapping stays
        elif kind == "forget":
            inputs.pop(message[1], None)
        elif kind == "task":
            _run_task(torch, numpy, conn, units, seed, rank, limit, status, inputs, outputs,
                      generators, *message[1:])
        else:  # "stop"
            return


def _run_task(torch, numpy, conn, units, seed, rank, limit, status, inputs, outputs, generators,
              task_id, name, buffer_id, places, epoch, position, index, slots, out_index):
    start = time.perf_counter()
    unit = units[name]
    before = list(unit.seconds)
    source = inputs[buffer_id].bytes
    output = outputs.get(out_index)
    results = []
    offset = 0

    def on_step(number, slot=0):
        STATUS.pack_into(status.map, 0, task_id, slot, number, time.monotonic_ns())

    def value(start_byte, shape, dtype):
        dtype = getattr(torch, dtype)
        count = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
        return source[start_byte:start_byte + count].view(dtype).view(shape)

    # Each input field's samples of the task, as the unit's run() takes them.
    fields = [gathered(unit, [value(*sample_places[k]) for sample_places in places])
              for k in range(len(places[0]) if places else 0)]
    for k, slot in enumerate(slots):
        values = [samples[k] for samples in fields]
        sample = sample_seed(seed, epoch, rank, position, slot)
        if getattr(unit, "seeded", True):  # not where the steps draw nothing (a caption's)
            generators.seed(sample)
        where = (name, slot, index, epoch)
        try:
            made = [sendable(torch, y, where) for y in unit.run(
                torch, numpy, tuple(values), sample, where,
                lambda number, slot=slot: on_step(number, slot))]
            size = sum(y.nbytes for y, _ in made)
            if size > limit:
                raise SampleError(sample_message(
                    *where, f"the Python steps gave {size:,} bytes of outputs (last step "
                    f"{step_name(unit.steps[-1])}), more than the {limit:,} a sample may send "
                    "from a worker process (a batch of them would take more than half this "
                    "machine's memory): lower batch_size, or pass python_workers=0 to run the "
                    "steps in the loader's process"))
            if output is None or offset + size > output.size:
                output = _grown(torch, conn, outputs, out_index, output, offset, offset + size,
                                where)
        except SampleError as e:
            results.append((slot, None, str(e)))
            continue
        described = []
        for y, kind in made:
            flat = y.reshape(-1).view(torch.uint8) if y.numel() else \
                torch.empty(0, dtype=torch.uint8)
            end = offset + len(flat)
            output.bytes[offset:end].copy_(flat)
            described.append((offset, tuple(y.shape), kind))
            offset = end
        results.append((slot, described, None))
    STATUS.pack_into(status.map, 0, 0, 0, 0, 0)
    conn.send(("done", task_id, time.perf_counter() - start, results,
               [now - then for now, then in zip(unit.seconds, before)]))


# The dtype name of an output that is not a plain tensor (a TorchvisionSteps' list, dict,
# str, ...): its bytes are the object pickled.
PICKLED = "pickled"


def sendable(torch, y, where: tuple) -> tuple:
    """(a C-contiguous tensor of output `y`'s bytes, the name of the dtype the loader reads them
    as): a plain dense tensor as itself; anything else pickled (PICKLED). SampleError naming
    the sample (`where`) for an object that cannot be pickled."""
    if type(y) is torch.Tensor and y.layout == torch.strided:
        return y.contiguous(), str(y.dtype).rsplit(".", 1)[-1]
    try:
        data = pickle.dumps(y, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # pickling runs the object's own code: anything may raise
        raise SampleError(sample_message(
            *where, f"the Python steps gave a {type(y).__name__} that cannot be sent from a "
            f"worker process ({error_text(e)}): pass python_workers=0 to run the steps in "
            "the loader's process")) from None
    return torch.frombuffer(bytearray(data), dtype=torch.uint8), PICKLED


def _grown(torch, conn, outputs, out_index, output, used, end, where) -> Shared:
    """Output buffer `out_index` (`output`, its first `used` bytes kept) grown to hold `end`
    bytes, and handed to the loader; SampleError naming the sample (`where`) where shared
    memory is short."""
    try:
        grown = Shared(torch, max(end, 2 * (output.size if output else 0), 4096))
    except OSError as e:
        raise SampleError(sample_message(
            *where, f"its outputs ({end - used:,} bytes) found no shared memory to go to the "
            f"loader ({e.strerror})")) from None
    if used:
        grown.bytes[:used].copy_(output.bytes[:used])
    conn.send(("output", out_index, grown.size))
    reduction.send_handle(conn, grown.fd, os.getppid())
    grown.close()
    outputs[out_index] = grown
    return grown
