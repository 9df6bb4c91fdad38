"""stoker.Loader: batches as stored, zero-copy views of pooled buffers, order and exactly-once
across ranks, state_dict round trips (elastic too), rank defaults, bad options and paths."""

import collections
import gc
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import stoker
from loader_datasets import IMAGE_SIZES, RECORDS, encode, photo, pixels, write_labelled
from stoker.transforms import Normalize, RandomResizedCrop


def labels_of(batches):
    return [int(v) for b in batches for v in b["label"]]


def epoch_labels(loader, epoch):
    return [b["label"].tolist() for b in loader.epoch(epoch)]


def test_batches_hold_the_records_as_stored(labelled):
    loader = stoker.Loader(labelled, batch_size=16, shuffle=False, workers=2, batch_format="dict")
    assert len(loader) == (RECORDS + 15) // 16
    assert loader.fields == [("image", "uint8", [1, 4, 4]), ("label", "int64", [])]
    batches = list(loader)
    assert len(batches) == len(loader)
    assert labels_of(batches) == list(range(RECORDS))
    for b in batches:
        assert set(b) == {"image", "label"}
        assert b["image"].dtype == torch.uint8 and b["label"].dtype == torch.int64
        assert b["image"].shape == (len(b["label"]), 1, 4, 4)
        assert b["image"].is_contiguous()
        for image, label in zip(b["image"], b["label"]):
            np.testing.assert_array_equal(image.numpy(), pixels(int(label)))
    assert len(batches[-1]["label"]) == RECORDS % 16


def test_order_depends_on_seed_and_epoch_never_on_workers(labelled):
    reference = stoker.Loader(labelled, batch_size=16, shuffle=True, seed=3, workers=0,
                              batch_format="dict")
    epoch0 = epoch_labels(reference, 0)
    assert sorted(sum(epoch0, [])) == list(range(RECORDS))
    assert sum(epoch0, []) != list(range(RECORDS))
    assert epoch_labels(reference, 1) != epoch0
    for workers, prefetch in ((1, 1), (3, 2), (2, None)):
        other = stoker.Loader(labelled, batch_size=16, shuffle=True, seed=3, workers=workers,
                              prefetch=prefetch,
                              batch_format="dict")
        assert epoch_labels(other, 0) == epoch0
    assert epoch_labels(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=4,
                                      batch_format="dict"), 0) != epoch0


def test_workers_auto_tunes_without_changing_the_batches(labelled):
    fixed = stoker.Loader(labelled, shuffle=True, batch_size=4, seed=3, workers=1, batch_format="dict")
    assert fixed.tuning is None
    tuned = stoker.Loader(labelled, shuffle=True, batch_size=4, seed=3, workers="auto", batch_format="dict")
    assert tuned.tuning is None or tuned.tuning["trials"] == []  # nothing measured yet
    # Cheap batches: a measuring window (12 batches, at least 50 ms) spans a few epochs.
    for epoch in range(200):
        assert epoch_labels(tuned, epoch) == epoch_labels(fixed, epoch)
        if tuned.tuning["trials"] and epoch >= 2:
            break
    tuning = tuned.tuning
    assert 1 <= tuning["workers"] <= os.cpu_count()
    assert tuning["trials"]  # the settings it measured
    assert isinstance(tuning["settled"], bool) and tuning["reason"]
    assert tuned.options["workers"] >= tuning["workers"]  # the pool's size, its maximum


def test_set_epoch_and_plain_iteration(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=64, batch_format="dict")
    reference = stoker.Loader(labelled, shuffle=True, batch_size=64, batch_format="dict")
    # Without set_epoch each completed iteration moves to the next epoch.
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 0)
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 1)
    # set_epoch fixes the epoch of every later iteration (DistributedSampler's convention).
    loader.set_epoch(5)
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 5)
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 5)
    # An iteration abandoned mid-way: the next one starts its epoch again at batch 0.
    iterator = iter(loader)
    next(iterator)
    next(iterator)
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 5)
    # The abandoned iterator was ended by the new iteration: asked again, it says so.
    with pytest.raises(RuntimeError, match="ended when the loader was asked to start an "
                                           "iteration .* iterate a second stoker.Loader"):
        next(iterator)


def test_batches_are_zero_copy_views_of_recycled_pooled_buffers(labelled):
    loader = stoker.Loader(labelled, batch_size=8, shuffle=False, workers=2, prefetch=4,
                           batch_format="dict")
    iterator = loader.epoch(0)  # the native iteration, whose buffers' addresses it tells
    held = next(iterator)
    held_addresses = iterator._field_addresses()
    # The tensors' data are the pooled buffer the native loader filled, not copies of it.
    assert [held["image"].data_ptr(), held["label"].data_ptr()] == held_addresses
    expected = held["image"].clone()
    seen = set()
    for _ in range(100):
        batch = next(iterator)
        assert [batch["image"].data_ptr(), batch["label"].data_ptr()] == \
            iterator._field_addresses()
        seen.add(batch["image"].data_ptr())
    # A held batch keeps its buffer: never handed out again, never overwritten.
    assert held_addresses[0] not in seen
    assert torch.equal(held["image"], expected)
    assert held["label"].tolist() == list(range(8))
    # Batches not held are recycled: a few buffers serve 100 batches (prefetch 4, plus the
    # one being replaced and the one returned).
    assert len(seen) <= 4 + 3


