"""The threads that run Python steps in the loader's process (_python_steps.PythonSteps): Work
(a sample's steps, or a batch's samples one after another) taken whole by one daemon thread, a
step that runs past the timeout abandoned to run on in its thread, and the threads kept still
while the interpreter ends.

At exit, a daemon thread that wants the GIL back is ended by Python (pthread_exit); if that
happens inside torch's C++ code (freeing a tensor releases the GIL), the unwinding crosses a
noexcept frame and the process aborts ("terminate called without an active exception"). So at
exit (atexit, before Python starts ending threads) no thread starts another step or Work: each
one parks for good at the next step it would start, and the exit waits up to
EXIT_WAIT_SECONDS for the steps running to finish (DataLoader waits as long for its workers),
not for those past their timeout. A step still running after that, or one that ignores it
(abandoned), is the program's own code running into the interpreter's end. Work submitted after
that (a loader iterated by a later atexit handler) is refused in one RuntimeError, not left to
wait for parked threads.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
from typing import Callable, List

# The longest a thread waiting for the steps' threads blocks without looking at the clock.
_POLL_SECONDS = 0.1
# At exit, the longest wait for the steps running to finish.
EXIT_WAIT_SECONDS = 5.0

_exiting = False
# Every StepThread whose thread runs (abandoned or not), for _at_exit.
_running: set = set()
# Never released: a thread that acquires it parks until the process ends.
_parked_for_good = threading.Lock()
_parked_for_good.acquire()


class Work:
    """Calls run in order by one of StepThreads' threads (a sample's steps, or a batch's samples
    one after another): results[k] is call k's, each call(thread) given the thread that runs
    it (for StepThread.at); after a result for which stop(k, result) is true the rest are not
    run. ``done`` once none is left to run (or it is cancelled)."""

    def __init__(self, calls: list, stop: Callable = lambda k, result: False):
        self.calls = calls
        self.stop = stop
        self.results: list = [None] * len(calls)
        self.next = 0  # the first call not yet taken
        self.stopped = False
        self.cancelled = False
        self.done = False


class StepThread:
    """One of StepThreads' threads: what it runs (``work``, its call ``call``), and which step
    of which sample since when (``at``)."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.work = None
        self.call = 0
        self.started = 0.0  # time.monotonic() when the step it runs started; 0: none
        self.late = None  # gives the error (a result) of a step that runs too long
        self.abandoned = False
        self.idle = True  # waiting for Work, holding none
        self.parked = False

    def at(self, started: float, late: Callable) -> None:
        """A step starts now (`started`); late(): its result (the
        error) if it runs past the timeout. At
        exit, the thread parks instead."""
        _park_if_exiting(self)
        self.started = started
        self.late = late

    def running(self, now: float) -> bool:
        """Whether the exit waits for this thread: it runs Work (or frees it: the last reference
        to a Work the loader dropped frees its tensors), neither parked nor abandoned, in no step
        or in one within its timeout."""
        return (not self.idle and not self.parked and not self.abandoned and
                not (self.started and now - self.started > self.timeout))


class StepThreads:
    """`count` daemon threads that run Work, each taken whole by one thread (a batch's samples
    in order) or, one per sample, by many at once. A step that runs longer than `timeout`
    seconds on a sample makes that sample a SampleError, and the rest of its Work goes on in a
    new thread: a Python thread cannot be stopped, so its own is abandoned (a daemon, it runs
    on, its results dropped, and does not hold the interpreter at exit). Threads start when
    the first Work comes."""

    def __init__(self, count: int, timeout: float):
        self.count = count
        self._timeout = timeout
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._changed = threading.Condition()
        self._threads: List[StepThread] = []

    def submit(self, work: Work) -> Work:
        if _exiting:  # its threads would park: the batch would never come
            raise RuntimeError("stoker: Python steps do not run while the interpreter exits (a "
                               "loader iterated from an atexit handler)")
        with self._changed:
            while len(self._threads) < self.count:
                self._start()
        self._queue.put(work)
        return work

    def wait(self, works: list) -> None:
        """Returns once every one of `works` is done, abandoning the threads whose step runs past
        the timeout on the way (Ctrl-C interrupts it)."""
        with self._changed:
            while not all(work.done for work in works):
                self._changed.wait(_POLL_SECONDS)
                self._abandon_late()

    def cancel(self, works: list) -> None:
        with self._changed:
            for work in works:
                work.cancelled = True

    def close(self) -> None:
        """The threads end after what they run (new ones start when needed); Work not taken is
        dropped."""
        with self._changed:
            for _ in self._threads:
                self._queue.put(None)
            self._threads = []
            self._queue = queue.SimpleQueue()

    def __del__(self):
        # Its threads hold no reference to it. Each is told to end, with nothing looked up in
        # a module: at the interpreter's exit they may be cleared already.
        for _ in self._threads:
            self._queue.put(None)

    def _start(self) -> None:
        thread = StepThread(self._timeout)
        self._threads.append(thread)
        _running.add(thread)
        threading.Thread(target=_serve, args=(thread, self._queue, self._changed), daemon=True,
                         name="stoker-python").start()

    def _abandon_late(self) -> None:
        now = time.monotonic()
        for thread in [t for t in self._threads if t.started and now - t.started >
                       self._timeout]:
            thread.abandoned = True
            self._threads.remove(thread)
            _record(thread.work, thread.call, thread.late())
            self._start()
            self._queue.put(thread.work)  # the rest of it, in another thread


def _serve(thread: StepThread, works: queue.SimpleQueue, changed: threading.Condition) -> None:
    """A StepThreads thread: runs the Work it takes from `works` until it takes None or is
    abandoned (holding none between them: the loader may go)."""
    try:
        while True:
            work = works.get()
            thread.idle = False
            going_on = _run(thread, work, changed)
            del work
            if not going_on:
                return
            thread.idle = True  # at exit it waits here, or parks in its next _run
    finally:
        _running.discard(thread)


def _run(thread: StepThread, work, changed: threading.Condition) -> bool:
    """Runs `work`'s calls left; False where `work` is None or `thread` was abandoned."""
    while work is not None:
        _park_if_exiting(thread)
        with changed:
            if thread.abandoned:
                return False
            if work.cancelled or work.stopped or work.next == len(work.calls):
                work.done = True
                thread.work = None
                changed.notify_all()
                return True
            thread.work, thread.call = work, work.next
            work.next += 1
        result = work.calls[thread.call](thread)
        with changed:
            if thread.abandoned:
                return False
            thread.started, thread.late = 0.0, None
            _record(work, thread.call, result)
    return False


def _record(work: Work, k: int, result) -> None:
    work.results[k] = result
    work.stopped = work.stopped or work.stop(k, result)


def _park_if_exiting(thread: StepThread) -> None:
    """At exit, `thread` stops here for good, holding what it holds (nothing freed, no GIL)."""
    if _exiting:
        thread.parked = True
        _parked_for_good.acquire()


def _at_exit() -> None:
    """No step or Work starts from now on; waits up to EXIT_WAIT_SECONDS for the steps running
    to finish (their threads then park)."""
    global _exiting
    _exiting = True
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    while time.monotonic() < deadline and any(
            thread.running(time.monotonic()) for thread in list(_running)):
        time.sleep(0.01)


atexit.register(_at_exit)
