"""The Python steps in worker processes (python_workers=N, stoker/_python_pool.py): the same
batches as in the iterating thread (python_workers=0) for any number of them and of native
workers, and after a resume; a sample whose step raises, gives the wrong thing, kills its
worker or hangs is one line naming it (or is skipped), and the loader goes on; no worker
process is left behind by close, del or Ctrl-C. No timing is asserted."""

import gc
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2

import stoker

CROP = [T.RandomResizedCrop(24), T.RandomHorizontalFlip()]


def names_the_sample(error: str) -> bool:
    """Whether a Python step's error names its record (a shard and record), then the field and
    sample, as the loader names a bad record."""
    return re.match(r"\S+\.stk: record \d+: field 'image', sample \d+ of batch \d+ .* "
                    r"\(dataset record \d+\)$", error) is not None


def jitter(x):
    """A step that draws from torch, random and numpy (module level: it pickles)."""
    shift = int(torch.randint(0, 50, ())) + random.randint(0, 50) + int(np.random.randint(50))
    return (x.to(torch.int32) + shift).clamp(0, 255).to(torch.uint8)


class Trap:
    """Passes a sample through, except where a draw of torch's (under the sample's seed) is
    below 1/4: then it raises, kills its own process, hangs, or gives a float64 image."""

    def __init__(self, does):
        self.does = does

    def __call__(self, x):
        if float(torch.rand(())) >= 0.25:
            return x
        if self.does == "raise":
            raise RuntimeError("trapped\nhere")
        if self.does == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.does == "hang":
            time.sleep(3600)
        return x.to(torch.float64)

    def __repr__(self):
        return f"Trap({self.does!r})"


class Sleepy:
    """Sleeps a minute on every sample while the file `flag` exists."""

    def __init__(self, flag):
        self.flag = flag

    def __call__(self, x):
        if os.path.exists(self.flag):
            time.sleep(60)
        return x


class Unloadable:
    """Pickles, but cannot be unpickled (in a worker)."""

    def __call__(self, x):
        return x

    def __reduce__(self):
        return (_refuse, ())


def _refuse():
    raise RuntimeError("not here")


def loader(path, steps, **options):
    options.setdefault("shuffle", True)
    options.setdefault("batch_format", "dict")
    return stoker.Loader(path, batch_size=3, seed=5, transforms=T.Compose(steps), **options)


def batches(made, epoch=1):
    return [(b["image"], b["label"]) for b in made.epoch(epoch)]


def same(a, b):
    return len(a) == len(b) and all(torch.equal(x[0], y[0]) and torch.equal(x[1], y[1])
                                    for x, y in zip(a, b))


def dead(pid):
    return not os.path.exists(f"/proc/{pid}") or \
        open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] == "Z"


STEPS = CROP + [T2.RandomRotation(30), jitter, T2.ToDtype(torch.float32, scale=True)]


def test_the_same_batches_for_any_python_and_native_workers(images):
    path, _ = images
    reference = batches(loader(path, STEPS, python_workers=0, workers=1))
    assert len(reference) == 3 and reference[0][0].dtype == torch.float32
    for python_workers, workers in ((1, 1), (2, 2), (3, 1)):
        made = loader(path, STEPS, python_workers=python_workers, workers=workers)
        assert made.options["python_workers"] == python_workers
        assert same(batches(made), reference), (python_workers, workers)
        assert same(batches(made), reference)  # the next epoch, on the same processes
        stats = made.stats()
        assert stats["python_seconds"] > 0 and stats["python_workers"] == python_workers
        timing = stats["python_step_seconds"]["image"]
        assert [name for name, _ in timing] == [name for name, where in made.plan["image"]
                                                if where == "python"]
        assert all(seconds > 0 for _, seconds in timing)
        assert stats["python_wait_seconds"] >= 0 and stats["python_restarts"] == 0
    assert not same(batches(loader(path, STEPS, python_workers=2), epoch=2), reference)