def test_a_batch_outlives_its_loader(labelled):
    loader = stoker.Loader(labelled, batch_size=8, shuffle=False, workers=2, batch_format="dict")
    iterator = iter(loader)
    next(iterator)
    batch = next(iterator)
    del iterator, loader
    gc.collect()
    assert batch["label"].tolist() == list(range(8, 16))
    np.testing.assert_array_equal(batch["image"][3].numpy(), pixels(11))


@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("last_batch", ["short", "drop", "pad"])
def test_exactly_once_across_ranks(labelled, world_size, last_batch):
    per_rank, unpadded = [], []
    for rank in range(world_size):
        loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=rank, world_size=world_size,
                               drop_last=last_batch == "drop", seed=9, workers=1,
                               last_batch=None if last_batch == "drop" else last_batch,
                               batch_format="dict")
        batches = list(loader.epoch(2))
        assert len(batches) == len(loader)
        per_rank.append(labels_of(batches))
        if last_batch == "pad":
            assert {tuple(b["label"].shape) for b in batches} == {(16,)}  # one shape
            unpadded += [label for b in batches for label in b["label"][b["valid"]].tolist()]
    counts = collections.Counter(sum(per_rank, []))
    assert len({len(labels) for labels in per_rank}) == 1  # every rank gets as many samples
    if last_batch == "pad":
        # The valid samples are each sample exactly once; the padding fills whole batches.
        assert sorted(unpadded) == list(range(RECORDS))
        assert sum(counts.values()) == len(per_rank[0]) * world_size
        assert sum(counts.values()) - RECORDS < world_size * 16
    elif last_batch == "drop":
        # The global tail of fewer than world_size * batch_size samples is dropped.
        assert max(counts.values()) == 1
        assert RECORDS - len(counts) == RECORDS % (world_size * 16)
    else:
        # Every sample at least once; padding repeats fewer than world_size of them once.
        assert set(counts) == set(range(RECORDS))
        assert sum(counts.values()) - RECORDS == -RECORDS % world_size
        assert max(counts.values()) <= 2


def test_a_padded_epoch_resumes_mid_way_elastically(labelled):
    """last_batch="pad": a state saved mid-epoch on 2 ranks, restored on 3, delivers each
    remaining sample once among the valid ones."""
    def valid_labels(batches):
        return [label for b in batches for label in b["label"][b["valid"]].tolist()]

    seen = []
    for rank in range(2):
        loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=rank, world_size=2, seed=4,
                               last_batch="pad", workers=1, batch_format="dict")
        loader.set_epoch(1)
        iterator = iter(loader)
        seen += valid_labels([next(iterator) for _ in range(10)])
        state = loader.state_dict()
    assert state["position"] == 10 * 16 * 2
    for rank in range(3):
        loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=rank, world_size=3, seed=4,
                               last_batch="pad", workers=2, batch_format="dict")
        loader.load_state_dict(state)
        seen += valid_labels(loader)
    assert sorted(seen) == list(range(RECORDS))


def test_a_dataset_field_named_valid_refuses_padding(tmp_path):
    path = str(tmp_path / "ds")
    with stoker.DatasetWriter(path, {"valid": "int64", "label": "int64"}) as writer:
        for i in range(5):
            writer.append({"valid": i, "label": i})
    with pytest.raises(ValueError, match="adds the field 'valid', which .* has"):
        stoker.Loader(path, shuffle=True, batch_size=4, last_batch="pad", batch_format="dict")
    # Left out, it pads: 5 samples in batches of 4, the last 3 of the second repeated.
    loader = stoker.Loader(path, batch_size=4, shuffle=False, last_batch="pad",
                           transforms={"valid": None}, batch_format="dict")
    batches = list(loader)
    assert [b["label"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 0, 1, 2]]
    assert [b["valid"].tolist() for b in batches] == [[True] * 4, [True, False, False, False]]


def take(iterator, n):
    return [next(iterator)["label"].tolist() for _ in range(n)]


