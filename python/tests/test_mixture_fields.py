"""stoker.Mixture of sources of different fields, each with its own transforms, read source by
source (docs/DATA.md#mixing-sources): every sample's fields are what its source alone gives for
that record, each field's rows are the batch's samples that have it, in batch order, and
``source`` says each sample's source; the mixture's shares, the same batches for any workers,
an exact resume (also on another world size); fields no batch can hold refused in one line."""

import collections

import numpy as np
import pytest
import torch

import stoker
from stoker import transforms as S
from test_image_folder_source import make_folder
from test_mixture import write_source

FOLDER_FIELDS = {"image", "label", "height", "width", "original_size", "original_checksum"}
BOXES_FIELDS = {"label", "boxes", "tokens"}


def write_boxes(path, records):
    """Record i: label 1000 + i, boxes float32 [i % 3, 4] and tokens int64 [5], from i."""
    schema = {"label": "int64", "boxes": ("float32", ("N", 4)), "tokens": ("int64", (5,))}
    with stoker.DatasetWriter(path, schema, shard_mb=0.5 / 1024) as writer:
        for i in range(records):
            writer.append({"label": 1000 + i,
                           "boxes": np.arange(i % 3 * 4, dtype=np.float32).reshape(-1, 4) + i,
                           "tokens": np.arange(5) * i})
    return path


@pytest.fixture
def sources(tmp_path):
    """An image folder (image, label: 23 records, cropped at random) and a dataset of other
    fields (label, boxes, tokens: 30 records)."""
    crop = S.Compose([S.RandomResizedCrop(8), S.ToTensor()])
    return (stoker.ImageFolder(make_folder(tmp_path / "folder"), transform=crop),
            stoker.Dataset(write_boxes(tmp_path / "boxes", 30)))


def mixed(sources, tmp_path, **options):
    options.setdefault("batch_size", 8)
    options.setdefault("shuffle", True)
    mixture = stoker.Mixture(list(sources), weights=options.pop("weights", [1, 2]),
                             samples_per_epoch=options.pop("samples_per_epoch", None))
    return stoker.Loader(mixture, seed=4, cache_dir=str(tmp_path / "cache"), **options)


def samples_of(batch, fields=(FOLDER_FIELDS, BOXES_FIELDS)):
    """The batch's samples [(source, {field: value})]: each field's rows given, in order, to
    the samples whose source has it; every row used (each a copy: a batch views the pool)."""
    source = batch["source"].tolist()
    out = [(s, {}) for s in source]
    for name, value in batch.items():
        if name != "source":
            holders = [i for i, s in enumerate(source) if name in fields[s]]
            assert len(holders) == len(value), name
            for i, row in zip(holders, value):
                out[i][1][name] = row.clone()
    assert all(set(sample) == fields[s] for s, sample in out)
    return out


def epoch_samples(loader, epoch):
    loader.set_epoch(epoch)
    return [sample for batch in loader for sample in samples_of(batch)]


def alone(source, epoch, tmp_path):
    """Each record's sample as a loader over `source` alone gives it in epoch `epoch`."""
    loader = stoker.Loader(source, batch_size=1, shuffle=False, seed=4, batch_format="dict",
                           cache_dir=str(tmp_path / "cache"))
    loader.set_epoch(epoch)
    return [{name: value[0].clone() for name, value in batch.items()} for batch in loader]


def same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def same_samples(got, want):
    return len(got) == len(want) and all(
        s == t and same(x, y) for (s, x), (t, y) in zip(got, want))


def test_each_sample_is_its_sources_own_and_says_its_source(sources, tmp_path):
    assert len(mixed(sources, tmp_path)) == 6  # until the first is spent: 15 and 30 samples
    loader = mixed(sources, tmp_path, samples_per_epoch=60)  # 20 and 40: the second cycles
    assert len(loader.dataset) == 53 and len(loader) == 8
    batch = next(iter(loader))
    assert batch["image"].dtype == torch.float32 and batch["tokens"].dtype == torch.int64
    assert isinstance(batch["boxes"], list)  # a field of varying size, as a list
    starts = [0, 23]
    for epoch in (0, 1):
        own = [alone(s, epoch, tmp_path) for s in sources]
        got = epoch_samples(loader, epoch)
        indices = list(loader.sampler)  # the mixture's indices: the folder's, then the others
        assert len(got) == len(indices) == 60
        for index, (source, sample) in zip(indices, got):
            assert source == int(index >= 23)
            assert same(sample, own[source][index - starts[source]])
    # The label, in both sources, is one tensor in batch order.
    labels = [int(x) for b in loader for x in b["label"]]
    assert len(labels) == 60 and max(labels[:8]) >= 1000 > min(labels[:8])