def test_a_resume_mid_epoch_continues_the_same_batches(images):
    path, _ = images
    reference = batches(loader(path, STEPS, python_workers=0))
    first = loader(path, STEPS, python_workers=2)
    iteration = first.epoch(1)
    head = next(iteration)
    head = (head["image"], head["label"])
    state = first.state_dict()  # the workers are batches ahead; the state is the consumer's
    assert state["position"] == 3
    for python_workers in (0, 2):
        resumed = loader(path, STEPS, python_workers=python_workers)
        resumed.load_state_dict(state)
        assert same([head] + [(b["image"], b["label"]) for b in resumed], reference)
    first.load_state_dict(state)  # in the loader whose iteration ran ahead
    assert same([head] + [(b["image"], b["label"]) for b in first], reference)


def test_the_default_is_num_workers_processes_where_the_steps_pickle(images):
    path, _ = images
    made = loader(path, STEPS)
    assert made.options["python_workers"] == 0  # DataLoader's num_workers=0: this process
    assert [where for _, where in made.plan["image"]][-3:] == ["python"] * 3
    assert loader(path, STEPS, num_workers=2).options["python_workers"] == 2
    assert loader(path, CROP + [lambda x: x], num_workers=2).options["python_workers"] == 0


def test_a_step_that_cannot_go_to_a_process_is_named_up_front(images):
    path, _ = images
    with pytest.raises(ValueError, match=r"field 'image': the Python step <lambda> cannot be "
                       r"sent to a worker process .*python_workers=0"):
        loader(path, CROP + [lambda x: x], python_workers=2)
    made = loader(path, CROP + [Unloadable()], python_workers=2)
    for _ in range(2):  # said again, and nothing crashes
        with pytest.raises(stoker.Error, match=r"field 'image': the Python step Unloadable "
                           r"cannot be loaded in a worker process \(RuntimeError: not here\)"):
            next(iter(made))
    with pytest.raises(ValueError, match="python_workers must be in"):
        loader(path, STEPS, python_workers=-1)
    with pytest.raises(ValueError, match="python_timeout must be a number of seconds > 0"):
        loader(path, STEPS, python_timeout=0)


def outcomes(made, epochs=(0, 1)):
    """Each batch of `epochs`, or the one-line error it raised (the iteration goes on)."""
    out = []
    for epoch in epochs:
        iteration = made.epoch(epoch)
        for _ in range(len(iteration)):
            try:
                b = next(iteration)
                out.append((b["image"], b["label"]))
            except stoker.Error as e:
                out.append(str(e))
    return out


def same_outcomes(a, b):
    return len(a) == len(b) and all(
        x == y if isinstance(x, str) else not isinstance(y, str) and same([x], [y])
        for x, y in zip(a, b))


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_raising_step_is_the_same_line_in_a_worker_and_follows_on_error(images, on_error):
    path, _ = images
    steps = CROP + [Trap("raise")]
    here = loader(path, steps, python_workers=0, on_error=on_error)
    there = loader(path, steps, python_workers=2, on_error=on_error)
    expected = outcomes(here)
    got = outcomes(there)
    assert same_outcomes(got, expected)
    errors = [x for x in got if isinstance(x, str)]
    if on_error == "raise":
        assert errors and all("Trap('raise') raised RuntimeError: trapped here" in e
                              for e in errors)
        assert names_the_sample(errors[0])
    else:
        assert not errors and there.stats()["python_skipped"] == here.stats()[
            "python_skipped"] > 0


@pytest.mark.parametrize("step, message", [
    (Trap("float64"), "a batch stacks one shape and dtype"),
    (np.asarray, "the Python steps gave a ndarray, not a torch.Tensor (last step asarray)"),
])
def test_a_wrong_dtype_or_no_tensor_is_named_as_in_the_iterating_thread(images, step, message):
    path, _ = images
    expected = outcomes(loader(path, CROP + [step], python_workers=0))
    got = outcomes(loader(path, CROP + [step], python_workers=2))
    assert same_outcomes(got, expected)
    assert any(isinstance(x, str) and message in x for x in got)


