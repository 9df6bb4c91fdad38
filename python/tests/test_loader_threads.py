"""stoker.Loader and threads: the GIL is released while waiting, Ctrl-C stops a wait cleanly,
misuse from a second thread raises instead of racing, separate loaders run side by side, a
daemon thread iterating as the interpreter ends does not abort the process."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import stoker
from loader_datasets import RECORDS
from stoker import _stoker


def slow_native_loader(path, microseconds_per_sample, batch_size=4):
    """A native loader whose batches take `microseconds_per_sample` of one worker's CPU per
    sample (the synthetic cost field of `stoker bench loader --sample-cost-us`)."""
    import torch

    native = _stoker.LoaderCore(os.fspath(path))
    native.configure(batch_size=batch_size, shuffle=False, seed=0, last_batch="short", workers=1,
                     prefetch=1, rank=0, world_size=1, verify="once", on_error="raise",
                     fields=[{"name": "label", "ops": []},
                             {"name": "cost", "ops": [{"op": "busy_wait",
                                                       "microseconds": microseconds_per_sample}]}],
                     to_tensor=torch.utils.dlpack.from_dlpack)
    return native


def test_the_gil_is_released_while_waiting_and_other_calls_raise(labelled):
    native = slow_native_loader(labelled, 100_000)  # 0.4 s per batch
    done = threading.Event()
    result = {}

    def consume():
        try:
            result["epoch"] = native.epoch(0)
            result["batch"] = next(result["epoch"])
        finally:
            done.set()

    consumer = threading.Thread(target=consume)
    consumer.start()
    refused = 0
    ticks = 0
    while not done.is_set():  # this thread runs: the waiting one holds no GIL
        ticks += 1
        try:
            native.state()
        except RuntimeError as e:
            assert "in use by another thread" in str(e)
            refused += 1
        time.sleep(0.001)
    consumer.join()
    assert refused > 0 and ticks > 10
    assert result["batch"]["label"].tolist() == [0, 1, 2, 3]
    assert result["batch"]["cost"].tolist() == [0, 1, 2, 3]
    result["epoch"].close()


def test_a_second_thread_cannot_iterate_or_steer_a_loader_in_use(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=1, batch_format="dict")
    iterator = iter(loader)
    first = next(iterator)
    errors = []

    def intrude():
        for attempt in (lambda: next(iterator), lambda: iter(loader),
                        lambda: loader.epoch(1), loader.state_dict,
                        lambda: loader.load_state_dict(loader.state_dict()),
                        lambda: loader.set_epoch(3)):
            try:
                attempt()
            except RuntimeError as e:
                errors.append(str(e))

    intruder = threading.Thread(target=intrude)
    intruder.start()
    intruder.join()
    assert len(errors) == 6
    assert "thread that started it" in errors[0]
    assert all("another thread is iterating" in e for e in errors[1:])
    # The owner goes on undisturbed.
    rest = [b["label"].tolist() for b in iterator]
    reference = [b["label"].tolist() for b in stoker.Loader(labelled, shuffle=True, batch_size=16,
                                                            batch_format="dict").epoch(0)]
    assert [first["label"].tolist()] + rest == reference
    # Once its iteration is over, the loader may move to another thread.
    moved = []
    mover = threading.Thread(target=lambda: moved.extend(b["label"].tolist() for b in loader))
    mover.start()
    mover.join()
    assert len(moved) == len(loader)


def test_separate_loaders_in_separate_threads(labelled):
    reference = [b["label"].tolist() for b in stoker.Loader(labelled, shuffle=True, batch_size=16,
                                                            batch_format="dict").epoch(2)]
    results = [None] * 3

    def run(i):
        loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=1, batch_format="dict")
        results[i] = [b["label"].tolist() for b in loader.epoch(2)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [reference] * 3


def test_batches_may_be_used_from_other_threads(labelled):
    loader = stoker.Loader(labelled, batch_size=16, shuffle=False, batch_format="dict")
    sums = []
    threads = []
    for batch in loader:
        t = threading.Thread(target=lambda b=batch: sums.append(int(b["label"].sum())))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    assert sum(sums) == RECORDS * (RECORDS - 1) // 2


CTRL_C_SCRIPT = """
import sys, time
import stoker, stoker._native_loader
path = sys.argv[1]
# Each sample costs 1 s of a worker's CPU; the second batch (40 samples) would be ready only
# 40 s after the first: the main thread sits in the wait for it.
plan_fields = stoker._native_loader.plan_fields


def with_cost(*args):
    plan = plan_fields(*args)
    plan.specs.append({"name": "cost", "ops": [{"op": "busy_wait", "microseconds": 1_000_000}]})
    return plan


