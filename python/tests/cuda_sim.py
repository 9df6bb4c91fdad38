"""A simulated torch.cuda and native epoch for stoker._device.CudaEpoch, to check its order
without a GPU (test_cuda_epoch_protocol.py; the C++ feed's twin is testing/sim_device.h).

The device: each stream is a FIFO of operations (a copy, an event's record, a wait for an event,
a kernel), run at a speed of its own drawn at random. Threaded, each stream is run by a thread
that sleeps a random delay (seeded) before each operation; stepped, no thread runs: a third of
the host's calls into the simulation, drawn at random (seeded), run one operation of a stream
drawn by speed, and synchronize() runs them until its event completes, so a run is
deterministic. Streams run independently of each other, as torch's pool streams
(cudaStreamNonBlocking) do of each other and of the default stream. A non-blocking copy reads
the host buffer when it runs, in two halves. The current stream is the one host thread's.

Device memory is cached per stream as torch's caching allocator does: a tensor dropped goes
back to the pool of the stream it was allocated on at once or, if recorded on other streams
(record_stream), once each of those has run the work queued before it was dropped. From then
on the next allocation on that stream may rewrite it: a poison operation is queued there.

Host batches (Native) are views of recycled buffers, built `prefetch` ahead by the "workers": a
buffer goes back to the pool when the last tensor viewing it is dropped, is poisoned at once
and rebuilt as a later batch.

Sim.violations counts
  host_rewritten    a host buffer let go while a copy queued from it has not run;
  read_before_copy  a kernel reads device memory before the copy (or kernel) writing it ran;
  wrong_data        a kernel reads bytes other than those the workers built (torn, rewritten);
  freed_while_read  device memory back in its pool while a kernel queued on another stream
                    still reads it.
"""

import collections
import contextlib
import random
import threading
import time
import types
import weakref

FRESH = 0xFF  # device memory never written
POISON = 0xFE  # device memory back in its pool, or a host buffer let go


def content(batch, field, size):
    """The bytes the workers build for field `field` of batch `batch`."""
    return bytes((batch * 37 + field * 101 + k) % 200 + 1 for k in range(size))


class _Mark:
    """A point in a stream's work: done once the stream has run the work queued before it."""
    done = False


class _Allocation:
    """One device tensor's memory: `block` from the pool of `stream`."""

    def __init__(self, block, stream):
        self.block = block
        self.stream = stream
        self.uses = set()  # streams recorded by record_stream
        self.reads = collections.Counter()  # kernels queued that read it, by stream
        self.written = False  # the copy or kernel that writes it has run
        self.freed = False


class Stream:
    """torch.cuda.Stream: a queue of device work run in order."""

    def __init__(self, sim, device=None):
        self._sim = sim
        self.ops = collections.deque()  # (mark waited for or None, function or None)
        sim._add(self)

    def wait_event(self, event):
        """Work queued after this waits for the work before `event`'s last record (nothing if
        it was never recorded)."""
        if event.mark is not None:
            self._sim._call(self._sim._push, self, event.mark, None)


class Event:
    """torch.cuda.Event: query() and synchronize() see its last record; an event never
    recorded counts as complete."""

    def __init__(self, sim):
        self._sim = sim
        self.mark = None

    def record(self, stream=None):
        self.mark = self._sim._call(self._sim._record, stream or self._sim.current)

    def query(self):
        return self._sim._call(lambda: self.mark is None or self.mark.done)

    def synchronize(self):
        self._sim.synchronize(self.mark)


class DeviceTensor:
    """A CUDA tensor: its memory goes back to the allocator when the object is dropped."""

    def __init__(self, sim, allocation):
        self._allocation = allocation
        weakref.finalize(self, sim._call, sim._free, allocation)

    def record_stream(self, stream):
        """Its memory is not reused before `stream` ran the work queued when it is dropped."""
        self._allocation.uses.add(stream)


class HostTensor:
    """A view of `size` bytes at `start` of a pooled host buffer (pinned)."""

    def __init__(self, native, buffer, start, size):
        self._sim = native.sim
        self._buffer = buffer
        self._start = start
        self._size = size
        weakref.finalize(self, native._drop, buffer)

    def to(self, device, non_blocking):
        """A device tensor whose copy is queued on the current stream; it reads this buffer
        when it runs (only non-blocking copies are simulated)."""
        assert non_blocking
        return self._sim._call(self._sim._copy, self._buffer, self._start, self._size)