@pytest.mark.parametrize("does", ["kill", "hang"])
def test_a_worker_killed_or_hung_is_named_replaced_and_the_loader_goes_on(images, does):
    path, _ = images
    # PILToTensor, a no-op on tensors, is left out of the steps: the trap is still named.
    expected = outcomes(loader(path, CROP + [T.PILToTensor(), Trap("raise")], python_workers=0,
                               on_error="skip", python_input="tensor"))
    made = loader(path, CROP + [T.PILToTensor(), Trap(does)], python_workers=2,
                  python_timeout=2, python_input="tensor")
    got = outcomes(made)
    errors = [x for x in got if isinstance(x, str)]
    assert errors, got
    for error in errors:
        assert names_the_sample(error)
        assert ("Trap('kill') was running when its worker process (pid " in error and
                "died (signal SIGKILL); a new one took its place" in error) if does == "kill" \
            else ("Trap('hang') ran longer than python_timeout=2 s: its worker process (pid "
                  in error and "was killed and replaced" in error)
    assert made.stats()["python_restarts"] >= len(errors)  # a batch may lose two samples
    # Every other batch is the batch the iterating thread makes.
    assert len(got) == len(expected)
    assert all(same([x], [y]) for x, y in zip(got, expected) if not isinstance(x, str))

    skipping = loader(path, CROP + [T.PILToTensor(), Trap(does)], python_workers=2,
                      python_timeout=2, on_error="skip", python_input="tensor")
    assert same_outcomes(outcomes(skipping), expected)
    assert skipping.stats()["python_skipped"] == skipping.stats()["python_restarts"] > 0


def test_close_and_del_leave_no_worker_process(images):
    path, _ = images
    made = loader(path, STEPS, python_workers=2)
    reference = batches(made)
    pids = made._python.pids()
    assert len(pids) == 2 and not any(dead(pid) for pid in pids)
    made.close()
    assert all(dead(pid) for pid in pids)
    assert same(batches(made), reference)  # new workers
    pids = made._python.pids()
    del made
    gc.collect()
    assert all(dead(pid) for pid in pids)


@pytest.mark.parametrize("mode", ["one thread", "threads"])
def test_a_loader_gone_leaves_no_step_thread(images, mode):
    path, _ = images

    def step_threads():
        return {t for t in threading.enumerate() if t.name == "stoker-python"}

    # Threads of earlier loaders may still be ending: only this loader's count.
    before = step_threads()
    made = loader(path, CROP + [speckle], **MODES[mode])
    batches(made)
    started = step_threads() - before
    assert started
    del made
    gc.collect()
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.is_alive() for t in started)


def test_ctrl_c_while_waiting_stops_the_workers_and_the_loader_stays_usable(images, tmp_path):
    path, _ = images
    flag = tmp_path / "sleep"
    flag.write_text("")
    made = loader(path, CROP + [Sleepy(str(flag))], python_workers=2)
    iteration = made.epoch(0)
    pids = []

    def interrupt(main=threading.get_ident()):
        deadline = time.monotonic() + 120
        while len(made._python.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # both workers started (and busy sleeping)
        time.sleep(0.5)
        pids.extend(made._python.pids())
        signal.pthread_kill(main, signal.SIGINT)

    timer = threading.Thread(target=interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        next(iteration)
    timer.join()
    assert len(pids) == 2 and all(dead(pid) for pid in pids)
    assert made._python.pids() == []
    flag.unlink()
    # The iteration goes on (its unfinished work in new workers), as does the loader.
    reference = batches(loader(path, CROP, python_workers=0), epoch=0)
    assert same([(b["image"], b["label"]) for b in iteration], reference)
    assert same(batches(made, epoch=0), reference)


SCRIPT = '''
import sys

import torch
import torchvision.transforms as T

import stoker


def brighten(x):
    return (x.to(torch.int32) + int(torch.randint(0, 9, ()))).clamp(0, 255).to(torch.uint8)


def images(python_workers):
    made = stoker.Loader(sys.argv[1], shuffle=True, batch_size=3, seed=5, batch_format="dict",
                         python_workers=python_workers,
                         transforms=T.Compose([T.RandomResizedCrop(24), brighten]))
    return made.options["python_workers"], torch.cat([b["image"] for b in made])


if __name__ == "__main__":
    workers, there = images(2)
    print(workers, torch.equal(images(0)[1], there))
'''


def test_a_step_defined_in_the_users_script_runs_in_the_workers(images, tmp_path):
    path, _ = images
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stoker.__file__)))
    done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "True"]