stoker._native_loader.plan_fields = with_cost
loader = stoker.Loader(path, batch_sampler=[[0], list(range(1, 41))], workers=1, prefetch=1)
try:
    for batch in loader:
        print("batch", flush=True)
except KeyboardInterrupt:
    print("interrupted", loader.state_dict()["position"], flush=True)
    del loader  # cancels and joins the worker
    print("stopped", time.monotonic(), flush=True)
    sys.exit(3)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="signals as on Linux")
def test_ctrl_c_while_waiting_for_a_batch_stops_cleanly(labelled):
    process = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT, str(labelled)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "batch\n"
        time.sleep(0.2)  # inside the wait for the second batch, ready 40 s from now
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 3, err
    lines = out.split("\n")
    assert lines[0] == "interrupted 1"
    assert lines[1].startswith("stopped ")
    # The wait woke up for the signal and the worker mid-batch was cancelled and joined (the
    # same monotonic clock in both processes): far sooner than the batch would have been ready,
    # by a margin no load makes up.
    assert float(lines[1].split()[1]) - sent < 20


FORK_SCRIPT = """
import os, sys
import stoker
path, iterate_first = sys.argv[1], sys.argv[2] == "1"
loader = stoker.Loader(path, shuffle=True, batch_size=16, workers=2, batch_format="dict")
if iterate_first:
    next(iter(loader))
pid = os.fork()
if pid == 0:
    try:
        next(iter(loader))
        print("iterated", flush=True)
    except RuntimeError as e:
        print("raised", str(e), flush=True)
    # A loader made after the fork runs in the child.
    print("own", len(list(stoker.Loader(path, shuffle=True, batch_size=16, workers=2, batch_format="dict"))),
          flush=True)
    sys.exit(0)  # the inherited loader is let go as the child ends: no join of absent threads
_, status = os.waitpid(pid, 0)
print("child status", status, flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("iterate_first", [False, True])
def test_a_loader_used_after_fork_raises_one_line_and_the_child_ends(labelled, iterate_first):
    """The loader's threads stay in the parent: in a fork's child it raises one line saying to
    make the loader after forking (never a hang, nor at the child's exit); one made there runs."""
    run = subprocess.run([sys.executable, "-c", FORK_SCRIPT, str(labelled),
                          str(int(iterate_first))], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("raised this stoker.Loader was made in process "), lines
    assert "make the Loader after forking" in lines[0]
    assert lines[1] == f"own {-(-RECORDS // 16)}", lines
    assert lines[2] == "child status 0", lines


DAEMON_SCRIPT = """
import sys
import threading

from stoker import _stoker

native = _stoker.LoaderCore(sys.argv[1])
native.configure(batch_size=2, shuffle=True, seed=0, last_batch="short", workers=1, prefetch=1,
                 rank=0, world_size=1, verify="once", on_error="raise",
                 fields=[{"name": "label", "ops": []}], to_tensor=id)
iterating = threading.Event()


def iterate():
    epoch = 0
    while True:
        for batch in native.epoch(epoch):
            iterating.set()
        epoch += 1


threading.Thread(target=iterate, daemon=True).start()
iterating.wait()
print("done")
"""


def test_the_interpreter_exits_while_a_daemon_thread_iterates_a_loader(labelled):
    """The main thread ends while a daemon thread waits for batches, the GIL released: Python
    ends a thread that takes the GIL back as the interpreter finalizes, which made std::terminate
    abort the process (the GIL is taken back in a destructor); the thread parks instead. Where
    the race ends differs from run to run, so a few runs (each aborted before). The batches'
    fields are left as the ids of their capsules: no other library's code (torch's tensors take
    the GIL back as they are freed) runs in the thread."""
    for _ in range(5):
        run = subprocess.run([sys.executable, "-c", DAEMON_SCRIPT, str(labelled)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert (run.stdout, run.stderr) == ("done\n", "")


def test_the_extension_releases_and_takes_the_gil_only_through_its_guards():
    """Every GIL release and re-take in the extension's sources goes through released_gil.h's
    ReleasedGil/HeldGil (a plain pybind11 guard aborts the process when its thread comes back
    for the GIL as the interpreter ends)."""
    sources = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src",
                           "stoker", "python")
    plain = []
    for name in sorted(os.listdir(sources)):
        if name.endswith((".cc", ".h")) and name != "released_gil.h":
            with open(os.path.join(sources, name)) as f:
                for number, line in enumerate(f, 1):
                    if "gil_scoped_release" in line or "gil_scoped_acquire" in line:
                        plain.append(f"{name}:{number}")
    assert plain == []
