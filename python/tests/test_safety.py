"""What stoker promises about the user's files from Python: a shard truncated under a running
Loader raises stoker.Error naming it (the interpreter lives on); file names that are not UTF-8
travel as bytes; an edited state_dict and misuse from threads raise the documented exceptions."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import stoker
from stoker import _stoker
from loader_datasets import RECORDS, write_labelled
from test_tools import make_image_folder

# Run in a child process: were the SIGBUS handler broken, the fault would end the test process.
TRUNCATE_UNDER_A_LOADER = textwrap.dedent("""
    import faulthandler, os, sys, stoker
    dataset, workers, on_error = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if sys.argv[4] == "faulthandler":
        faulthandler.enable()  # after import stoker: over stoker's handler
    shards = sorted(f for f in os.listdir(dataset) if f.endswith(".stk"))
    victim = os.path.join(dataset, shards[len(shards) // 2])
    loader = stoker.Loader(dataset, shuffle=True, batch_size=16, workers=workers, prefetch=2, verify="off",
                           on_error=on_error)
    iterator = iter(loader)
    next(iterator)
    os.truncate(victim, 0)
    try:
        for batch in iterator:
            pass
        print("no error")
    except stoker.Error as e:
        print("raised:", e)
        assert str(e).startswith(victim + ": record "), e
    try:  # the loader lives on; the shard keeps failing
        for batch in loader.epoch(1):
            pass
    except stoker.Error as e:
        print("again:", "changed size" in str(e))
""")


@pytest.mark.parametrize("workers,on_error,also", [(0, "raise", ""), (2, "raise", ""),
                                                   (2, "skip", ""), (2, "raise", "faulthandler")])
def test_a_shard_truncated_under_a_running_loader_raises_naming_it(tmp_path, workers, on_error,
                                                                   also):
    dataset = write_labelled(tmp_path / "ds")
    run = subprocess.run([sys.executable, "-c", TRUNCATE_UNDER_A_LOADER, str(dataset),
                          str(workers), on_error, also], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr)
    lines = run.stdout.splitlines()
    assert lines[0].startswith("raised: ") and "the file changed size while it was being read" \
        in lines[0], run.stdout
    assert "dataset record" in lines[0]
    assert lines[1] == "again: True", run.stdout


@pytest.mark.parametrize("order", ["faulthandler first", "stoker first"])
def test_a_sigbus_not_of_stokers_still_reaches_faulthandler(tmp_path, order):
    # faulthandler, enabled before or after stoker's import (a Loader made after it puts stoker's
    # handler back on top), still reports a fault outside stoker's mappings, and the process
    # ends as it did, once.
    script = textwrap.dedent("""
        import faulthandler, mmap, os, sys
        if sys.argv[2] == "faulthandler first":
            faulthandler.enable()
        import stoker
        faulthandler.enable()
        stoker.Loader(sys.argv[3], shuffle=True, batch_size=4)
        path = sys.argv[1]
        with open(path, "wb") as f:
            f.write(b"x" * 2 * mmap.PAGESIZE)
        with open(path, "rb") as f:
            view = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        os.truncate(path, 0)
        view[mmap.PAGESIZE]
    """)
    dataset = write_labelled(tmp_path / "ds", records=8)
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "f"), order,
                          str(dataset)], capture_output=True, text=True, timeout=60)
    assert run.returncode == -7, (run.returncode, run.stderr)  # SIGBUS
    assert run.stderr.count("Fatal Python error: Bus error") == 1, run.stderr


def test_a_shard_truncated_during_verify_raises_naming_it(tmp_path):
    dataset = write_labelled(tmp_path / "ds", records=3000)
    last = sorted(dataset.glob("*.stk"))[-1]

    def truncate_once(done, total):  # called after the first 1024 records
        if last.stat().st_size:
            os.truncate(last, 0)

    # stoker.verify's native half, which takes the progress callable.
    with pytest.raises(stoker.Error, match="the file changed size") as raised:
        _stoker.verify_datasets(os.fsencode(dataset), progress=truncate_once)
    assert str(raised.value).startswith(f"{last}: ")


# File names that are not UTF-8 ------------------------------------------------------------

def test_convert_imagefolder_takes_file_names_that_are_not_utf8(tmp_path):
    src = os.fsencode(tmp_path / "src")
    make_image_folder(os.fsdecode(src))
    latin = os.path.join(src, b"a", b"caf\xe9.jpg")  # Latin-1, not UTF-8
    with open(os.path.join(src, b"a", b"0.jpg"), "rb") as f:
        good = f.read()
    with open(latin, "wb") as f:
        f.write(good)
    bad = os.path.join(src, b"b", b"bad\xff.jpg")
    with open(bad, "wb") as f:
        f.write(b"not an image")
    out = os.path.join(os.fsencode(tmp_path), b"out\xe9")
    with pytest.raises(stoker.Error, match=r"1 bad file of 8") as raised:
        stoker.convert("imagefolder", src, out)
    assert [os.fsencode(p) for p, _ in raised.value.bad_files] == [bad]
    assert "not a JPEG or PNG" in raised.value.bad_files[0][1]
    assert not os.path.exists(out)

    result = stoker.convert("imagefolder", src, out, skip_bad=True, progress=False)
    assert (result["images"], result["skipped"]) == (7, 1)
    assert [os.fsencode(p) for p in result["datasets"]] == [out]
    assert [os.fsencode(p) for p, _ in result["bad_files"]] == [bad]
    assert os.fsencode(result["skipped_list"]) == os.path.join(out, b"skipped.txt")
    # str paths as os.fsdecode gives them work as well as bytes.
    assert stoker.verify(os.fsdecode(out))["datasets"][0]["records"] == 7
    assert stoker.inspect(out)["records"] == 7
    assert os.fsencode(stoker.inspect(out)["dir"]) == out


def test_datasets_at_paths_that_are_not_utf8_are_written_and_read(tmp_path):
    out = os.path.join(os.fsencode(tmp_path), b"d\xe9j\xe0")
    writer = stoker.DatasetWriter(out, {"label": "int64"})
    assert os.fsencode(writer.path) == out
    for i in range(5):
        writer.append({"label": i})
    assert os.fsencode(writer.finish()) == out
    assert [b["label"].tolist() for b in stoker.Loader(out, batch_size=5, shuffle=False,
                                                       batch_format="dict")] == [
        list(range(5))]
    assert repr(os.fsdecode(out)) in repr(stoker.Loader(os.fsdecode(out), batch_size=256, shuffle=True, batch_format="dict"))


def test_messages_with_file_names_that_are_not_utf8_show_the_bytes(tmp_path):
    missing = os.path.join(os.fsencode(tmp_path), b"gone\xe9")
    with pytest.raises(FileNotFoundError) as raised:
        stoker.Loader(missing, batch_size=256, shuffle=True, batch_format="dict")
    assert "gone\\xe9" in str(raised.value)


# An edited state_dict ---------------------------------------------------------------------

@pytest.mark.parametrize("key", ["seed", "epoch", "position", "records"])
@pytest.mark.parametrize("value", [-1, 2**64, 2**100, 1.5, None, "3", [1], True])
def test_an_edited_state_dict_raises_value_error_naming_the_key(labelled, key, value):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=0, batch_format="dict")
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    with pytest.raises(ValueError, match=f"state_dict\\['{key}'\\]"):
        loader.load_state_dict(dict(state, **{key: value}))
    # Nothing changed: the iteration goes on.
    assert len(list(batches)) == len(loader) - 1


@pytest.mark.parametrize("key,value", [("epoch", 2**62 + 1), ("position", 2**63),
                                       ("position", RECORDS), ("records", RECORDS + 1),
                                       ("seed", 1)])
def test_a_state_dict_out_of_this_loaders_range_raises_value_error(labelled, key, value):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=0, batch_format="dict")
    with pytest.raises(ValueError, match=key):
        loader.load_state_dict(dict(loader.state_dict(), **{key: value}))


def test_a_state_dict_at_the_largest_epoch_loads(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=0, batch_format="dict")
    loader.load_state_dict(dict(loader.state_dict(), epoch=2**62, position=RECORDS - 1))
    assert loader.state_dict()["epoch"] == 2**62


# Threads ----------------------------------------------------------------------------------

def test_threads_racing_to_iterate_one_loader_get_runtime_error(labelled):
    # Both threads start at once, many times: each round, exactly the threads that did not get
    # the loader raise RuntimeError (the documented type), never anything else.
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=1, batch_format="dict")
    for _ in range(20):
        barrier = threading.Barrier(3)
        outcomes = []

        def race():
            barrier.wait()
            try:
                iterator = iter(loader)
                outcomes.append(("iterated", sum(1 for _ in iterator)))
            except Exception as e:  # noqa: BLE001 - the type is what is tested
                outcomes.append((type(e).__name__, str(e)))

        threads = [threading.Thread(target=race) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for kind, detail in outcomes:
            assert kind in ("iterated", "RuntimeError"), (kind, detail)
        assert any(kind == "iterated" for kind, _ in outcomes)


def test_state_dict_from_another_thread_while_iterating_gets_runtime_error(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, workers=1, batch_format="dict")
    iterator = iter(loader)
    next(iterator)
    errors = []
    stop = threading.Event()

    def poke():
        while not stop.is_set():
            for call in (loader.state_dict, lambda: loader.load_state_dict(saved),
                         lambda: loader.set_epoch(1)):
                try:
                    call()
                except Exception as e:  # noqa: BLE001
                    errors.append(type(e).__name__)

    saved = loader.state_dict()
    poker = threading.Thread(target=poke)
    poker.start()
    rest = sum(1 for _ in iterator)
    stop.set()
    poker.join()
    assert rest == len(loader) - 1
    assert errors and set(errors) <= {"RuntimeError"}, set(errors)


# Writers interrupted --------------------------------------------------------------------

WRITE_FOREVER = textwrap.dedent("""
    import sys
    import numpy as np
    import stoker
    writer = stoker.DatasetWriter(sys.argv[1], {"x": ("uint8", (4096,))}, shard_mb=1)
    i = 0
    while True:  # no with-block, no finish: a script that never gets to its end
        writer.append({"x": np.full(4096, i % 256, np.uint8)})
        i += 1
""")


def _start_writer(tmp_path, out):
    child = subprocess.Popen([sys.executable, "-c", WRITE_FOREVER, str(out)],
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(out.name + ".partial-") and any(p.iterdir())
                  for p in tmp_path.iterdir()):
        assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()
        time.sleep(0.05)
    time.sleep(0.3)  # shards written
    return child


def test_a_writer_interrupted_by_ctrl_c_leaves_nothing(tmp_path):
    child = _start_writer(tmp_path, tmp_path / "ds")
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode != 0 and "KeyboardInterrupt" in stderr
    assert list(tmp_path.iterdir()) == []


def test_a_killed_writers_staging_is_removed_by_the_next_writer(tmp_path):
    out = tmp_path / "ds"
    for sig in (signal.SIGTERM, signal.SIGKILL):
        child = _start_writer(tmp_path, out)
        child.send_signal(sig)
        child.communicate(timeout=60)
        assert child.returncode == -sig
        left = [p.name for p in tmp_path.iterdir()]
        assert len(left) == 1 and left[0].startswith("ds.partial-"), left  # no dataset at out
        with stoker.DatasetWriter(out, {"x": "int64"}) as writer:
            writer.append({"x": 7})
        assert [p.name for p in tmp_path.iterdir()] == ["ds"]
        assert stoker.verify(out)["datasets"][0]["records"] == 1
        for f in out.iterdir():
            f.unlink()
        out.rmdir()


def test_a_users_folders_named_like_staging_are_kept(tmp_path):
    # Folders beside `out` named like a writer's staging but not made by one (no marker, not
    # empty) are the user's: the writer removes only staging it can prove it made (issue 32).
    for name in ("ds.partial-mybackup", "ds.partial-12345"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.txt").write_text("mine")
    with stoker.DatasetWriter(tmp_path / "ds", {"x": "int64"}) as writer:
        writer.append({"x": 7})
    for name in ("ds.partial-mybackup", "ds.partial-12345"):
        assert (tmp_path / name / "notes.txt").read_text() == "mine", name
    assert stoker.verify(tmp_path / "ds")["datasets"][0]["records"] == 1


def test_a_nul_byte_in_a_path_is_one_line_naming_it(labelled, tmp_path):
    calls = [lambda p: stoker.Loader(p, shuffle=True, batch_size=4, batch_format="dict"), stoker.inspect,
             stoker.verify, lambda p: stoker.DatasetWriter(p, {"label": "int64"}),
             lambda p: stoker.push(p, "s3://b/x")]
    for path in (str(labelled) + "\0x", os.fsencode(labelled) + b"\0x",
                 "http://user:PASSWORD@127.0.0.1:1/ds?X-Amz-Signature=SIG\0"):
        for call in calls:
            with pytest.raises(ValueError, match=r"a NUL byte follows \(byte \d+\)") as e:
                call(path)
            assert "\n" not in str(e.value)
            assert "PASSWORD" not in str(e.value) and "SIG" not in str(e.value)