def speckle(x, generator):
    """A step that draws from the generator it is given only."""
    noise = torch.randint(0, 30, x.shape, generator=generator, dtype=torch.uint8)
    return x.to(torch.int32).add(noise).clamp(0, 255).to(torch.uint8)


def test_a_step_taking_a_generator_gets_the_samples_seed_in_threads_or_processes(images):
    from stoker._python_steps import sample_seed
    path, _ = images
    steps = CROP + [speckle]
    native = batches(loader(path, CROP, python_workers=0, shuffle=False))
    here = loader(path, steps, python_workers=0, shuffle=False)
    reference = batches(here)
    position = 3  # after batch 0
    for slot in range(3):
        generator = torch.Generator().manual_seed(sample_seed(5, 1, 0, position, slot))
        assert torch.equal(reference[0][0][slot], speckle(native[0][0][slot], generator))
    threads = loader(path, steps, python_workers=2, python_parallel="threads", shuffle=False)
    assert threads.options["python_workers"] == 2
    assert threads.options["python_parallel"] == "threads"
    assert same(batches(threads), reference)
    assert same(batches(loader(path, steps, python_workers=2, shuffle=False)), reference)
    with pytest.raises(ValueError, match=r"python_parallel='threads' needs every Python step "
                       r"to take a generator= keyword .* jitter does not"):
        loader(path, CROP + [speckle, jitter], python_workers=2, python_parallel="threads")
    with pytest.raises(ValueError, match="python_parallel must be 'processes' or 'threads'"):
        loader(path, steps, python_parallel="fork")


def spoiled(x, generator):
    """speckle, but a sample whose generator's first draw is below 1/4 raises."""
    if float(torch.rand((), generator=generator)) < 0.25:
        raise ValueError("spoiled")
    return speckle(x, generator)


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_threads_run_batches_ahead_with_the_same_batches_and_errors(images, on_error):
    path, _ = images
    steps = CROP + [spoiled]
    expected = outcomes(loader(path, steps, python_workers=0, on_error=on_error))
    assert any(isinstance(x, str) for x in expected) == (on_error == "raise")
    for threads in (2, 3):
        made = loader(path, steps, python_workers=threads, python_parallel="threads",
                      on_error=on_error)
        assert same_outcomes(outcomes(made), expected), threads
    if on_error == "skip":  # 8 samples an epoch, batches of 3, 3 and 2
        assert made.stats()["python_skipped"] == sum(
            size - len(labels) for size, (_, labels) in zip([3, 3, 2] * 2, expected)) > 0


def test_threads_left_early_leave_the_state_at_the_consumers_batch(images):
    path, _ = images
    steps = CROP + [speckle]
    reference = batches(loader(path, steps, python_workers=0))
    made = loader(path, steps, python_workers=2, python_parallel="threads")
    for batch in made.epoch(1):
        head = (batch["image"], batch["label"])
        break  # the threads are batches ahead
    state = made.state_dict()
    assert state["position"] == 3
    resumed = loader(path, steps, python_workers=3, python_parallel="threads")
    resumed.load_state_dict(state)
    assert same([head] + [(b["image"], b["label"]) for b in resumed], reference)


def test_a_loop_left_early_leaves_the_state_at_the_consumers_batch(images):
    path, _ = images
    reference = batches(loader(path, STEPS, python_workers=0))
    made = loader(path, STEPS, python_workers=2)
    for batch in made.epoch(1):
        head = (batch["image"], batch["label"])
        break  # the iteration is dropped with the workers batches ahead
    state = made.state_dict()
    assert state["epoch"] == 1 and state["position"] == 3
    made.load_state_dict(state)
    assert same([head] + [(b["image"], b["label"]) for b in made], reference)
    assert same(batches(made), reference)  # and a whole epoch again


