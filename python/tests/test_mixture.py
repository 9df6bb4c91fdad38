"""stoker.Mixture: sources mixed by weight (the "mixture" order, docs/DESIGN.md contract 13).
Each epoch holds exactly each source's share, every sample of a source once before any twice;
the same batches for any workers, ranks sharing the epoch exactly once, an exact resume that
refuses another mixture; sources of different kinds, and remote ones, mixed (sources of
different fields: test_mixture_fields.py)."""

import collections
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

import stoker
from test_image_folder_source import make_folder
from test_webdataset_source import write_tars


def write_source(path, records, first_label):
    """`records` records, label first_label + i, in shards of a few records."""
    with stoker.DatasetWriter(path, {"image": ("uint8", (1, 2, 2)), "label": "int64"},
                              shard_mb=0.5 / 1024) as writer:
        for i in range(records):
            writer.append({"image": np.full((1, 2, 2), i % 256, np.uint8),
                           "label": first_label + i})
    return path


@pytest.fixture
def parts(tmp_path):
    return (write_source(tmp_path / "a", 40, 0), write_source(tmp_path / "b", 100, 1000))


def labels(loader):
    return [int(label) for batch in loader for label in batch["label"]]


def mixed(parts, **options):
    options.setdefault("batch_size", 8)
    options.setdefault("shuffle", True)
    options.setdefault("batch_format", "dict")
    weights = options.pop("weights", [3, 1])
    return stoker.Loader(stoker.Mixture(list(parts), weights=weights), seed=4, **options)


def test_the_batch_says_each_samples_source(parts):
    batches = list(mixed(parts))
    assert all(torch_equal(b["source"], (b["label"] >= 1000).long()) for b in batches)
    # A tuple batch keeps DataLoader's (image, label).
    image, label = next(iter(mixed(parts, batch_format=("image", "label"))))
    assert image.shape == (8, 1, 2, 2) and label.shape == (8,)


def test_the_loaders_sampler_gives_the_mixtures_indices(parts):
    loader = mixed(parts, shuffle=True)
    loader.set_epoch(2)
    indices = list(loader.sampler)
    assert len(loader.sampler) == len(indices) == 53
    # Part a's records are indices 0..39 (label = index), b's 40..139 (label 1000 + index - 40).
    assert [i if i < 40 else 1000 + i - 40 for i in indices] == labels(loader)


def torch_equal(a, b):
    return bool((a == b).all())


def test_each_epoch_holds_each_sources_share_and_every_sample_once_before_twice(parts):
    loader = mixed(parts)
    # Until the first is spent: 40 / 0.75 = 53 samples, 40 of a (all of it) and 13 of b.
    assert len(loader.dataset) == 140 and len(loader) == 7
    seen_b = []
    for epoch in range(3):
        loader.set_epoch(epoch)
        got = labels(loader)
        a = [x for x in got if x < 1000]
        b = [x for x in got if x >= 1000]
        assert sorted(a) == list(range(40)) and len(b) == 13
        seen_b += b
    assert len(set(seen_b)) == 39  # b's own epoch of 100 goes on across the mixture's epochs
    assert got[:8] != sorted(got[:8])  # interleaved and shuffled


def test_the_same_batches_for_any_workers_and_ranks_once(parts):
    whole = labels(mixed(parts, workers=0))
    assert labels(mixed(parts, workers=2)) == whole
    ranks = [labels(mixed(parts, rank=r, world_size=3, batch_size=4, drop_last=True))
             for r in range(3)]
    dealt = sorted(sum(ranks, []))
    assert len(dealt) == 48 and len(set(dealt)) == 48 and set(dealt) <= set(whole)


def test_a_resume_continues_and_refuses_another_mixture(parts):
    whole = labels(mixed(parts))
    first = mixed(parts)
    iterator = iter(first)
    taken = [int(x) for _ in range(3) for x in next(iterator)["label"]]
    state = first.state_dict()
    assert state["order"] == ("mixture:weights=[3,1],samples_per_epoch=0,until=first,"
                              "change_at=[],later_weights=[],share_of=samples")
    resumed = mixed(parts, workers=1)
    resumed.load_state_dict(state)
    assert taken + labels(resumed) == whole
    other = mixed(parts, weights=[1, 1])
    with pytest.raises(ValueError, match="state_dict\\['order'\\] is 'mixture:weights=\\[3,1\\]"):
        other.load_state_dict(state)