def test_state_dict_round_trips_mid_epoch(labelled):
    reference = epoch_labels(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, batch_format="dict"), 1)
    first = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, workers=1, batch_format="dict")
    first.set_epoch(1)
    iterator = iter(first)
    assert take(iterator, 7) == reference[:7]
    state = json.loads(json.dumps(first.state_dict()))  # JSON-serialisable
    assert (state["epoch"], state["position"]) == (1, 7 * 16)
    # Into a loader with another worker count: the next iteration continues at batch 7.
    second = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, workers=3, batch_format="dict")
    second.load_state_dict(state)
    rest = iter(second)
    assert len(rest) == len(reference) - 7
    assert [b["label"].tolist() for b in rest] == reference[7:]
    # Then the next epoch, from its start.
    assert second.state_dict()["epoch"] == 2
    assert [b["label"].tolist() for b in second] == epoch_labels(first, 2)
    # A state taken at an epoch's end continues with the next epoch.
    third = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, workers=0, batch_format="dict")
    third.load_state_dict(second.state_dict())
    assert [b["label"].tolist() for b in third] == epoch_labels(first, 3)


def test_set_epoch_after_load_state_dict(labelled):
    reference = stoker.Loader(labelled, shuffle=True, batch_size=32, batch_format="dict")
    source = stoker.Loader(labelled, shuffle=True, batch_size=32, batch_format="dict")
    iterator = source.epoch(4)
    take(iterator, 3)
    state = source.state_dict()
    # The usual resumed loop: set_epoch(saved epoch) continues it where it stopped...
    loader = stoker.Loader(labelled, shuffle=True, batch_size=32, batch_format="dict")
    loader.load_state_dict(state)
    loader.set_epoch(4)
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 4)[3:]
    # ... and only once: the next iteration of epoch 4 is the whole epoch.
    assert [b["label"].tolist() for b in loader] == epoch_labels(reference, 4)
    # set_epoch naming another epoch starts that epoch at batch 0.
    other = stoker.Loader(labelled, shuffle=True, batch_size=32, batch_format="dict")
    other.load_state_dict(state)
    other.set_epoch(6)
    assert [b["label"].tolist() for b in other] == epoch_labels(reference, 6)


def test_set_epoch_between_iter_and_the_first_batch_counts(labelled):
    """As a DataLoader's DistributedSampler: the epoch is the one set when the first batch is
    asked for (Lightning calls iter() first, then sets the epoch)."""
    loader = stoker.Loader(labelled, shuffle=True, batch_size=32, batch_format="dict")
    iterator = iter(loader)
    loader.set_epoch(3)
    assert len(iterator) == len(loader)
    assert [b["label"].tolist() for b in iterator] == epoch_labels(loader, 3)


def test_elastic_restore_from_two_ranks_to_three(labelled):
    seen = collections.Counter()
    state = None
    for rank in range(2):
        loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=rank, world_size=2, seed=1,
                               batch_format="dict")
        loader.set_epoch(3)
        iterator = iter(loader)
        for labels in take(iterator, 10):
            seen.update(labels)
        if rank == 0:
            state = loader.state_dict()
    assert state["position"] == 10 * 16 * 2
    for rank in range(3):
        loader = stoker.Loader(labelled, shuffle=True, batch_size=24, rank=rank, world_size=3, seed=1,
                               workers=rank, batch_format="dict")
        loader.load_state_dict(state)
        loader.set_epoch(3)
        seen.update(labels_of(loader))
    assert set(seen) == set(range(RECORDS))
    # The rest (683 samples) dealt to 3 ranks pads 1 sample: one repeat at most.
    assert sum(seen.values()) - RECORDS == -(RECORDS - 320) % 3
    assert max(seen.values()) <= 2