def link(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # the listing's own fd, closed since
        return ""


def test_epochs_reuse_the_workers_and_a_bounded_shared_memory(images):
    path, _ = images
    made = loader(path, STEPS, python_workers=2)
    batches(made, epoch=0)
    pids = made._python.pids()

    def memfds():  # each mapping holds one (mmap's own copy), each input buffer one more
        return len([fd for fd in os.listdir("/proc/self/fd")
                    if "stoker-python-steps" in link(fd)])

    counts = []
    for epoch in range(1, 31):
        batches(made, epoch=epoch)
        next(iter(made.epoch(epoch)))  # an iteration left early, its window dropped
        counts.append(memfds())
    assert made._python.pids() == pids
    # Buffers are reused: a few more may be made while dropped windows finish (more under load:
    # 5 beside a sanitizer stage), not one an epoch (20 over these epochs).
    assert counts[-1] < counts[9] + 10, counts


def test_a_worker_killed_between_samples_is_replaced_and_no_sample_lost(images):
    path, _ = images
    reference = batches(loader(path, STEPS, python_workers=0))
    made = loader(path, STEPS, python_workers=2)
    batches(made, epoch=0)
    victim = made._python.pids()[0]
    os.kill(victim, signal.SIGKILL)  # idle: no sample of its is running
    assert same(batches(made), reference)
    assert made.stats()["python_restarts"] == 1 and made.stats()["python_skipped"] == 0
    assert victim not in made._python.pids() and len(made._python.pids()) == 2


def test_padded_batches_keep_their_valid_masks(images):
    path, _ = images

    def padded(python_workers):
        made = loader(path, STEPS, python_workers=python_workers, last_batch="pad")
        return [(b["image"], b["label"], b["valid"]) for b in made.epoch(1)]

    here, there = padded(0), padded(2)
    assert [b[2].tolist() for b in there] == [[True] * 3, [True] * 3, [True, True, False]]
    assert all(torch.equal(x, y) for a, b in zip(here, there) for x, y in zip(a, b))


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text")


class Bad:
    """Passes a sample through, except where its generator's first draw is below 1/4: then it
    raises ValueError, gives a sparse tensor, raises an exception that cannot be printed,
    KeyboardInterrupt or SystemExit, or hangs (a step for threads, processes or this thread)."""

    def __init__(self, does):
        self.does = does

    def __call__(self, x, generator):
        if float(torch.rand((), generator=generator)) >= 0.25:
            return x
        if self.does == "sparse":
            return x.to_sparse()
        if self.does == "hang":
            time.sleep(600)
        raise {"raise": ValueError("bad"), "unprintable": Unprintable(),
               "interrupt": KeyboardInterrupt(), "exit": SystemExit(3)}[self.does]

    def __repr__(self):
        return f"Bad({self.does!r})"


MODES = {"one thread": {"python_workers": 0},
         "threads": {"python_workers": 2, "python_parallel": "threads"},
         "processes": {"python_workers": 2}}
BAD_TEXT = {"sparse": "the Python steps gave a sparse tensor (torch.sparse_coo), not a dense one",
            "unprintable": "Bad('unprintable') raised Unprintable (its message could not be "
                           "made: RuntimeError: no text)",
            "interrupt": "Bad('interrupt') raised KeyboardInterrupt",
            "exit": "Bad('exit') raised SystemExit: 3",
            "hang": "Bad('hang') ran longer than python_timeout=2 s: "}


@pytest.mark.parametrize("does", ["sparse", "unprintable", "interrupt", "exit", "hang"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_bad_or_hung_step_is_one_line_naming_the_sample_in_every_mode(images, capfd, mode,
                                                                        does):
    if does == "hang" and mode == "processes":
        pytest.skip("test_a_worker_killed_or_hung_is_named_replaced_and_the_loader_goes_on")
    path, _ = images
    steps = CROP + [Bad(does)]
    expected = {on_error: outcomes(loader(path, CROP + [Bad("raise")], on_error=on_error,
                                          **MODES["one thread"]), epochs=(0,))
                for on_error in ("raise", "skip")}
    made = loader(path, steps, python_timeout=2, **MODES[mode])
    got = outcomes(made, epochs=(0,))
    errors = [x for x in got if isinstance(x, str)]
    assert errors and [isinstance(x, str) for x in got] == [
        isinstance(x, str) for x in expected["raise"]]
    for error in errors:
        assert names_the_sample(error) and BAD_TEXT[does] in error, error
        assert "\n" not in error
    assert all(same([x], [y]) for x, y in zip(got, expected["raise"]) if not isinstance(x, str))
    skipping = loader(path, steps, python_timeout=2, on_error="skip", **MODES[mode])
    assert same_outcomes(outcomes(skipping, epochs=(0,)), expected["skip"])
    if mode == "processes":
        assert made.stats()["python_restarts"] == skipping.stats()["python_restarts"] == 0
    assert "Traceback" not in capfd.readouterr().err


def nap(x):
    """Waits while the file NAP names exists (this process's steps only)."""
    STARTED.set()
    while os.path.exists(NAP[0]):
        time.sleep(0.05)
    return x


STARTED = threading.Event()
NAP = [""]


def test_ctrl_c_while_a_step_runs_in_this_process_interrupts_the_loop(images, tmp_path):
    path, _ = images
    NAP[0] = str(tmp_path / "nap")
    open(NAP[0], "w").close()
    STARTED.clear()
    made = loader(path, CROP + [nap], python_workers=0)

    def interrupt(main=threading.get_ident()):
        STARTED.wait(120)
        signal.pthread_kill(main, signal.SIGINT)

    timer = threading.Thread(target=interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        next(iter(made))
    timer.join()
    os.unlink(NAP[0])
    assert same(batches(made, epoch=0), batches(loader(path, CROP, python_workers=0), epoch=0))


def test_the_interpreter_exits_with_a_step_thread_left_hung(images, tmp_path):
    path, _ = images
    script = tmp_path / "hung.py"
    script.write_text('''
import sys
import time

import stoker


def hang(x, generator):
    time.sleep(600)


for options in ({"python_workers": 0}, {"python_workers": 2, "python_parallel": "threads"}):
    loader = stoker.Loader(sys.argv[1], batch_size=2, transforms=hang, python_timeout=1,
                           **options)
    try:
        next(iter(loader))
    except stoker.Error as e:
        print("python_timeout=1 s" in str(e))
''')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stoker.__file__)))
    done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_the_interpreter_exits_with_steps_running_in_threads(images, tmp_path):
    """A program that stops iterating while its step threads run, then ends: the exit waits for
    the steps running (ended by Python inside torch's C++ code as it freed a tensor, a thread
    aborted the process: "terminate called without an active exception"), but not for a step
    that hangs, up to its python_timeout of 600 s."""
    path, _ = images
    script = tmp_path / "busy.py"
    script.write_text('''
import itertools
import sys
import time

import stoker

calls = itertools.count()


def hang_after_two(x, generator):
    if next(calls) >= 2:  # the first batch's samples are made; the next batch's hang
        time.sleep(600)
    return x[:, :8, :8].clone()


def busy(x, generator):
    end = time.monotonic() + 0.3
    y = x.float()
    while time.monotonic() < end:
        y = (y + 1) * 0.5  # tensors made and freed
    return x[:, :8, :8].clone()


for step, timeout in ((hang_after_two, 600), (busy, 300)):
    loader = stoker.Loader(sys.argv[1], batch_size=2, transforms=step, python_timeout=timeout,
                           python_workers=2, python_parallel="threads")
    for batch in loader:
        break
print("done")
''')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stoker.__file__)))
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True,
                              text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["done"]


