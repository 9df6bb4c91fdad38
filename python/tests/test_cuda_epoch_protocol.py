"""stoker._device.CudaEpoch, the code stoker.Loader(device="cuda") runs, on a simulated
torch.cuda (cuda_sim.py), as feed_protocol_test checks the C++ feed (docs/DESIGN.md contract 11):
under many random schedules every batch reads, in kernels on the consumer's stream, the bytes
the workers built (no copy early, torn or overwritten, also in a batch held on; a field of
varying size as a list of samples too); a host batch is
let go only after its copy and device memory only after the consumer's kernels; the host pool
stays at prefetch + 2 buffers. Each of CudaEpoch's waits left out is caught."""

import collections
import random
import sys

import pytest

import cuda_sim
from stoker import _device
from stoker._device import CudaEpoch

# A field of varying size ("boxes") comes as a list of samples viewing the batch's buffer.
FIELDS = (("image", 24), ("boxes", (8, 0, 16, 4)), ("label", 8))
# Per seed, EPOCHS epochs of 1 to MAX_BATCHES batches. Short, since only an epoch's last batch
# is delivered with its copy perhaps still running (CudaEpoch._release waits for the others').
EPOCHS = 4
MAX_BATCHES = 12
HOLD_EVERY = 4  # every 4th batch is held by the consumer...
HOLD_FOR = 3  # ...over 3 more deliveries, then read again
SEEDS = 20


def invert(data):
    """The device normalisation of the epochs that have one."""
    return bytes(255 - b for b in data)


def run_epoch(sim, rng, streams):
    """A training loop over a CudaEpoch of random length, prefetch and normalisation of "image"
    or none: each batch read by kernels on the stream current at its delivery (the default
    stream or one of the consumer's, in phases of 4), every HOLD_EVERY-th read again HOLD_FOR
    deliveries later; one epoch in three broken out of at a random batch and closed. Returns
    its native epoch."""
    batches = rng.randint(1, MAX_BATCHES)
    native = cuda_sim.Native(sim, batches, rng.randint(1, 3), FIELDS)
    normalize = {"image": lambda t: sim.map(t, invert)} if rng.random() < 0.5 else {}
    close_at = rng.randrange(batches) if rng.random() < 1 / 3 else None
    epoch = CudaEpoch(sim.torch, native, native, "cuda", normalize)
    held = collections.deque()

    def consume(b, batch, stream):
        for f, (name, size) in enumerate(FIELDS):
            built = cuda_sim.content(b, f, cuda_sim.field_bytes(size))
            if isinstance(size, tuple):  # each sample its own slice of the field's bytes
                assert len(batch[name]) == len(size)
                for k, n in enumerate(size):
                    sim.read(batch[name][k], built[sum(size[:k]):][:n], stream)
            else:
                sim.read(batch[name], invert(built) if name in normalize else built, stream)

    for b in range(batches + 1):
        stream = streams[b // 4 % 2]
        with sim.torch.cuda.stream(stream):
            batch = next(epoch, None)
        if batch is None:
            break
        assert epoch.state == (0, 0, b + 1)
        consume(b, batch, stream)
        if b % HOLD_EVERY == 0:
            held.append((b, batch, stream))
        while held and held[0][0] + HOLD_FOR < b:
            consume(*held.popleft())
        if b == close_at:
            epoch.close()
            break
    assert b in (close_at, batches)
    while held:
        consume(*held.popleft())
    return native


def violations(seed, threaded):
    """The violations of EPOCHS epochs on a simulation seeded `seed`: the simulation's, and a
    host pool grown past prefetch + 2 buffers."""
    sim = cuda_sim.Sim(seed, threaded)
    rng = random.Random(seed)
    cuda = sim.torch.cuda
    streams = (cuda.current_stream("cuda"), cuda.Stream("cuda"))
    natives = [run_epoch(sim, rng, streams) for _ in range(EPOCHS)]
    sim.close()
    assert all(native.out == 0 for native in natives), "every host batch was let go"
    grew = any(native.allocations > native.prefetch + 2 for native in natives)
    return dict(sim.violations, **({"pool_grew": 1} if grew else {}))


@pytest.fixture
def fast_switching():
    """The interpreter switches threads every 20 us, so the streams' threads interleave with
    the host's calls (the default, 5 ms, would run them in bursts)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(20e-6)
    yield
    sys.setswitchinterval(interval)


def test_keeps_the_order_under_random_delays(fast_switching):
    for seed in range(SEEDS):
        assert violations(seed, threaded=True) == {}, f"seed {seed}"


def test_keeps_the_order_stepped_deterministically():
    for seed in range(10 * SEEDS):
        assert violations(seed, threaded=False) == {}, f"seed {seed}"


_release = CudaEpoch._release

# Each wait of CudaEpoch left out (the call it makes returns at once, or its own code is
# replaced), and the violation that shows it.
WAITS = {
    # _release: a host batch let go without waiting for its copy's event.
    "synchronize": (cuda_sim.Event, "synchronize", lambda self: None, "host_rewritten"),
    # _release(keep=1) in _fill: only host batches whose copies completed are let go.
    "keep": (CudaEpoch, "_release",
             lambda self, keep: _release(self, keep and len(self._copying)), "pool_grew"),
    # __next__: the consumer's stream does not wait for the copy.
    "wait_event": (cuda_sim.Stream, "wait_event", lambda self, event: None, "read_before_copy"),
    # __next__: a batch's memory back in the copy stream's pool when dropped, not after the
    # consumer's kernels.
    "record_stream": (cuda_sim.DeviceTensor, "record_stream", lambda self, stream: None,
                      "freed_while_read"),
    # __next__: the samples of a list field not recorded on the consumer's stream.
    "list_samples": (_device, "_tensors",
                     lambda batch: (f for f in batch.values() if not isinstance(f, list)),
                     "freed_while_read"),
}


@pytest.mark.parametrize("threaded", [True, False], ids=["threads", "stepped"])
@pytest.mark.parametrize("wait", WAITS)
def test_each_wait_left_out_is_caught(monkeypatch, fast_switching, wait, threaded):
    owner, name, without, violation = WAITS[wait]
    monkeypatch.setattr(owner, name, without)
    seeds_caught = sum(violation in violations(seed, threaded) for seed in range(SEEDS))
    # Many random schedules expose it, not one lucky one.
    assert seeds_caught >= SEEDS // 4, f"{wait}: caught in {seeds_caught} of {SEEDS} seeds"