def test_the_shares_are_the_weights_and_every_sample_comes_once_before_twice(sources,
                                                                            tmp_path):
    loader = mixed(sources, tmp_path, weights=[1, 3], samples_per_epoch=10000, batch_size=500)
    got = [(s, int(sample["label"]) if s else int(sample["image"].sum() * 1e4))
           for s, sample in epoch_samples(loader, 0)]
    sources_seen = collections.Counter(s for s, _ in got)
    assert sources_seen == {0: 2500, 1: 7500}
    times = collections.Counter(label for s, label in got if s == 1)
    assert len(times) == 30 and max(times.values()) - min(times.values()) <= 1
    first_thousand = collections.Counter(s for s, _ in got[:1000])
    assert abs(first_thousand[1] / 1000 - 0.75) < 0.05  # interleaved, not in blocks


def test_the_same_batches_for_any_workers_and_a_resume_goes_on_exactly(sources, tmp_path):
    whole = epoch_samples(mixed(sources, tmp_path, workers=0), 1)
    assert same_samples(epoch_samples(mixed(sources, tmp_path, workers=2), 1), whole)
    first = mixed(sources, tmp_path, workers=2)
    first.set_epoch(1)
    iterator = iter(first)
    taken = [sample for _ in range(3) for sample in samples_of(next(iterator))]
    state = first.state_dict()
    assert state["position"] == 24 and state["order"].startswith("mixture:weights=[1.0,2.0]")
    resumed = mixed(sources, tmp_path, workers=0)
    resumed.load_state_dict(state)
    rest = [sample for batch in resumed for sample in samples_of(batch)]
    assert same_samples(taken + rest, whole)
    with pytest.raises(ValueError, match=r"state_dict\['order'\] is 'mixture:weights=\[1.0,2"):
        mixed(sources, tmp_path, weights=[1, 1]).load_state_dict(state)


@pytest.mark.parametrize("resume", [(2, 3), (3, 1)])
def test_ranks_resumed_on_another_world_size_deliver_the_epoch_once(tmp_path, resume):
    """An image dataset (labels 0..39) and one of other fields (labels 1000..): what N ranks
    took before the checkpoint and M ranks after it is the epoch, each sample once (but for
    the padding that ends the deal, fewer than M)."""
    parts = (write_source(tmp_path / "a", 40, 0), stoker.Dataset(write_boxes(tmp_path / "b", 30)))
    fields = ({"image", "label"}, BOXES_FIELDS)

    def labels(loader, batches=None):
        taken = []
        for b, batch in enumerate(loader):
            taken += [int(sample["label"]) for _, sample in samples_of(batch, fields)]
            if b + 1 == batches:
                break
        return taken

    def ranks(world, **options):
        loaders = [mixed(parts, tmp_path, batch_size=4, rank=r, world_size=world, **options)
                   for r in range(world)]
        for loader in loaders:
            loader.set_epoch(1)
        return loaders

    whole = labels(ranks(1)[0])
    before, state = [], None
    for r, loader in enumerate(ranks(resume[0])):
        before += labels(loader, 2)
        state = loader.state_dict() if r == 0 else state
    after = []
    for loader in ranks(resume[1], workers=2):
        loader.load_state_dict(state)
        after += labels(loader)
    assert sorted(before) == sorted(whole[:state["position"]])
    delivered = before + after
    padding = len(delivered) - len(whole)
    assert 0 <= padding < resume[1]
    assert collections.Counter(delivered) - collections.Counter(whole) == \
        collections.Counter(whole[:padding])


def test_fields_no_batch_can_hold_are_one_line(sources, tmp_path):
    other = tmp_path / "other"
    with stoker.DatasetWriter(other, {"image": ("uint8", (1, 2, 2)), "label": "float32"}) as w:
        w.append({"image": np.zeros((1, 2, 2), np.uint8), "label": 0.5})
    with pytest.raises(ValueError, match=r"^Mixture: field 'label' is int64 \[\] in source 0 "
                                         r"\(stoker.Dataset\(.*boxes'\)\) and float32 \[\] in "
                                         r"source 1 \(stoker.Dataset\(.*other'\)\): one batch"):
        mixed([sources[1], other], tmp_path)
    with pytest.raises(ValueError, match=r"field 'image' is float32 \[3, 8, 8\] in source 0 "
                                         r"\(stoker.ImageFolder.*uint8 \[1, 2, 2\] in source 1"):
        mixed([sources[0], stoker.Dataset(other, transforms={"label": None})], tmp_path)
    named = tmp_path / "named"
    with stoker.DatasetWriter(named, {"source": "int64"}) as w:
        w.append({"source": 3})
    with pytest.raises(ValueError, match="source 1 .* has a field 'source', the name the batch"):
        mixed([sources[1], named], tmp_path)
    with pytest.raises(ValueError, match="read source by source, which takes no batch_format"):
        mixed(sources, tmp_path, batch_format=("image", "label"))
    with pytest.raises(ValueError, match="source 0 .* has transforms, and so has the Mixture"):
        stoker.Mixture(sources, transforms={"image": None})
