"""The prepared samples of a source for stoker.write_dataset, in order: a map-style source's
prepared a few chunks ahead by worker processes (forked) or threads, or here when workers are
not worth it; an iterable's here. An exception names the sample it came from."""

import collections
import multiprocessing
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

# In-flight chunks per worker, and the largest chunk of samples one task prepares.
_CHUNKS_PER_WORKER = 2
MAX_CHUNK = 64
# workers=None: samples timed before deciding; the time below which a source is written
# without workers (starting worker processes takes about 0.1 s); and the time per sample below
# which workers are not worth it (sending a sample from a worker process to the writer costs
# CPU time too: Fashion-MNIST's 15 us per sample became 27 us in all with 2 processes).
_PROBE_SAMPLES = 32
_SEQUENTIAL_SECONDS = 1.0
_SEQUENTIAL_SAMPLE_SECONDS = 50e-6


def prepare_range(source, prepare, start, end):
    """Samples start .. end - 1 of a map-style source, prepared (each a (sample, statistics)
    pair, as _sample_values.Preparer gives them). An exception names the sample
    (a note, so that its type stays what the source raised)."""
    samples = []
    for index in range(start, end):
        try:
            samples.append(prepare(source[index], index))
        except Exception as e:
            _note(e, f"stoker.write_dataset: while preparing sample {index} of the source")
            raise
    return samples


def _note(exception, text):
    if hasattr(exception, "add_note") and text not in getattr(exception, "__notes__", ()):
        exception.add_note(text)


# The source and preparer of a worker process (set by its initializer; fork shares them).
_worker_job = None


def _init_worker_process(source, prepare):
    global _worker_job
    _worker_job = (source, prepare)
    # Ctrl-C is the parent's to handle: it stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _prepare_range_in_worker(start, end):
    return prepare_range(*_worker_job, start, end)


def map_style_samples(source, prepare, first, workers, parallel):
    """The prepared samples of a map-style source from index `first`, in order; chunks of them
    are prepared by `workers` processes or threads a few chunks ahead. `workers` None: the
    first _PROBE_SAMPLES are prepared here and timed (with the writing between them); then one
    worker per core if a sample takes _SEQUENTIAL_SAMPLE_SECONDS or more and the rest would
    take over _SEQUENTIAL_SECONDS like that, else none."""
    n = len(source)
    if workers is None:
        probe_end = min(n, first + _PROBE_SAMPLES)
        start = time.perf_counter()
        for index in range(first, probe_end):
            yield from prepare_range(source, prepare, index, index + 1)
        per_sample = (time.perf_counter() - start) / max(1, probe_end - first)
        first = probe_end
        cores = len(os.sched_getaffinity(0))
        worth_it = (per_sample >= _SEQUENTIAL_SAMPLE_SECONDS and
                    per_sample * (n - first) > _SEQUENTIAL_SECONDS)
        workers = cores if cores > 1 and worth_it else 0
    if workers == 0:
        for index in range(first, n):
            yield from prepare_range(source, prepare, index, index + 1)
        return
    chunk = max(1, min(MAX_CHUNK, (n - first) // (workers * 16)))
    if parallel == "processes":
        executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                       initializer=_init_worker_process,
                                       initargs=(source, prepare))

        def submit(start, end):
            return executor.submit(_prepare_range_in_worker, start, end)
    else:
        executor = ThreadPoolExecutor(workers, thread_name_prefix="stoker-write")

        def submit(start, end):
            return executor.submit(prepare_range, source, prepare, start, end)
    pending = collections.deque()
    starts = iter(range(first, n, chunk))
    try:
        for start in starts:
            pending.append(submit(start, min(start + chunk, n)))
            if len(pending) >= _CHUNKS_PER_WORKER * workers:
                break
        while pending:
            samples = pending.popleft().result()
            start = next(starts, None)
            if start is not None:
                pending.append(submit(start, min(start + chunk, n)))
            yield from samples
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def iterable_samples(iterator, prepare, first):
    for index, raw in enumerate(iterator, first):
        try:
            yield prepare(raw, index)
        except Exception as e:
            _note(e, f"stoker.write_dataset: while preparing sample {index} of the source")
            raise