def test_ra_reps_repeat_each_sample_with_its_own_crop_and_resume_only_themselves(images):
    """ra_reps=3 (the references' RASampler): each sample three times in a row, each repeat
    cropped by its own draws, the same for any workers; the state restores only ra_reps=3."""
    path, _ = images
    def loader(ra_reps=3, workers=0, world_size=1, rank=0):
        return stoker.Loader(path, shuffle=True, batch_size=3, seed=4, ra_reps=ra_reps, workers=workers,
                             rank=rank, world_size=world_size,
                             transforms={"image": RandomResizedCrop(12)})
    reference = [(image.clone(), label.tolist()) for image, label in loader().epoch(1)]
    batches = len(loader())
    assert loader().options["ra_reps"] == 3
    assert len(loader()) == len(loader(ra_reps=1))  # an epoch keeps the dataset's length
    for image, labels in reference[:-1]:
        assert labels == [labels[0]] * 3
        assert not torch.equal(image[0], image[1]) or not torch.equal(image[1], image[2])
    for workers in (1, 3):
        assert all(torch.equal(a[0], b[0]) and a[1] == b[1].tolist()
                   for a, b in zip(reference, loader(workers=workers).epoch(1)))
    # On three ranks, each rank gets one repeat of every sample.
    ranks = [sum((labels.tolist() for _, labels in loader(world_size=3, rank=r).epoch(1)), [])
             for r in range(3)]
    assert ranks[0][:len(ranks[0]) - 1] == ranks[1][:len(ranks[0]) - 1]
    first = loader()
    iterator = first.epoch(2)
    next(iterator)
    state = json.loads(json.dumps(first.state_dict()))
    assert state["ra_reps"] == 3
    resumed = loader(workers=2)
    resumed.load_state_dict(state)
    resumed.set_epoch(2)
    assert [labels.tolist() for _, labels in resumed] == \
        [labels.tolist() for _, labels in loader().epoch(2)][1:]
    with pytest.raises(ValueError, match=r"state_dict\['ra_reps'\] is 3; this loader's ra_reps is 1"):
        loader(ra_reps=1).load_state_dict(state)
    with pytest.raises(ValueError, match="ra_reps must be an int >= 1 or None, not 0"):
        loader(ra_reps=0)
    with pytest.raises(ValueError, match="ra_reps must be from 1 to 256, not 257"):
        loader(ra_reps=257)
    assert batches == -(-len(IMAGE_SIZES) // 3)


def test_shuffle_window_reads_a_few_shards_at_a_time_and_resumes_only_itself(labelled):
    with open(os.path.join(labelled, "manifest.json")) as f:
        counts = [shard["records"] for shard in json.load(f)["shards"]]
    shard_of = [s for s, count in enumerate(counts) for _ in range(count)]
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, shuffle_window=2, workers=1,
                           batch_format="dict")
    assert loader.options["shuffle_window"] == 2
    order = sum(epoch_labels(loader, 1), [])
    assert sorted(order) == list(range(RECORDS))
    default = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, batch_format="dict")
    assert default.options["shuffle_window"] == "all"
    assert order != sum(epoch_labels(default, 1), [])
    assert sum(epoch_labels(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, shuffle_window="all",
                                          batch_format="dict"),
                            1), []) == sum(epoch_labels(default, 1), [])
    # At most M = floor((L - 1) / c_min) + 1 shards between their first and last read at once,
    # L = ceil(2 N / S) (sampler.h); the global shuffle reads all of them throughout.
    def most_live(order):
        first, last = {}, {}
        for position, label in enumerate(order):
            first.setdefault(shard_of[label], position)
            last[shard_of[label]] = position
        return max(sum(first[s] <= p <= last[s] for s in first) for p in range(len(order)))

    span = -(-2 * RECORDS // len(counts))
    assert 1 <= most_live(order) <= (span - 1) // min(counts) + 1 < len(counts)
    assert most_live(sum(epoch_labels(default, 1), [])) == len(counts)

    iterator = loader.epoch(3)
    take(iterator, 5)
    state = json.loads(json.dumps(loader.state_dict()))
    assert state["shuffle_window"] == 2
    resumed = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2, shuffle_window=2, workers=0,
                            batch_format="dict")
    resumed.load_state_dict(state)
    resumed.set_epoch(3)
    assert [b["label"].tolist() for b in resumed] == epoch_labels(loader, 3)[5:]
    with pytest.raises(ValueError, match=r"state_dict\['shuffle_window'\] is 2; this loader's "
                                         r"shuffle_window is 'all'"):
        default.load_state_dict(state)
    # A state saved before windows existed is the global shuffle's.
    del state["shuffle_window"]
    default.load_state_dict(state)
    with pytest.raises(ValueError, match=r"state_dict\['shuffle_window'\] is 'all'; this "
                                         r"loader's shuffle_window is 2"):
        resumed.load_state_dict(state)


@pytest.mark.parametrize("mutate, message", [
    (lambda s: "epoch 1", "not a stoker.Loader state_dict"),
    (lambda s: {**s, "format": "other/1"}, "not a stoker.Loader state_dict"),
    (lambda s: {k: v for k, v in s.items() if k != "position"}, "lacks 'position'"),
    (lambda s: {**s, "epoch": -1}, r"state_dict\['epoch'\] must be an int in"),
    (lambda s: {**s, "records": 10}, "dataset of 10 records"),
    (lambda s: {**s, "position": RECORDS}, f"position {RECORDS} is not inside an epoch"),
    (lambda s: {**s, "seed": 8}, r"state_dict\['seed'\] is 8; this loader's seed is 0"),
    (lambda s: {**s, "dataset": "0" * 16}, "of another dataset .* is '[0-9a-f]{16}'"),
    (lambda s: {k: v for k, v in s.items() if k != "dataset"}, "lacks 'dataset'"),
])
def test_bad_state_dicts_raise(labelled, mutate, message):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, batch_format="dict")
    with pytest.raises(ValueError, match=message):
        loader.load_state_dict(mutate(loader.state_dict()))