class Sim:
    """The simulated device; `torch` is the torch module CudaEpoch sees. Thread-safe."""

    def __init__(self, seed, threaded, max_delay=100e-6):
        self._cv = threading.Condition(threading.RLock())
        self._rng = random.Random(seed)
        self._threaded = threaded
        self._max_delay = max_delay
        self._streams = []
        self._threads = []
        self._stopping = False
        self._pools = collections.defaultdict(list)  # (stream, bytes): free blocks
        self.violations = collections.Counter()
        self.current = Stream(self)  # the default stream until torch.cuda.stream() changes it
        self.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
            Stream=lambda device=None: Stream(self, device), Event=lambda: Event(self),
            stream=self._stream_context, current_stream=lambda device=None: self.current))

    @contextlib.contextmanager
    def _stream_context(self, stream):
        previous, self.current = self.current, stream
        try:
            yield stream
        finally:
            self.current = previous

    # The consumer's kernels, on `stream` (the current stream if None) ----------------------

    def read(self, tensor, expected, stream=None):
        """A kernel that reads `tensor` and expects `expected` (bytes)."""
        stream = stream or self.current
        allocation = tensor._allocation

        def run():
            self._check(allocation, stream, expected)

        self._call(self._reading, allocation, stream, run)

    def map(self, tensor, function):
        """A new tensor of function(bytes of `tensor`), made by a kernel on the current stream."""
        stream, source = self.current, tensor._allocation
        target = self._call(self._allocate, stream, len(source.block))

        def run():
            self._check(source, stream, None)
            target.block[:] = function(bytes(source.block))
            target.written = True

        self._call(self._reading, source, stream, run)
        return DeviceTensor(self, target)

    # Waiting ---------------------------------------------------------------------------------

    def synchronize(self, mark):
        """Blocks until the work before `mark` has run."""
        with self._cv:
            while mark is not None and not mark.done:
                if self._threaded:
                    self._cv.wait()
                elif not self._step():
                    raise RuntimeError("sim: synchronize() on work that never runs")

    def close(self):
        """Runs what is queued, then stops the streams' threads."""
        with self._cv:
            while any(s.ops for s in self._streams):
                if self._threaded:
                    if not self._cv.wait(timeout=10):
                        raise RuntimeError("sim: queued work waits for an event never recorded")
                elif not self._step():
                    raise RuntimeError("sim: queued work waits for an event never recorded")
            self._stopping = True
            self._cv.notify_all()
        for thread in self._threads:
            thread.join()

    # Internals (the lock held where named _) --------------------------------------------------

    def _call(self, function, *args):
        """function(*args) under the lock, after (stepped) perhaps one operation of the device."""
        with self._cv:
            if not self._threaded and self._rng.random() < 1 / 3:
                self._step()
            return function(*args)

    def _add(self, stream):
        """Draws `stream`'s speed (relative to the others') and, threaded, starts its thread."""
        stream.speed = self._rng.uniform(0.1, 1)
        self._streams.append(stream)
        if self._threaded:
            rng = random.Random(self._rng.random())
            thread = threading.Thread(target=self._run, args=(stream, rng), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _push(self, stream, waits, function):
        stream.ops.append((waits, function))
        self._cv.notify_all()

    def _record(self, stream):
        mark = _Mark()
        self._push(stream, None, lambda: setattr(mark, "done", True))
        return mark

    def _allocate(self, stream, size):
        pool = self._pools[(stream, size)]
        return _Allocation(pool.pop() if pool else bytearray([FRESH]) * size, stream)

    def _copy(self, buffer, start, size):
        stream = self.current
        target = self._allocate(stream, size)
        buffer.copies += 2
        for low, high in ((0, size // 2), (size // 2, size)):
            def run(low=low, high=high):
                target.block[low:high] = buffer.data[start + low:start + high]
                buffer.copies -= 1
                target.written = high == size  # the second half completes the copy
            self._push(stream, None, run)
        return DeviceTensor(self, target)

    def _reading(self, allocation, stream, run):
        allocation.reads[stream] += 1
        self._push(stream, None, run)

    def _check(self, allocation, stream, expected):
        allocation.reads[stream] -= 1
        if allocation.freed and stream is not allocation.stream:
            return  # counted as freed_while_read
        if not allocation.written:
            self.violations["read_before_copy"] += 1
        elif expected is not None and allocation.block != expected:
            self.violations["wrong_data"] += 1

    def _free(self, allocation):
        others = allocation.uses - {allocation.stream}
        if not others:
            self._to_pool(allocation)
            return
        waiting = [len(others)]

        def passed():
            waiting[0] -= 1
            if waiting[0] == 0:
                self._to_pool(allocation)

        for stream in others:
            self._push(stream, None, passed)

    def _to_pool(self, allocation):
        allocation.freed = True
        if any(n for s, n in allocation.reads.items() if s is not allocation.stream):
            self.violations["freed_while_read"] += 1
        block = allocation.block
        self._push(allocation.stream, None, lambda: block.__setitem__(
            slice(None), bytes([POISON]) * len(block)))
        self._pools[(allocation.stream, len(block))].append(block)

    def _let_go(self, buffer):
        if buffer.copies:
            self.violations["host_rewritten"] += 1
        buffer.data[:] = bytes([POISON]) * len(buffer.data)

    def _runnable(self, stream):
        return bool(stream.ops) and (stream.ops[0][0] is None or stream.ops[0][0].done)

    def _run_front(self, stream):
        _, function = stream.ops.popleft()
        if function is not None:
            function()
        self._cv.notify_all()

    def _step(self):
        """Runs one operation of a random stream that can run; False if none can."""
        ready = [s for s in self._streams if self._runnable(s)]
        if not ready:
            return False
        self._run_front(self._rng.choices(ready, [s.speed for s in ready])[0])
        return True

    def _run(self, stream, rng):
        with self._cv:
            while True:
                self._cv.wait_for(lambda: self._stopping or self._runnable(stream))
                if not self._runnable(stream):
                    return
                self._cv.release()
                time.sleep(rng.random() * self._max_delay / stream.speed)
                self._cv.acquire()
                self._run_front(stream)


class _Buffer:
    """A pooled host buffer: one batch's fields, back to back."""

    def __init__(self, size):
        self.data = bytearray(size)
        self.copies = 0  # copies queued from it that have not run
        self.views = 0  # host tensors alive


def field_bytes(size):
    """The bytes of a field given as a size, or as a tuple of its samples' sizes (a field of
    varying size, delivered as a list)."""
    return sum(size) if isinstance(size, tuple) else size


class Native:
    """The native loader and its epoch as CudaEpoch sees them (one object): `batches` host
    batches, {name: HostTensor, or a list of them for a field of varying size} over one pooled
    buffer each, `fields` ((name, bytes or (sample bytes, ...)), ...) with content(); the
    workers keep `prefetch` batches built ahead."""

    def __init__(self, sim, batches, prefetch, fields):
        self.sim = sim
        self._batches = batches
        self.prefetch = prefetch
        self._fields = fields
        self._starts = [sum(field_bytes(size) for _, size in fields[:f])
                        for f in range(len(fields))]
        self._built = collections.deque()  # buffers of the next batches, in order
        self._idle = []
        self._next_built = 0
        self.delivered = 0
        self.allocations = 0  # host buffers ever allocated
        self.out = 0  # batches delivered whose buffer is not back
        self._closed = False
        self._build_ahead()

    def state(self):
        return (0, 0, self.delivered)

    def __len__(self):
        return self._batches

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed or self.delivered == self._batches:
            raise StopIteration
        buffer = self._built.popleft()
        self.delivered += 1
        self.out += 1
        host = {name: self._views(buffer, start, size)
                for (name, size), start in zip(self._fields, self._starts)}
        buffer.views = sum(len(v) if isinstance(v, list) else 1 for v in host.values())
        self._build_ahead()
        return host

    def _views(self, buffer, start, size):
        if not isinstance(size, tuple):
            return HostTensor(self, buffer, start, size)
        offsets = [start + sum(size[:k]) for k in range(len(size))]
        return [HostTensor(self, buffer, at, n) for at, n in zip(offsets, size)]

    def close(self):
        self._closed = True
        self._idle.extend(self._built)
        self._built.clear()

    def _build(self):
        if self._idle:
            buffer = self._idle.pop()
        else:
            buffer = _Buffer(sum(field_bytes(size) for _, size in self._fields))
            self.allocations += 1
        built = b"".join(content(self._next_built, f, field_bytes(size))
                         for f, (_, size) in enumerate(self._fields))
        self.sim._call(buffer.data.__setitem__, slice(None), built)
        self._built.append(buffer)
        self._next_built += 1

    def _build_ahead(self):
        while not self._closed and len(self._built) < self.prefetch and \
                self._next_built < self._batches:
            self._build()

    def _drop(self, buffer):
        buffer.views -= 1
        if buffer.views == 0:
            self.sim._call(self.sim._let_go, buffer)
            self.out -= 1
            self._idle.append(buffer)
            self._build_ahead()