@pytest.mark.parametrize("samples_per_epoch, beyond, inside", [(None, 60, 48), (1000, 1000, 504)])
def test_a_states_position_is_checked_against_the_epoch_not_the_records(
        parts, samples_per_epoch, beyond, inside):
    """An epoch of 53 samples (until the first source is spent) or of 1000, over 140 records: a
    position past the epoch is refused in one line naming it and the epoch's length, the loader
    unchanged; one inside the epoch (past the records, for 1000) resumes there."""
    def loader():
        return stoker.Loader(stoker.Mixture(list(parts), weights=[3, 1],
                                            samples_per_epoch=samples_per_epoch),
                             batch_size=8, seed=4, batch_format="dict")
    epoch = samples_per_epoch or 53
    whole = labels(loader())
    assert len(whole) == epoch
    first = loader()
    state = first.state_dict()
    with pytest.raises(ValueError) as refused:
        first.load_state_dict({**state, "position": beyond})
    assert str(refused.value) == (f"the state_dict's position {beyond} is not inside an epoch "
                                  f"of {epoch} samples")
    assert labels(first) == whole  # still usable, from where it was
    resumed = loader()
    resumed.load_state_dict({**state, "position": inside})
    assert labels(resumed) == whole[inside:]


# Builds epoch 0 of a mixture of `samples` samples (its order: seconds, ~30 bytes a sample) in a
# loader of `workers`; on Ctrl-C prints its peak resident bytes and its state's epoch and
# position.
HUGE_EPOCH = """
import sys
import stoker
a, b, samples, workers = sys.argv[1:]
loader = stoker.Loader(stoker.Mixture([a, b], weights=[3, 1], samples_per_epoch=int(samples)),
                       batch_size=8, seed=4, workers=int(workers), batch_format="dict")
print("ready", flush=True)
try:
    next(iter(loader))
    print("built")
except KeyboardInterrupt:
    # VmHWM, not ru_maxrss: Linux carries the parent's peak across fork and exec into the latter.
    peak_kb = next(line.split()[1] for line in open("/proc/self/status")
                   if line.startswith("VmHWM:"))
    state = loader.state_dict()
    print("interrupted", int(peak_kb) * 1024, state["epoch"], state["position"])
"""