def test_python_steps_refuse_to_start_once_the_interpreter_exits(images, tmp_path):
    """A loader with Python steps iterated by an atexit handler that runs after stoker's: one
    error (its step threads would park, and the batch never come), not a hang."""
    path, _ = images
    script = tmp_path / "late.py"
    script.write_text('''
import atexit
import sys


def late():
    loader = stoker.Loader(sys.argv[1], batch_size=2, transforms=lambda x: x[:, :8, :8])
    try:
        next(iter(loader))
    except RuntimeError as e:
        print("while the interpreter exits" in str(e))


atexit.register(late)  # runs after stoker's own (atexit runs the last registered first)
import stoker  # noqa: E402
''')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stoker.__file__)))
    done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


def test_the_interpreter_exits_quietly_with_a_loader_left_in_a_global(coco_dataset, tmp_path):
    """A detection loader left in a module's global at exit: its step threads are released
    without a word on stderr (finalisation may have cleared the modules they would use)."""
    script = tmp_path / "left.py"
    script.write_text('''
import sys

import torch
import torchvision.transforms.v2 as v2

import stoker

preset = [stoker.transforms.DecodeImage(max_size=2048), v2.RandomHorizontalFlip(0.5),
          v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)]
loader = stoker.Loader(stoker.Dataset(sys.argv[1], transforms={"image": v2.Compose(preset)}),
                       batch_size=8)
for batch in loader:
    pass
print("done")
''')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stoker.__file__)))
    done = subprocess.run([sys.executable, str(script), str(coco_dataset)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["done"] and done.stderr == ""


class Huge:
    """Record 5 of write_classes' (its ramp starts at 5) becomes 1 MiB of zeros; the others
    pass through."""

    def __call__(self, x):
        return torch.zeros(1 << 20, dtype=torch.uint8) if int(x.flatten()[0]) == 5 else x

    def __repr__(self):
        return "Huge()"


def test_outputs_beyond_the_memory_share_are_one_line_and_the_loader_goes_on(tmp_path,
                                                                               monkeypatch):
    """Outputs over a sample's share of memory (a quarter of it over a batch of 3: 349,525
    bytes of 4 MiB) fail that sample as a raising step does."""
    from loader_datasets import write_classes
    from stoker import _python_pool
    monkeypatch.setattr(_python_pool, "memory_bytes", lambda: 4 << 20, raising=False)
    path = write_classes(tmp_path / "ds", records=12)
    made = stoker.Loader(path, batch_size=3, shuffle=False, batch_format="dict",
                         python_workers=2, transforms={"image": Huge()})
    got = outcomes(made)
    assert [x for x in got if isinstance(x, str)] == [
        f"{path}/shard-00000.stk: record 5: field 'image', sample 2 of batch 1 (epoch {epoch}): "
        "the Python steps gave 1,048,576 bytes of outputs (last step Huge()), more than the "
        "349,525 a sample may send from a worker process (a batch of them would take more than "
        "half this machine's memory): lower batch_size, or pass python_workers=0 to run the "
        "steps in the loader's process (dataset record 5)" for epoch in (0, 1)]
    assert [x[1].tolist() for x in got if not isinstance(x, str)] == [[0, 1, 2], [6, 7, 8],
                                                                      [9, 0, 1]] * 2
    state = made.state_dict()
    made.load_state_dict(state)
    assert len(outcomes(made, epochs=(2,))) == 4
    skipping = stoker.Loader(path, batch_size=3, shuffle=False, batch_format="dict",
                             python_workers=2, transforms={"image": Huge()}, on_error="skip")
    assert [b["label"].tolist() for b in skipping] == [[0, 1, 2], [3, 4], [6, 7, 8],
                                                       [9, 0, 1]]


def test_outputs_that_find_no_memory_are_one_line_and_the_loader_goes_on(images, tmp_path):
    """Under an address-space limit 150 MiB over what the loader's process maps (a native
    worker thread), 20 MiB outputs a sample run out of memory: in the loader or in a worker,
    each such sample is one line, and the next epoch and load_state_dict work."""
    path, _ = images
    script = tmp_path / "short.py"
    script.write_text('''
import resource
import sys

import torch

import stoker
import short


class Large:
    def __call__(self, x):
        return torch.ones(20 << 20, dtype=torch.uint8)


if __name__ == "__main__":
    status = open("/proc/self/status").read()
    limit = int(status.split("VmSize:")[1].split()[0]) * 1024 + (150 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    made = stoker.Loader(sys.argv[1], batch_size=4, batch_format="dict", workers=1,
                         python_workers=2, transforms={"image": short.Large()})
    for epoch in range(2):
        iteration = made.epoch(epoch)
        for _ in range(len(iteration)):
            try:
                print(len(next(iteration)["image"]))
            except stoker.Error as e:
                print(e)
    made.load_state_dict(made.state_dict())
    print("resumed")
''')
    # One malloc arena a process: the limit is not spent on threads' reserved address space.
    env = dict(os.environ, MALLOC_ARENA_MAX="1", PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(stoker.__file__)), str(tmp_path)]))
    done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "resumed"
    errors = [line for line in lines[:-1] if not line.isdigit()]
    assert errors, lines
    for error in errors:
        assert names_the_sample(error) and "memory" in error, error
