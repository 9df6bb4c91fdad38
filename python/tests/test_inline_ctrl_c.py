"""Ctrl-C and a loader whose batches are built inline (workers=0): the watch that lets Ctrl-C end
a batch being built is installed once an epoch (not once a batch) and taken away when the epoch
ends, leaving SIGINT's handler as the program left it. Each case runs in a new process (a
stuck watch would hang, a handler chained to itself would crash)."""

import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent("""
    import ctypes, os, signal, sys
    import numpy as np
    import stoker

    np.random.default_rng(0).integers(0, 65536, 64 * 1024, dtype=np.uint16).tofile(sys.argv[1])

    def loader(seed=0):
        return stoker.Loader(stoker.Tokens(sys.argv[1], seq_len=16), batch_size=4, shuffle=True,
                             seed=seed, workers=0, batch_format=("input_ids", "labels"))

    def handler():
        '''SIGINT's handler as the kernel has it (struct sigaction's first field).'''
        action = ctypes.create_string_buffer(256)
        assert ctypes.CDLL(None).sigaction(signal.SIGINT, None, action) == 0
        return ctypes.c_void_p.from_buffer(action).value

    def epoch(loader, interrupt_at=None):
        '''The epoch's batches as bytes, a KeyboardInterrupt raised and caught after batch
        interrupt_at.'''
        out = []
        for index, (ids, labels) in enumerate(loader):
            out.append(ids.numpy().tobytes() + labels.numpy().tobytes())
            if index == interrupt_at:
                try:
                    os.kill(os.getpid(), signal.SIGINT)  # raises once the call returns
                    raise AssertionError("no KeyboardInterrupt")
                except KeyboardInterrupt:
                    pass
        return out
""")


def run(tmp_path, body):
    script = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script, str(tmp_path / "tokens.bin")],
                          capture_output=True, text=True, timeout=60)


def test_the_handler_is_installed_for_an_epoch_and_put_back_at_its_end(tmp_path):
    done = run(tmp_path, """
        before = handler()
        iteration = iter(loader())
        next(iteration)
        during = handler()
        for _ in iteration:
            assert handler() == during  # not put back and made again at each batch
        print(during != before, handler() == before)
    """)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr


def test_an_epoch_goes_on_after_a_ctrl_c_caught_between_its_batches(tmp_path):
    """A KeyboardInterrupt between batches, caught: the next batch is built (not taken for
    cancelled) and the epoch is the one an uninterrupted loader gives."""
    done = run(tmp_path, """
        print(epoch(loader(), interrupt_at=3) == epoch(loader()))
    """)
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


def test_two_loaders_epochs_at_once_chain_to_pythons_handler(tmp_path):
    """Two inline epochs alive together (zip): Ctrl-C raises KeyboardInterrupt once, and when
    both have ended Python's handler is back."""
    done = run(tmp_path, """
        before = handler()
        a, b = loader(1), loader(2)
        for index, _ in enumerate(zip(a, b)):
            if index == 2:
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                except KeyboardInterrupt:
                    print("interrupted")
        del a, b
        print(handler() == before)
        print(epoch(loader(), interrupt_at=1) == epoch(loader()))
    """)
    assert (done.returncode, done.stdout) == (0, "interrupted\nTrue\nTrue\n"), done.stderr


def test_a_handler_the_program_sets_during_an_epoch_stays(tmp_path):
    """signal.signal(SIGINT, SIG_DFL) between batches: the epoch's end leaves it, so SIGINT
    then ends the process as the default action does."""
    done = run(tmp_path, """
        iteration = iter(loader())
        next(iteration)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        for _ in iteration:
            pass
        print("ended", flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        print("still alive", flush=True)
    """)
    assert (done.returncode, done.stdout) == (-2, "ended\n"), done.stderr