def test_rank_and_world_size_defaults(labelled, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    options = stoker.Loader(labelled, batch_size=256, shuffle=True, batch_format="dict").options
    assert (options["rank"], options["world_size"]) == (0, 1)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    options = stoker.Loader(labelled, batch_size=256, shuffle=True, batch_format="dict").options
    assert (options["rank"], options["world_size"]) == (2, 3)
    options = stoker.Loader(labelled, batch_size=256, shuffle=True, rank=1, batch_format="dict").options
    assert (options["rank"], options["world_size"]) == (1, 3)
    monkeypatch.setenv("RANK", "two")
    with pytest.raises(ValueError, match="RANK='two' is not an int"):
        stoker.Loader(labelled, batch_size=256, shuffle=True, batch_format="dict")


def test_torch_distributed_rank_comes_before_the_environment(labelled, tmp_path):
    """In a process of its own: torch.distributed's group (world 1) over RANK/WORLD_SIZE."""
    script = textwrap.dedent(f"""
        import os, torch.distributed as dist, stoker
        os.environ.update(RANK="5", WORLD_SIZE="9")
        dist.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0,
                                world_size=1)
        o = stoker.Loader({str(labelled)!r}).options
        print(o["rank"], o["world_size"])
        dist.destroy_process_group()
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1"]


@pytest.mark.parametrize("options, error, message", [
    ({"batch_size": 0}, ValueError, "batch_size must be at least 1, not 0"),
    ({"batch_size": "8"}, TypeError, "batch_size must be an int, not str"),
    ({"batch_size": 2**40}, ValueError, "more than the 16 GiB a batch buffer may take"),
    ({"workers": -1}, ValueError, "workers must be an int >= 0, None or 'auto', not -1"),
    ({"workers": 1025}, ValueError, "workers must be at most 1024, not 1025"),
    ({"workers": "many"}, ValueError, "workers must be an int, None or 'auto', not 'many'"),
    ({"workers": 1.5}, TypeError, "workers must be an int, not float"),
    ({"prefetch": 0}, ValueError, "prefetch must be an int >= 1 or None, not 0"),
    ({"prefetch": 4097}, ValueError, "prefetch must be at most 4096, not 4097"),
    ({"seed": -1}, ValueError, "seed must be in"),
    ({"seed": 1.5}, TypeError, "seed must be an int"),
    ({"rank": 2, "world_size": 2}, ValueError, r"rank must be in \[0, 1\], not 2"),
    ({"rank": 0, "world_size": 0}, ValueError, "world_size must be at least 1, not 0"),
    ({"rank": -1, "world_size": 2}, ValueError, r"rank must be in \[0, 1\], not -1"),
    ({"verify": "sometimes"}, ValueError, "verify 'sometimes' is not one of always"),
    ({"verify": None}, TypeError, "verify must be a str"),
    ({"on_error": "ignore"}, ValueError, "on_error 'ignore' is not one of raise, skip"),
    ({"device": "tpu"}, ValueError, "is not a device|delivers to 'cpu' or 'cuda'"),
    ({"device": "meta"}, ValueError, "delivers to 'cpu' or 'cuda'"),
    ({"transforms": {"nope": Normalize(0, 1)}}, ValueError, "field 'nope', which the dataset"),
    ({"transforms": {"label": Normalize(0, 1)}}, ValueError, r"field 'label' \(int64\)"),
    ({"transforms": {"image": RandomResizedCrop(2)}}, ValueError,
     "crops need an encoded-image field"),
    ({"transforms": {"image": Normalize([0.5, 0.5], [1, 1])}}, ValueError,
     "field 'image': Normalize has 2 means for images of 1 channel: the native one takes 1"),
    ({"transforms": {"image": Normalize(0.5, 0)}}, ValueError,
     "field 'image': std must be non-zero"),
    ({"transforms": {"image": None, "label": None}}, ValueError, "leave no field"),
    ({"transforms": {"image": 42}}, ValueError, "int is not a transform stoker.Loader runs"),
    ({"last_batch": "fill"}, ValueError, "last_batch must be one of short, drop, pad, not 'fill'"),
    ({"shuffle_window": 0}, ValueError, "shuffle_window must be 'all' or an int >= 1, not 0"),
    ({"shuffle_window": "wide"}, ValueError,
     "shuffle_window must be 'all' or an int >= 1, not 'wide'"),
    ({"shuffle_window": 1.5}, TypeError, "shuffle_window must be an int, not float"),
    ({"shuffle_window": 2**20 + 1}, ValueError,
     "shuffle_window must be all or a number of shards from 1 to 1048576, not 1048577"),
    ({"last_batch": "pad", "drop_last": True}, ValueError,
     "drop_last=True contradicts last_batch='pad'"),
    ({"last_batch": "pad", "on_error": "skip"}, ValueError,
     "last_batch 'pad' promises full batches, which on_error 'skip' would shorten"),
])
def test_bad_options_raise_with_the_message(labelled, options, error, message):
    with pytest.raises(error, match=message):
        stoker.Loader(labelled, **options, batch_format="dict")


def test_every_native_loader_setting_is_a_field_of_a_settings_group(labelled):
    """The settings the native table describes (loader_settings.h) reach Python as fields of
    stoker's settings groups."""
    fields = {f for group in (stoker.Order, stoker.Batches, stoker.Feed, stoker.Storage)
              for f in group.__dataclass_fields__}
    assert set(stoker._stoker.LOADER_SETTINGS) <= fields
    options = stoker.Loader(labelled, batch_size=256, shuffle=True, order=stoker.Order(shuffle_window=2, ra_reps=2),
                            feed=stoker.Feed(workers=1, prefetch=3),
                            storage=stoker.Storage(verify="off"),
                            batches=stoker.Batches(on_error="skip", batch_format="dict")).options
    assert {name: options[name] for name in stoker._stoker.LOADER_SETTINGS} == {
        "workers": 1, "shuffle_window": 2, "prefetch": 3, "verify": "off", "on_error": "skip",
        "ra_reps": 2}


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present here")
def test_cuda_without_cuda_is_a_value_error(labelled):
    with pytest.raises(ValueError, match=r"torch.cuda.is_available\(\) is False"):
        stoker.Loader(labelled, batch_size=256, shuffle=True, device="cuda", batch_format="dict")


def test_bad_paths_raise_naming_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope: no such dataset directory"):
        stoker.Loader(tmp_path / "nope", batch_size=256, shuffle=True, batch_format="dict")
    (tmp_path / "train.bin").write_bytes(b"tokens")  # nanoGPT's: read when named
    with pytest.raises(FileNotFoundError, match=r"train.bin: a file, not a dataset .*; a "
                                                r"headerless token file is read where its "
                                                r"source is named \(stoker.Tokens\(path, "):
        stoker.Loader(tmp_path / "train.bin", batch_size=2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: not a stoker dataset"):
        stoker.Loader(tmp_path / "empty", batch_size=256, shuffle=True, batch_format="dict")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{ not json")
    with pytest.raises(stoker.Error, match="manifest.json"):
        stoker.Loader(bad, batch_size=256, shuffle=True, batch_format="dict")
    with pytest.raises(TypeError, match="dataset must be a path, a stoker dataset or a "
                                        "dataset object"):
        stoker.Loader(42, batch_size=256, shuffle=True, batch_format="dict")


def test_bad_epochs_raise(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, batch_format="dict")
    with pytest.raises(ValueError, match="epoch must be in"):
        loader.set_epoch(-1)
    with pytest.raises(TypeError, match="epoch must be an int"):
        loader.epoch("1")


def corrupt_one_record(path, record_label):
    """Flips a byte of the record whose label is `record_label` (its label bytes stay
    intact, so the checksum, not the label, tells)."""
    needle = pixels(record_label).tobytes() + np.int64(record_label).tobytes()
    for shard in sorted(path.glob("*.stk")):
        data = bytearray(shard.read_bytes())
        at = data.find(needle)
        if at >= 0:
            data[at] ^= 0xFF
            shard.write_bytes(bytes(data))
            return shard.name
    raise AssertionError("record not found")


def test_corrupt_record_raises_naming_it_or_is_skipped(tmp_path):
    path = write_labelled(tmp_path / "ds", records=100)
    shard = corrupt_one_record(path, 37)
    loader = stoker.Loader(path, batch_size=10, shuffle=False, workers=2, batch_format="dict")
    iterator = iter(loader)
    assert labels_of([next(iterator) for _ in range(3)]) == list(range(30))
    with pytest.raises(stoker.Error, match=f"{shard}: record .*dataset record 37"):
        next(iterator)
    skipping = stoker.Loader(path, batch_size=10, shuffle=False, workers=2, on_error="skip",
                             batch_format="dict")
    batches = list(skipping)
    assert labels_of(batches) == [i for i in range(100) if i != 37]
    assert len(batches[3]["label"]) == 9
    assert skipping.stats()["skipped"] == 1
    # verify="off" trusts the bytes: the corrupt pixel comes through.
    trusting = stoker.Loader(path, batch_size=10, shuffle=False, verify="off", batch_format="dict")
    assert labels_of(trusting) == list(range(100))



def write_bad_then_good(path, bad, good):
    """`bad` records whose image is not one, then `good` 40x30 JPEGs; label int64 = index."""
    with stoker.DatasetWriter(path, {"image": "bytes", "label": "int64"}) as writer:
        for i in range(bad + good):
            writer.append({"image": b"not an image" if i < bad else encode(photo(i, 40, 30),
                                                                              "JPEG"),
                           "label": i})
    return path


def below_12(label):
    if int(label) < 12:
        raise ValueError("below 12")
    return label


@pytest.mark.parametrize("workers", [0, 2])
def test_skip_leaves_out_a_batch_of_bad_records_never_an_empty_one(tmp_path, workers):
    path = write_bad_then_good(tmp_path / "ds", bad=9, good=6)
    made = stoker.Loader(path, batch_size=4, transforms=RandomResizedCrop(16),
                         feed=stoker.Feed(workers=workers),
                         batches=stoker.Batches(on_error="skip", batch_format="dict"))
    batches = list(made)  # 0-3, 4-7 bad; 8 bad, 9-11; 12-14
    assert [b["label"].tolist() for b in batches] == [[9, 10, 11], [12, 13, 14]]
    assert made.stats()["skipped"] == 9
    assert len(made) == 4  # at most
    # A batch the Python steps fail entirely is left out too, in this process or in workers.
    for python_workers in (0, 2):
        made = stoker.Loader(path, batch_size=4, transforms={"image": RandomResizedCrop(16),
                                                             "label": below_12},
                             feed=stoker.Feed(workers=workers, python_workers=python_workers),
                             batches=stoker.Batches(on_error="skip", batch_format="dict"))
        assert [b["label"].tolist() for b in made] == [[12, 13, 14]]
        assert made.stats()["python_skipped"] == 3
    # One of two ranks leaving a batch out would have its peer wait for it.
    ranked = stoker.Loader(path, batch_size=2, transforms=RandomResizedCrop(16),
                           order=stoker.Order(rank=0, world_size=2),
                           batches=stoker.Batches(on_error="skip", batch_format="dict"))
    with pytest.raises(stoker.Error, match=r"^on_error='skip': every record of batch 0 of "
                       r"epoch 0 of .*ds.* on rank 0 was bad, and leaving the batch out would "
                       r"give this rank fewer batches than its 1 peers"):
        next(iter(ranked))


@pytest.mark.parametrize("bad, good, batches", [(10, 0, 3), (10_001, 3, 2_500)])
def test_skip_over_data_with_no_good_record_is_one_line_naming_it(tmp_path, bad, good, batches):
    """An epoch with no good record, or none in its first 10,000, is an error."""
    path = write_bad_then_good(tmp_path / "ds", bad, good)
    made = stoker.Loader(path, batch_size=4, transforms=RandomResizedCrop(16),
                         batches=stoker.Batches(on_error="skip", batch_format="dict"))
    with pytest.raises(stoker.Error, match=rf"^on_error='skip': no record of epoch 0 of .*ds.* "
                       rf"was good in its first {batches} batches \(all left out\): "):
        next(iter(made))

def test_options_report_auto_values(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, batch_format="dict")
    options = loader.options
    assert options["workers"] == max(1, len(os.sched_getaffinity(0)) - 1)
    assert 4 <= options["prefetch"] <= 64
    assert options["device"] == "cpu"
    assert "batch_size=16" in repr(loader)


def test_the_readme_loader_example(tmp_path, monkeypatch):
    """README.md's loader example, run as written over a dataset shaped like its FakeData."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("\n## `stoker.Loader` in a PyTorch loop\n", 1)[1].split("\n## ", 1)[0]
    code = next(block for block in re.findall(r"```python\n(.*?)```", section, re.S)
                if "stoker.Loader(" in block)
    monkeypatch.chdir(tmp_path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from doc_inputs import make_inputs

    make_inputs(tmp_path)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    saved = torch.load("checkpoint.pt")
    assert (saved["loader"]["epoch"], saved["loader"]["position"]) == (2, 0)
    assert scope["image"].dtype == torch.float32 and scope["label"].dtype == torch.int64


# Batch formats, loader.dataset and loader.sampler: what a DataLoader script reads ------------


def test_an_image_and_label_dataset_gives_tuples_as_a_dataloader_does(labelled):
    loader = stoker.Loader(labelled, batch_size=16, shuffle=False)
    assert loader.options["batch_format"] == ("image", "label")
    as_dicts = list(stoker.Loader(labelled, batch_size=16, shuffle=False, batch_format="dict"))
    batches = 0
    for (image, target), want in zip(loader, as_dicts):
        assert type(want) is dict
        assert torch.equal(image, want["image"]) and torch.equal(target, want["label"])
        batches += 1
    assert batches == len(loader) == len(as_dicts)
    # The order the user names, and "tuple": every field in the dataset's order.
    label, image = next(iter(stoker.Loader(labelled, batch_size=4, shuffle=False,
                                           batch_format=["label", "image"])))
    assert label.tolist() == [0, 1, 2, 3] and image.shape == (4, 1, 4, 4)
    image, label = next(iter(stoker.Loader(labelled, batch_size=4, shuffle=False,
                                           batch_format="tuple")))
    assert label.tolist() == [0, 1, 2, 3] and image.dtype == torch.uint8


def test_tuples_come_straight_from_the_native_epoch_and_hold_the_dicts_fields(labelled):
    # No Python step between the native epoch and the tuple (a token batch takes microseconds);
    # the fields named, in that order, a subset too, as the dict's.
    as_dicts = list(stoker.Loader(labelled, batch_size=16, shuffle=False, batch_format="dict"))
    for names in (("image", "label"), ("label", "image"), ("label",)):
        iteration = iter(stoker.Loader(labelled, batch_size=16, shuffle=False, batch_format=names))
        batches = list(iteration)
        assert type(iteration._iteration).__name__ == "LoaderEpoch"
        assert len(batches) == len(as_dicts)
        for batch, want in zip(batches, as_dicts):
            assert type(batch) is tuple and len(batch) == len(names)
            assert all(torch.equal(got, want[name]) for got, name in zip(batch, names))


def test_other_fields_come_as_dicts_as_dataloader_collates_dict_samples(classes):
    loader = stoker.Loader(classes, batch_size=8, batches=stoker.Batches(batch_format="dict"))
    batch = next(iter(loader))
    assert type(batch) is dict and list(batch.keys()) == ["image", "label", "id"]
    assert batch["id"].tolist() == list(range(8))
    # Two fields that are not (image, label): a plain dict, as default_collate gives one.
    two = next(iter(stoker.Loader(classes, shuffle=True, batch_size=8, transforms={"image": None})))
    assert type(two) is dict and two.keys() == {"label", "id"}

def test_a_padded_epochs_tuples_end_with_the_valid_mask(labelled):
    def last(**options):
        return list(stoker.Loader(labelled, batch_size=16, shuffle=False, last_batch="pad",
                                  **options))[-1]

    image, label, valid = last()
    assert valid.dtype == torch.bool and valid.tolist() == [True] * (RECORDS % 16) + \
        [False] * (16 - RECORDS % 16)
    valid2, label2 = last(batch_format=("valid", "label"))
    assert torch.equal(valid2, valid) and torch.equal(label2, label)
    label3, valid3 = last(batch_format=("label",))
    assert torch.equal(valid3, valid)
    assert torch.equal(last(batch_format="dict")["valid"], valid)


@pytest.mark.parametrize("batch_format, error, message", [
    ("dicts", ValueError, "batch_format must be 'dict', 'tuple', None or a sequence"),
    (("image", 3), ValueError, "each a str"),
    ((), ValueError, "must name at least one field"),
    (("image", "label", "image"), ValueError, "batch_format names 'image' twice"),
    (("image", "target"), ValueError, r"names 'target', which the dataset lacks \(fields: "
                                      r"image, label, id \(and 'valid' with last_batch='pad'\)"),
    (("valid",), ValueError, "'valid', which the dataset lacks"),
])
def test_bad_batch_formats_are_one_line_errors(classes, batch_format, error, message):
    with pytest.raises(error, match=message):
        stoker.Loader(classes, batch_size=256, shuffle=True, batch_format=batch_format)


def test_a_field_named_but_left_out_by_the_transforms_is_an_error(classes):
    with pytest.raises(ValueError, match="batch_format names 'id', which the transforms leave "
                                         r"out \(None\)"):
        stoker.Loader(classes, batch_size=256, shuffle=True, batch_format=("image", "id"), transforms={"id": None})


def test_tuple_batches_resume_from_a_state_dict(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2)
    loader.set_epoch(3)
    iterator = iter(loader)
    seen = [next(iterator)[1].tolist() for _ in range(5)]
    state = loader.state_dict()
    assert (state["epoch"], state["position"]) == (3, 5 * 16)
    resumed = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2)
    resumed.load_state_dict(state)
    seen += [label.tolist() for _, label in resumed]
    assert seen == epoch_labels(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=2,
                                              batch_format="dict"), 3)


def test_the_dataset_has_its_length_and_the_manifests_classes(labelled, tmp_path):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16)
    assert len(loader) == (RECORDS + 15) // 16 and loader.batch_size == 16
    dataset = loader.dataset
    assert len(dataset) == RECORDS and dataset.root == str(labelled)
    assert [f["name"] for f in dataset.fields] == ["image", "label"]
    assert not hasattr(dataset, "classes")  # written without class names
    assert not hasattr(dataset, "samples")  # records do not name their source files
    path = tmp_path / "named"
    with stoker.DatasetWriter(path, {"image": ("uint8", (1, 2, 2)), "label": "int64"},
                              class_names=["cat", "dog"]) as writer:
        for i in range(5):
            writer.append({"image": np.zeros((1, 2, 2), np.uint8), "label": i % 2})
    named = stoker.Loader(path, shuffle=True, batch_size=2).dataset
    assert len(named) == 5
    assert named.classes == ["cat", "dog"] and named.class_to_idx == {"cat": 0, "dog": 1}


@pytest.mark.parametrize("last_batch, per_rank", [
    ("short", (RECORDS + 1) // 2), ("drop", RECORDS // 32 * 16), ("pad", -(-RECORDS // 32) * 16)])
def test_the_sampler_sets_the_epoch_and_counts_a_ranks_samples(labelled, last_batch, per_rank):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=1, world_size=2, last_batch=last_batch,
                           batch_format="dict")
    reference = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=1, world_size=2,
                              last_batch=last_batch, batch_format="dict")
    sampler = loader.sampler
    assert len(sampler) == per_rank
    assert sum(len(b["label"]) for b in loader.epoch(0)) == per_rank
    for epoch in (4, 2):
        sampler.set_epoch(epoch)  # the torchvision reference's train_sampler.set_epoch(epoch)
        assert [b["label"].tolist() for b in loader] == epoch_labels(reference, epoch)
        assert [b["label"].tolist() for b in loader] == epoch_labels(reference, epoch)