def resident_bytes(pid):
    return int(open(f"/proc/{pid}/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("workers", [0, 2])
def test_ctrl_c_ends_a_huge_epochs_order_build(parts, workers):
    """Ctrl-C while a 6 x 10^7-sample epoch's order is built (~2 CPU seconds, twice that with
    workers, which build the next epoch's too) ends it with KeyboardInterrupt, the loader's
    state as it was. Ctrl-C is sent once the build has taken 50 MB; a cancelled build peaked
    0.45 GB above the start (measured: its first vector), a whole one 0.95 GB (1.5 GB with
    workers): memory, which load does not change as it changes time, tells them apart. The
    timeout is a hang's alone."""
    samples = 60_000_000
    child = subprocess.Popen([sys.executable, "-c", HUGE_EPOCH, str(parts[0]), str(parts[1]),
                              str(samples), str(workers)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        before = resident_bytes(child.pid)
        while child.poll() is None and resident_bytes(child.pid) < before + 50 * 2**20:
            pass  # the order's first vector growing: the build has started
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=300)
    finally:
        child.kill()
    said = out.split()
    assert said[0] == "interrupted", out
    assert (said[2], said[3]) == ("0", "0")
    # Polled every 2^16 samples, the build stops within a few MB past its first vector.
    assert int(said[1]) - before < 750 * 2**20, out


def test_bad_weights_are_one_line(parts):
    with pytest.raises(ValueError, match="order 'mixture': 3 weights for 2 sources"):
        mixed(parts, weights=[1, 2, 3])
    for bad in ([1, -1], [1, float("nan")], [0, 1]):
        with pytest.raises(ValueError, match="order 'mixture': weights must be"):
            mixed(parts, weights=bad)
    with pytest.raises(ValueError, match="two or more sources"):
        stoker.Mixture([parts[0]])
    for bad in ([True, 1], ["3", 1], 3, torch.ones(2, 2), [10**400, 1]):
        with pytest.raises(ValueError) as refused:
            mixed(parts, weights=bad)
        assert str(refused.value).startswith("Mixture: weights ") and \
            str(refused.value).endswith(" must be real numbers above 0, one per source")


def test_weights_are_any_real_numbers(parts):
    """A tensor, a numpy array, numpy scalars and ints past 2^64 weigh as the floats they are."""
    want = labels(mixed(parts, weights=[3.0, 1.0]))
    for weights in (torch.tensor([3, 1]), np.array([3.0, 1.0]), [np.float32(3), np.int64(1)],
                    [3 * 2**70, 2**70]):
        assert labels(mixed(parts, weights=weights)) == want


def test_sources_of_different_kinds_mix(tmp_path):
    folder = make_folder(tmp_path / "folder")
    tars = write_tars(folder, tmp_path / "tars")
    mixture = stoker.Mixture([stoker.ImageFolder(folder), stoker.WebDataset(tars)],
                             samples_per_epoch=30)
    loader = stoker.Loader(mixture, batch_size=10, batch_format="dict",
                           transforms={"image": None}, cache_dir=str(tmp_path / "cache"))
    assert len(loader.dataset) == 46 and len(loader) == 3
    checksums = [c for batch in loader for c in batch["original_checksum"].tolist()]
    # 15 of each: the folder's files and the tars' members are the same 23 images.
    assert len(checksums) == 30 and len(set(checksums)) >= 15


def test_a_remote_source_mixes_as_its_local_copy(parts, nginx_server, tmp_path):
    """A dataset at a URL (its shards pinned through the cache) beside a local one: the local
    mixture's batches, with 0 and 2 workers."""
    shutil.copytree(parts[1], nginx_server.root / "b")
    local = labels(mixed(parts))
    for workers in (0, 2):
        remote = mixed([parts[0], f"{nginx_server.url}/b"], workers=workers,
                       cache_dir=str(tmp_path / "cache"))
        assert labels(remote) == local


def checkpoint_on(parts, weights, world):
    """What `world` ranks deliver of epoch 1 in their first two batches each, and rank 0's
    state_dict then."""
    delivered, state = [], None
    for rank in range(world):
        loader = mixed(parts, weights=weights, batch_size=4, rank=rank, world_size=world)
        loader.set_epoch(1)
        iterator = iter(loader)
        delivered += [int(x) for _ in range(2) for x in next(iterator)["label"]]
        if rank == 0:
            state = loader.state_dict()
    return delivered, state


def resumed_on(parts, weights, world, state):
    """What `world` ranks (2 workers each) deliver of the rest of the epoch from `state`."""
    delivered = []
    for rank in range(world):
        loader = mixed(parts, weights=weights, batch_size=4, rank=rank, world_size=world,
                       workers=2)
        loader.load_state_dict(state)
        loader.set_epoch(1)
        delivered += labels(loader)
    return delivered


@pytest.mark.parametrize("weights", [[1, 1], [3, 1], [1, 4]])
@pytest.mark.parametrize("resume", [(1, 2), (3, 2), (2, 3)])
def test_ranks_resumed_on_another_world_size_deliver_the_epoch_once(parts, weights, resume):
    """Property: for weights x world sizes N -> M (0 workers, then 2), what every rank received
    before the checkpoint (on N) and after it (on M) is the epoch's samples, each once, but for
    the padding that ends the deal (fewer than M, repeating the epoch's first)."""
    whole = mixed(parts, weights=weights, batch_size=4, workers=0)
    whole.set_epoch(1)
    whole = labels(whole)
    before, state = checkpoint_on(parts, weights, resume[0])
    assert sorted(before) == sorted(whole[:state["position"]])
    delivered = before + resumed_on(parts, weights, resume[1], state)
    padding = len(delivered) - len(whole)
    assert 0 <= padding < resume[1]
    assert collections.Counter(delivered) - collections.Counter(whole) == \
        collections.Counter(whole[:padding])
    assert set(delivered) == set(whole)
