"""stoker.Loader keeps torch.utils.data.DataLoader's contract: its signature, its checks of its
arguments, its attributes and its batches (each test runs DataLoader beside stoker.Loader on
the same dataset), over a Python dataset (its __getitem__ in DataLoader's workers, in stoker's
order) and over data stoker reads natively."""

import contextlib
import inspect
import pickle
import random
import time

import numpy as np
import pytest
import torch
from torch.utils.data import (BatchSampler, DataLoader, Dataset, DistributedSampler,
                              IterableDataset, RandomSampler, SequentialSampler, default_collate)

import stoker
from loader_datasets import RECORDS
from test_image_folder_source import make_folder


class Squares(Dataset):
    """Sample i: (a float tensor [3] from i, i, {"square": i * i}): nested structure."""

    def __init__(self, size=37):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        return torch.full((3,), float(i)), i, {"square": i * i}


class Noisy(Squares):
    """Sample i: i and a draw from torch's, Python's and NumPy's global generators."""

    def __getitem__(self, i):
        return i, torch.rand(()).item(), random.random(), float(np.random.rand())


class Failing(Squares):
    def __getitem__(self, i):
        if i == 7:
            raise KeyError("no sample 7")
        return i


class Slow(Squares):
    def __getitem__(self, i):
        time.sleep(3)
        return super().__getitem__(i)


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(23))


def same(a, b):
    """Equal batches: same structure (a dict's key order too), types and tv_tensors' metadata
    (a box format and canvas), equal tensors."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b)
        assert (getattr(a, "format", None), getattr(a, "canvas_size", None)) == \
            (getattr(b, "format", None), getattr(b, "canvas_size", None))
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


NEWER_DATALOADERS = ["in_order"]  # DataLoader's arguments since torch 2.6, in its order


def test_the_signature_is_dataloaders_then_the_settings_groups():
    """This torch's DataLoader's arguments first (from torch 2.4 on), then those of newer
    DataLoaders it lacks, then stoker's settings groups."""
    ours = list(inspect.signature(stoker.Loader).parameters.values())
    theirs = list(inspect.signature(DataLoader).parameters.values())
    assert [(p.name, p.kind, p.default) for p in ours[:len(theirs)]] == \
        [(p.name, p.kind, p.default) for p in theirs]
    newer = [name for name in NEWER_DATALOADERS if name not in {p.name for p in theirs}]
    assert [p.name for p in ours[len(theirs):]] == newer + ["order", "batches", "feed",
                                                            "storage", "legacy"]


class DataLoaderBeforeInOrder(DataLoader):
    """torch 2.4's DataLoader as far as in_order goes: it has no such argument."""

    def __init__(self, dataset, **arguments):
        assert "in_order" not in arguments, "in_order given to a DataLoader without it"
        super().__init__(dataset, **arguments)


def test_a_torch_whose_dataloader_lacks_in_order_takes_its_default_and_refuses_false(monkeypatch):
    def plain(batch):
        if isinstance(batch, dict):
            return {k: plain(v) for k, v in batch.items()}
        return batch.tolist() if isinstance(batch, torch.Tensor) else [plain(b) for b in batch]

    want = [plain(b) for b in DataLoader(Squares(), batch_size=4)]
    monkeypatch.setattr(torch.utils.data, "DataLoader", DataLoaderBeforeInOrder)
    assert [plain(b) for b in stoker.Loader(Squares(), batch_size=4)] == want
    with pytest.raises(ValueError, match=r"^in_order=False needs torch 2\.6's DataLoader"):
        stoker.Loader(Squares(), batch_size=4, in_order=False)


BAD_ARGUMENTS = [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(persistent_workers=True), dict(sampler=[0, 1], shuffle=True),
    dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_sampler=[[0]], shuffle=True), dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="spawn"), dict(multiprocessing_context="nope", num_workers=2),
]


@pytest.mark.parametrize("arguments", BAD_ARGUMENTS, ids=str)
def test_bad_arguments_raise_dataloaders_error(arguments):
    with pytest.raises(ValueError) as theirs:
        DataLoader(Squares(), **arguments)
    with pytest.raises(ValueError) as ours:
        stoker.Loader(Squares(), **arguments)
    assert str(ours.value) == str(theirs.value)


MULTIPROCESSING_CONTEXTS = [
    (ValueError, dict(multiprocessing_context="spawn")),
    (ValueError, dict(multiprocessing_context="nope", num_workers=2)),
    (TypeError, dict(multiprocessing_context=5, num_workers=2)),
]


@pytest.mark.parametrize("error, arguments", MULTIPROCESSING_CONTEXTS, ids=str)
def test_a_bad_multiprocessing_context_is_dataloaders_error_over_native_data_too(
        labelled, error, arguments):
    with pytest.raises(error) as theirs:
        DataLoader(Squares(), **arguments)
    for dataset in (Squares(), labelled):
        with pytest.raises(error) as ours:
            stoker.Loader(dataset, **arguments)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_empty_dataset_gives_no_batches_and_refuses_shuffle_as_dataloader(num_workers):
    empty = Squares(0)
    assert list(DataLoader(empty, batch_size=4, num_workers=num_workers)) == []
    loader = stoker.Loader(empty, batch_size=4, num_workers=num_workers)
    assert len(loader) == 0 and list(loader) == [] and list(loader.sampler) == []
    with pytest.raises(ValueError) as theirs:
        DataLoader(empty, batch_size=4, shuffle=True)
    with pytest.raises(ValueError) as ours:
        stoker.Loader(empty, batch_size=4, shuffle=True)
    assert str(ours.value) == str(theirs.value)


def test_an_empty_subset_of_native_data_gives_no_batches_as_dataloader(fashion_mnist):
    import torchvision.transforms as T

    empty = torch.utils.data.Subset(fashion_mnist(transform=T.PILToTensor()), [])
    assert list(DataLoader(empty, batch_size=4)) == []
    loader = stoker.Loader(empty, batch_size=4)
    assert len(loader) == 0 and list(loader) == []
    with pytest.raises(ValueError, match="num_samples=0"):
        stoker.Loader(empty, batch_size=4, shuffle=True)


def test_a_generator_that_is_not_one_is_a_type_error_naming_it():
    with pytest.raises(TypeError):  # DataLoader's, at its first iteration
        next(iter(DataLoader(Squares(), generator=5)))
    with pytest.raises(TypeError, match="^generator must be a torch.Generator, not int$"):
        stoker.Loader(Squares(), generator=5)


def test_an_iterable_dataset_refuses_shuffle_as_dataloader_does():
    with pytest.raises(ValueError) as theirs:
        DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError) as ours:
        stoker.Loader(Stream(), shuffle=True)
    assert str(ours.value) == str(theirs.value)


def test_an_unknown_keyword_is_a_type_error_naming_the_closest_setting():
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_worker'; did you mean "
                                        "'num_workers'\\?"):
        stoker.Loader(Squares(), num_worker=2)
    with pytest.raises(TypeError, match=r"'shuffle_windows'; did you mean 'shuffle_window' "
                                        r"\(stoker.Order\(shuffle_window=...\)\)\?"):
        stoker.Loader(Squares(), shuffle_windows=2)


def test_a_setting_given_twice_names_it():
    with pytest.raises(TypeError, match="seed is set twice"):
        stoker.Loader(Squares(), seed=1, order=stoker.Order(seed=2))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_python_dataset_in_order_gives_dataloaders_batches(num_workers):
    theirs = list(DataLoader(Squares(), batch_size=5, num_workers=num_workers))
    loader = stoker.Loader(Squares(), batch_size=5, num_workers=num_workers)
    ours = list(loader)
    assert len(ours) == len(theirs) == len(loader) == 8
    for a, b in zip(ours, theirs):
        same(a, b)


def test_attributes_are_dataloaders():
    dataset = Squares()
    kwargs = dict(batch_size=4, shuffle=True, num_workers=2, drop_last=True, timeout=5,
                  prefetch_factor=3, persistent_workers=True)
    theirs, ours = DataLoader(dataset, **kwargs), stoker.Loader(dataset, **kwargs)
    for name in ("dataset", "batch_size", "drop_last", "num_workers", "timeout",
                 "prefetch_factor", "persistent_workers", "pin_memory", "collate_fn",
                 "worker_init_fn", "generator", "in_order", "pin_memory_device"):
        if hasattr(theirs, name):  # in_order is torch 2.6's
            assert getattr(ours, name) == getattr(theirs, name), name
    assert isinstance(ours.sampler, RandomSampler) and isinstance(ours.batch_sampler,
                                                                  BatchSampler)
    assert ours.batch_sampler.sampler is ours.sampler and ours.batch_sampler.batch_size == 4
    assert len(ours) == len(theirs) == 9
    assert isinstance(stoker.Loader(dataset).sampler, SequentialSampler)


@pytest.mark.parametrize("kwargs", [{}, {"batch_size": None}, {"num_workers": 2},
                                    {"num_workers": 2, "multiprocessing_context": "spawn"},
                                    {"batch_sampler": [[0, 1], [2]]},
                                    {"batch_sampler": BatchSampler(RandomSampler(range(9)), 3,
                                                                   False)}])
def test_what_dataloader_sets_where_nothing_was_given_is_its(kwargs):
    for dataset in (Squares(), Stream()):
        if isinstance(dataset, Stream) and "batch_sampler" in kwargs:
            continue  # an IterableDataset takes none
        theirs, ours = DataLoader(dataset, **kwargs), stoker.Loader(dataset, **kwargs)
        assert ours.collate_fn is theirs.collate_fn
        assert ours.prefetch_factor == theirs.prefetch_factor
        assert type(ours.multiprocessing_context) is type(theirs.multiprocessing_context)
        assert isinstance(ours.sampler, type(theirs.sampler)), kwargs  # stoker's: a subclass
        assert isinstance(ours.batch_sampler, type(theirs.batch_sampler)), kwargs
        assert list(zip(range(3), ours.sampler)) == list(zip(range(3), theirs.sampler))


@pytest.mark.parametrize("name", ["batch_size", "batch_sampler", "sampler", "drop_last",
                                  "dataset", "persistent_workers"])
def test_what_decides_the_batches_is_not_set_after_the_loader_is_made(name):
    theirs, ours = DataLoader(Squares()), stoker.Loader(Squares())
    with pytest.raises(ValueError) as refused:
        setattr(theirs, name, None)
    with pytest.raises(ValueError, match=str(refused.value).replace("DataLoader", "Loader")):
        setattr(ours, name, None)
    ours.num_workers = theirs.num_workers = 3  # the rest as DataLoader's: settable


def test_a_datasets_getitem_waits_as_dataloaders_unless_feed_says():
    # DataLoader's timeout=0 is for ever; stoker's Python steps' 300 s is not the dataset's.
    assert stoker.Loader(Squares(), num_workers=2)._engine._inner.timeout == 0
    assert stoker.Loader(Squares(), num_workers=2, timeout=7)._engine._inner.timeout == 7
    slow = stoker.Loader(Slow(), num_workers=1, feed=stoker.Feed(python_timeout=1))
    with pytest.raises(RuntimeError, match="timed out after 1 seconds"):
        next(iter(slow))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_nested_iteration_leaves_the_outer_one_going_as_dataloaders(num_workers):
    def loop(loader):
        seen, inner = [], []
        for step, batch in enumerate(loader):
            seen.append(batch[1].tolist())
            if step == 1:  # an evaluation on the training loader, mid-epoch
                inner = [b[1].tolist() for b in loader]
        return seen, inner

    kwargs = dict(batch_size=4, num_workers=num_workers)
    assert loop(stoker.Loader(Squares(), **kwargs)) == loop(DataLoader(Squares(), **kwargs))
    # The state follows the newest iteration: the nested one finished epoch 0.
    loader = stoker.Loader(Squares(), **kwargs)
    loop(loader)
    assert loader.state_dict()["epoch"] == 1


def test_the_sampler_gives_the_epochs_indices_and_set_epoch_changes_them():
    loader = stoker.Loader(Squares(), batch_size=4, shuffle=True)
    order = list(loader.sampler)
    assert sorted(order) == list(range(37))
    got = [int(i) for batch in loader for i in batch[1]]
    assert got == order
    loader.sampler.set_epoch(5)
    fifth = list(loader.sampler)
    assert fifth != order and [int(i) for batch in loader for i in batch[1]] == fifth


def test_shuffled_batches_do_not_depend_on_workers_and_seed_each_sample():
    runs = []
    for workers in (0, 2):
        loader = stoker.Loader(Noisy(), batch_size=4, shuffle=True, num_workers=workers,
                               order=stoker.Order(seed=11))
        runs.append(list(loader))
    for a, b in zip(*runs):
        same(a, b)
    draws = torch.cat([batch[1] for batch in runs[0]])
    assert len(set(draws.tolist())) == 37  # each sample its own draw


def test_iterating_in_the_main_process_leaves_the_global_generators_alone():
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    list(stoker.Loader(Noisy(), batch_size=4, shuffle=True))
    assert torch.equal(torch.rand(4), expected)


@pytest.mark.parametrize("options", [dict(num_workers=0), dict(num_workers=2),
                                     dict(num_workers=2, persistent_workers=True)])
def test_a_sampler_drawing_from_torchs_generators_draws_as_under_dataloader(options):
    """DataLoader draws its workers' base seed as each iteration starts (once with persistent
    workers), then its sampler draws: a sampler that draws from the global generator or from
    the loader's `generator` gives DataLoader's order, epoch after epoch, and leaves the global
    generator where DataLoader leaves it."""
    from torch.utils.data import WeightedRandomSampler

    def orders(make, **kwargs):
        torch.manual_seed(7)
        loader = make(Squares(), **{"batch_size": 3, **kwargs}, **options)
        epochs = [[b[1].tolist() for b in loader] for _ in range(3)]
        return epochs, torch.rand(2)

    weights = [1.0 + (i % 4) for i in range(37)]
    for kwargs in (lambda: dict(sampler=RandomSampler(range(37))),
                   lambda: dict(sampler=WeightedRandomSampler(weights, 20)),
                   lambda: dict(batch_sampler=BatchSampler(RandomSampler(range(37)), 3, False),
                                batch_size=1),
                   lambda: dict(sampler=RandomSampler(range(37), generator=g), generator=g)):
        g = torch.Generator().manual_seed(5)
        theirs = orders(DataLoader, **kwargs())
        g = torch.Generator().manual_seed(5)
        ours = orders(stoker.Loader, **kwargs())
        assert ours[0] == theirs[0] and len({str(e) for e in ours[0]}) == 3
        assert torch.equal(ours[1], theirs[1])  # the global generator where DataLoader left it


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("dataset, order", [(Squares, {}), (Squares, {"sampler": "random"}),
                                            (Stream, {})],
                         ids=["stokers-order", "a-sampler", "iterable"])
@pytest.mark.parametrize("finished", [False, True], ids=["mid-epoch", "epoch-done"])
def test_a_loader_let_go_ends_its_workers_at_once_as_dataloader(dataset, order, persistent,
                                                                finished):
    """The last reference to a loader and its iteration gone, DataLoader's workers are sent
    their end and exit 0 there and then, by reference counting: no cycle holds stoker's, whose
    collection would close the workers' queues before the end is sent, and DataLoader would
    kill each worker after waiting 5 s for it (as persistent ones were)."""
    import gc
    import multiprocessing

    results = []
    for make in (DataLoader, stoker.Loader):
        kwargs = {"sampler": RandomSampler(range(37))} if order else {}
        loader = make(dataset(), batch_size=3, num_workers=2, persistent_workers=persistent,
                      **kwargs)
        list(loader)
        iteration = iter(loader)
        next(iteration)
        if finished:
            list(iteration)
        workers = multiprocessing.active_children()
        gc.disable()
        try:
            del loader, iteration
            results.append([w.exitcode for w in workers])
        finally:
            gc.enable()
        gc.collect()  # what a cycle held (the defect) goes now
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.kill()
                w.join()
    assert results[0] == [0, 0] or not persistent and finished  # DataLoader's, as a check
    assert results[1] == results[0]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_user_sampler_and_batch_sampler_are_honoured(num_workers):
    sampler = [5, 3, 3, 30, 0, 12, 8]
    theirs = list(DataLoader(Squares(), batch_size=3, sampler=sampler))
    ours = list(stoker.Loader(Squares(), batch_size=3, sampler=sampler,
                              num_workers=num_workers))
    for a, b in zip(ours, theirs):
        same(a, b)
    batches = [[1, 2], [36], [4, 4, 4, 0]]
    for a, b in zip(stoker.Loader(Squares(), batch_sampler=batches),
                    DataLoader(Squares(), batch_sampler=batches)):
        same(a, b)


def test_a_distributed_sampler_is_honoured_epoch_by_epoch():
    sampler = DistributedSampler(Squares(), num_replicas=3, rank=1, shuffle=True, seed=4)
    loader = stoker.Loader(Squares(), batch_size=5, sampler=sampler)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        assert [int(i) for b in loader for i in b[1]] == list(sampler)


def test_collate_fn_is_dataloaders():
    def pairs(batch):
        return tuple(zip(*batch))

    for a, b in zip(stoker.Loader(Squares(), batch_size=4, collate_fn=pairs),
                    DataLoader(Squares(), batch_size=4, collate_fn=pairs)):
        same(a, b)


def test_batch_size_none_yields_samples():
    for a, b in zip(stoker.Loader(Squares(), batch_size=None),
                    DataLoader(Squares(), batch_size=None)):
        same(a, b)


def test_an_iterable_dataset_is_iterated_as_dataloader_does():
    for a, b in zip(stoker.Loader(Stream(), batch_size=4), DataLoader(Stream(), batch_size=4)):
        same(a, b)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_mid_epoch_gives_the_rest_exactly(num_workers):
    def loader():
        return stoker.Loader(Noisy(), batch_size=4, shuffle=True, num_workers=num_workers,
                             order=stoker.Order(seed=5))

    whole = list(loader())
    first = loader()
    iterator = iter(first)
    head = [next(iterator) for _ in range(3)]
    state = pickle.loads(pickle.dumps(first.state_dict()))
    second = loader()
    second.load_state_dict(state)
    for a, b in zip(head + list(second), whole):
        same(a, b)


@pytest.mark.parametrize("change, message", [
    (dict(epoch=2**70), r"^state_dict\['epoch'\] must be an int in \[0, 4611686018427387904\], "
                        r"not 1180591620717411303424$"),
    (dict(position=2**64), r"^state_dict\['position'\] must be an int in \[0, "),
    (dict(batches=-1), r"^state_dict\['batches'\] must be an int in \[0, "),
    (dict(position=38), r"^the state_dict's position 38 is past an epoch of 37 samples$"),
    (dict(order="sampler"), r"^state_dict\['order'\] is 'sampler': its position counts in that "
                            r"order, and this loader's is 'stoker'"),
])
def test_a_python_datasets_state_out_of_range_is_refused_at_load_in_one_line(change, message):
    saved = stoker.Loader(Squares(), batch_size=4, shuffle=True)
    next(iter(saved))
    loader = stoker.Loader(Squares(), batch_size=4, shuffle=True)
    with pytest.raises(ValueError, match=message):
        loader.load_state_dict(dict(saved.state_dict(), **change))
    assert len(list(loader)) == 10  # unchanged: the whole epoch
    loader.load_state_dict(dict(saved.state_dict(), position=37))  # at the epoch's end: valid
    assert list(loader) == []


def test_resume_on_another_world_size_continues_the_global_order():
    def loader(rank, world):
        return stoker.Loader(Squares(), batch_size=2, shuffle=True,
                             order=stoker.Order(seed=2, rank=rank, world_size=world))

    seen, states = [], []
    for rank in range(2):
        ranked = loader(rank, 2)
        iterator = iter(ranked)
        for _ in range(3):
            seen += next(iterator)[1].tolist()
        states.append(ranked.state_dict())
    assert states[0]["position"] == states[1]["position"] == 12
    single = loader(0, 1)
    single.load_state_dict(states[0])
    rest = [i for batch in single for i in batch[1].tolist()]
    assert sorted(seen + rest) == list(range(37))


def test_a_failing_sample_is_one_line_naming_it_and_the_loader_goes_on():
    loader = stoker.Loader(Failing(), batch_size=4, num_workers=2)
    with pytest.raises(stoker.SampleError) as error:
        list(loader)
    assert str(error.value) == "epoch 0, batch 1: Failing[7] raised KeyError: 'no sample 7'"
    assert "\n" not in str(error.value)
    assert [int(i) for i in next(iter(loader))] == [0, 1, 2, 3]  # usable after


class FailingToDecode(Squares):
    def __getitem__(self, i):
        return b"\xff".decode()  # UnicodeDecodeError, whose constructor takes five arguments


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_error_whose_type_takes_more_than_a_message_is_of_its_nearest_base(num_workers):
    with pytest.raises(ValueError):  # DataLoader's without workers: the error itself
        next(iter(DataLoader(FailingToDecode(), batch_size=4)))
    with pytest.raises(UnicodeError) as error:
        next(iter(stoker.Loader(FailingToDecode(), batch_size=4, num_workers=num_workers)))
    assert isinstance(error.value, stoker.SampleError)
    assert str(error.value).startswith("epoch 0, batch 0: FailingToDecode[0] raised "
                                       "UnicodeDecodeError: 'utf-8' codec can't decode")


def test_a_collate_fn_that_raises_is_named():
    def broken(batch):
        raise RuntimeError("cannot")

    with pytest.raises(stoker.SampleError, match="broken on 4 samples raised RuntimeError"):
        next(iter(stoker.Loader(Squares(), batch_size=4, collate_fn=broken)))


def test_an_unpicklable_dataset_for_spawned_workers_is_refused_in_one_line():
    dataset = Squares()
    dataset.lock = __import__("threading").Lock()
    with pytest.raises(ValueError, match="cannot be pickled"):
        stoker.Loader(dataset, num_workers=2, multiprocessing_context="spawn")


def test_the_plan_says_the_dataset_runs_in_python():
    plan = stoker.Loader(Squares()).plan
    assert plan["dataset"] == [("Squares.__getitem__", "python")]
    assert "natively" in plan["notes"]["dataset"][0]


# Native data ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_folder(tmp_path_factory.mktemp("contract") / "folder")


def test_an_image_classification_dataset_gives_lists_of_image_and_label(classes, folder):
    batch = next(iter(stoker.Loader(classes, batch_size=4)))  # a dataset of three fields
    assert isinstance(batch, list) and len(batch) == 2
    image, label = batch
    assert image.shape == (4, 1, 8, 8) and label.dtype == torch.int64
    loader = stoker.Loader(stoker.ImageFolder(folder, transform=stoker.transforms.Compose(
        [stoker.transforms.Resize(8), stoker.transforms.CenterCrop(8),
         stoker.transforms.ToTensor()])), batch_size=4)
    image, label = next(iter(loader))
    assert image.shape == (4, 3, 8, 8)
    assert loader.dataset.classes == ["cat", "dog", "eel"]
    assert len(loader.dataset) == len(stoker.ImageFolder(folder).samples)


def test_a_torchvision_image_folder_is_read_natively_with_its_pixels(folder):
    datasets = pytest.importorskip("torchvision.datasets")
    import torchvision.transforms.v2 as v2

    recipe = v2.Compose([v2.Resize(24), v2.CenterCrop(24), v2.ToImage(),
                         v2.ToDtype(torch.float32, scale=True)])
    dataset = datasets.ImageFolder(folder, transform=recipe)
    loader = stoker.Loader(dataset, batch_size=8)
    assert loader.dataset is dataset
    assert all(where == "native" for _, where in loader.plan["image"])
    assert "read natively" in loader.plan["notes"]["dataset"][0]
    for a, b in zip(loader, DataLoader(dataset, batch_size=8)):
        same(a, b)


def test_collate_fn_gets_the_samples_of_a_native_batch(labelled):
    def pairs(batch):
        return tuple(zip(*batch))

    images, labels = next(iter(stoker.Loader(labelled, batch_size=3, collate_fn=pairs)))
    assert [int(x) for x in labels] == [0, 1, 2] and images[1].shape == (1, 4, 4)
    mixed = next(iter(stoker.Loader(labelled, batch_size=3,
                                    collate_fn=lambda b: default_collate(b)[1] * 2)))
    assert mixed.tolist() == [0, 2, 4]


def test_batch_size_none_on_native_data_yields_samples(labelled):
    image, label = next(iter(stoker.Loader(labelled, batch_size=None)))
    assert image.shape == (1, 4, 4) and int(label) == 0


def as_pixels(sample):
    """A sample with a PIL image as (its mode, its pixels as a tensor), for same()."""
    return tuple((value.mode, torch.from_numpy(np.asarray(value).copy()))
                 if type(value).__module__.startswith("PIL.") else value for value in sample)


def test_samples_a_user_takes_are_the_torchvision_datasets_own(folder):
    """Where a user's code takes samples of a torchvision ImageFolder read natively
    (batch_size=None, a collate_fn), they are its __getitem__'s: the label a Python int, the
    image a PIL image where the dataset has no transform."""
    datasets = pytest.importorskip("torchvision.datasets")
    import PIL.Image
    import torchvision.transforms as T

    recipe = T.Compose([T.Resize(8), T.CenterCrop(8), T.PILToTensor()])  # native, exact
    floats = T.Compose([T.Resize(8), T.CenterCrop(8), T.ToTensor(),  # native, bit for bit
                        T.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])])
    for transform in (recipe, floats, None):
        dataset = datasets.ImageFolder(folder, transform=transform)
        kinds = (torch.Tensor if transform else PIL.Image.Image, int)
        for options in (dict(batch_size=None), dict(batch_size=4, collate_fn=list)):
            def samples(loader):
                return list(loader) if options["batch_size"] is None else \
                    [sample for batch in loader for sample in batch]

            loader = stoker.Loader(dataset, **options)
            assert "read natively" in loader.plan["notes"]["dataset"][0]
            ours = samples(loader)
            theirs = samples(DataLoader(dataset, **options))
            assert len(ours) == len(theirs) == len(dataset)
            for a, b in zip(ours, theirs):
                assert isinstance(a[0], kinds[0]) and type(a[1]) is kinds[1]
                same(as_pixels(a), as_pixels(b))


class TwoCrops:
    """MoCo's TwoCropsTransform (moco/loader.py): two views of one image, a list."""

    def __init__(self, base):
        self.base = base

    def __call__(self, x):
        return [self.base(x), self.base(x)]


class Rotated:
    """A user's transform on the PIL API, then to_tensor."""

    def __call__(self, image):
        import torchvision.transforms.functional as F
        return F.to_tensor(image.rotate(10))


@pytest.mark.parametrize("batch_size", [1, 2])
def test_a_torchvision_transform_of_varying_sizes_is_collated_as_dataloader_does(folder,
                                                                                batch_size):
    """Images of the folder's own aspect ratios (Resize of the shorter side): DataLoader's
    default_collate stacks a batch of one, and refuses a batch whose sizes differ."""
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder

    dataset = ImageFolder(folder, transform=T.Compose([T.Resize(16, max_size=20),
                                                       T.PILToTensor()]))
    loader = stoker.Loader(dataset, batch_size=batch_size)
    assert "read natively" in loader.plan["notes"]["dataset"][0]
    theirs, ours = iter(DataLoader(dataset, batch_size=batch_size)), iter(loader)
    while True:
        try:
            want = next(theirs)
        except StopIteration:
            with pytest.raises(StopIteration):
                next(ours)
            break
        except RuntimeError as error:
            with pytest.raises(RuntimeError) as raised:
                next(ours)
            assert str(raised.value) == str(error)
            continue
        same(next(ours), want)


def test_untranslated_steps_of_a_torchvision_dataset_run_as_in_its_getitem(folder):
    """A torchvision ImageFolder whose transform stoker cannot translate: the untranslated
    steps get what torchvision gives them (a PIL image until a step makes a tensor of it, the
    label an int) and may give anything; the batches are DataLoader's, default_collate's of
    them (or what a collate_fn makes of the samples), with Python workers too."""
    datasets = pytest.importorskip("torchvision.datasets")
    import torchvision.transforms as T

    crop = [T.Resize(16), T.CenterCrop(16)]  # native, on torchvision's PIL backend
    cases = {  # {name: (transform, target_transform, picklable)}
        "two views": (TwoCrops(T.Compose(crop + [T.ToTensor()])), None, True),
        "PIL API after a native crop": (T.Compose(crop + [Rotated()]), None, True),
        "numpy": (T.Compose(crop + [np.asarray]), None, True),
        "dict after a tensor": (T.Compose(crop + [T.PILToTensor(), lambda x: {"pix": x}]),
                                None, False),
        "float label": (T.Compose(crop + [T.PILToTensor()]), float, True),
        "str label": (T.Compose(crop + [T.PILToTensor()]), lambda y: f"class{y}", False),
    }
    runs = [dict(batch_size=4), dict(batch_size=None), dict(batch_size=4, collate_fn=list)]
    for name, (transform, target_transform, picklable) in cases.items():
        dataset = datasets.ImageFolder(folder, transform, target_transform)
        for options in runs + [dict(batch_size=4, num_workers=2)] * picklable:
            loader = stoker.Loader(dataset, **options)
            if name == "two views":  # none of it native: the dataset's own __getitem__
                assert "runs its own __getitem__" in loader.plan["notes"]["dataset"][0]
            else:  # the crop natively, what follows in Python
                assert "read natively" in loader.plan["notes"]["dataset"][0], name
                assert [where for _, where in loader.plan["image"]][0] == "native", name
            batches = list(loader)
            assert len(batches) == len(loader), name
            for ours, theirs in zip(batches, DataLoader(dataset, **options), strict=True):
                same(ours, theirs)
    native = stoker.Loader(datasets.ImageFolder(folder, T.Compose(crop + [T.ToTensor()])),
                           batch_size=4)
    assert all(where == "native" for _, where in native.plan["image"])
    assert "collate_fn" not in native.plan  # the native batch as it is built


def test_a_torchvision_transform_none_of_which_is_native_takes_images_of_any_size(tmp_path):
    # MoCo's loader: two views of ImageNet's images, some far over a native decode's bound.
    datasets = pytest.importorskip("torchvision.datasets")
    import torchvision.transforms as T
    from PIL import Image

    for k, size in enumerate([(1500, 1100), (300, 200)]):
        (tmp_path / "c").mkdir(exist_ok=True)
        Image.new("RGB", size, (k * 90, 40, 200)).save(tmp_path / "c" / f"{k}.jpg")
    dataset = datasets.ImageFolder(tmp_path, TwoCrops(T.Compose([T.Resize(16),
                                                                  T.CenterCrop(16),
                                                                  T.ToTensor()])))
    for ours, theirs in zip(stoker.Loader(dataset, batch_size=2),
                            DataLoader(dataset, batch_size=2), strict=True):
        same(ours, theirs)


def test_native_len_and_sampler_are_dataloaders(labelled):
    loader = stoker.Loader(labelled, batch_size=10, shuffle=True)
    assert len(loader) == -(-RECORDS // 10)
    order = list(loader.sampler)
    assert sorted(order) == list(range(RECORDS))
    assert [int(i) for _, labels in loader for i in labels] == order


def test_lightning_tells_shuffled_loaders_as_it_tells_dataloaders(labelled):
    data = pytest.importorskip("lightning.pytorch.utilities.data")
    for shuffle in (False, True):
        assert data._is_dataloader_shuffled(stoker.Loader(labelled, shuffle=shuffle)) is \
            data._is_dataloader_shuffled(DataLoader(Squares(), shuffle=shuffle)) is shuffle


def set_loader_epoch(loader, epoch):
    """How timm's train.py and the references set a loader's epoch: through its sampler (or its
    batch sampler's) where that has set_epoch."""
    sampler = loader.batch_sampler.sampler if loader.batch_sampler is not None else \
        loader.sampler
    if hasattr(sampler, "set_epoch"):
        sampler.set_epoch(epoch)


def test_a_scripts_set_epoch_through_the_sampler_sets_the_order(labelled):
    loader = stoker.Loader(labelled, batch_size=100, shuffle=True)
    reference = stoker.Loader(labelled, batch_size=100, shuffle=True)
    for epoch in (3, 4):
        set_loader_epoch(loader, epoch)
        assert [b[1].tolist() for b in loader] == [b[1].tolist()
                                                   for b in reference.epoch(epoch)]


def test_a_loader_dropped_frees_its_engine_at_once(labelled):
    """No cycle through loader.sampler: the native core (its threads, downloads) goes with the
    last reference, not at some later garbage collection."""
    import gc
    import weakref

    loader = stoker.Loader(labelled, batch_size=8, shuffle=True)
    next(iter(loader))
    engine = weakref.ref(loader._engine)
    gc.disable()
    try:
        del loader
        assert engine() is None
    finally:
        gc.enable()


# A user's sampler over native data: an explicit epoch ------------------------------------


def labels_of(loader):
    return [int(i) for _, labels in loader for i in labels]


def test_a_distributed_sampler_over_native_data_is_honoured(labelled):
    sampler = DistributedSampler(range(RECORDS), num_replicas=3, rank=2, shuffle=True, seed=1)
    loader = stoker.Loader(labelled, batch_size=16, sampler=sampler)
    assert loader.sampler is sampler and loader.batch_sampler.sampler is sampler
    assert len(loader) == len(DataLoader(range(RECORDS), batch_size=16, sampler=sampler))
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        assert labels_of(loader) == list(sampler)


def test_a_batch_sampler_over_native_data_gives_its_batches(labelled):
    batches = [[5, 1], [1000, 3, 3], [7]]
    loader = stoker.Loader(labelled, batch_sampler=batches)
    assert [labels.tolist() for _, labels in loader] == batches
    assert loader.batch_sampler is batches and loader.batch_size is None


def outcomes(loader, most=8):
    """What a skip-bad-batch loop sees: each batch's labels, or the exception's type name."""
    iterator, seen = iter(loader), []
    while len(seen) < most:
        try:
            seen.append(next(iterator)[1].tolist())
        except StopIteration:
            break
        except Exception as e:  # noqa: BLE001 (the loop's own)
            seen.append(type(e).__name__)
    return seen


def test_a_sampler_index_out_of_range_on_native_data_fails_its_batch_alone(folder):
    """As DataLoader over torchvision's ImageFolder: the batches around it come, the bad one
    raises IndexError (one line naming the index and the dataset's length), and a negative
    index counts from the end, as a list's."""
    datasets = pytest.importorskip("torchvision.datasets")
    import torchvision.transforms as T

    dataset = datasets.ImageFolder(folder, transform=T.Compose([T.Resize(8), T.CenterCrop(8),
                                                                T.ToTensor()]))
    sampler = [0, 1, 2, 3, 50, 5, 6, -1, 8, 9, 99]
    want = outcomes(DataLoader(dataset, batch_size=3, sampler=sampler))
    assert want == [[0, 0, 0], "IndexError", [0, 2, 1], "IndexError"]
    loader = stoker.Loader(dataset, batch_size=3, sampler=sampler)
    assert all(where == "native" for _, where in loader.plan["image"])
    assert outcomes(loader) == want
    with pytest.raises(IndexError, match=r"^the sampler's batch 1 holds index 50, outside the "
                                         r"dataset's 23 samples$"):
        list(stoker.Loader(dataset, batch_size=3, sampler=sampler))
    # Resumed after the first batch: the bad one comes next, then the rest.
    first = stoker.Loader(dataset, batch_size=3, sampler=sampler)
    next(iter(first))
    second = stoker.Loader(dataset, batch_size=3, sampler=sampler)
    second.load_state_dict(first.state_dict())
    assert outcomes(second) == want[1:]


def test_resume_with_a_sampler_over_native_data(labelled):
    sampler = list(range(0, RECORDS, 7))
    whole = [labels.tolist() for _, labels in stoker.Loader(labelled, batch_size=8,
                                                            sampler=sampler)]
    first = stoker.Loader(labelled, batch_size=8, sampler=sampler, feed=stoker.Feed(workers=2))
    iterator = iter(first)
    head = [next(iterator)[1].tolist() for _ in range(4)]
    second = stoker.Loader(labelled, batch_size=8, sampler=sampler)
    second.load_state_dict(first.state_dict())
    assert head + [labels.tolist() for _, labels in second] == whole
    with pytest.raises(ValueError, match="state_dict\\['order'\\] is 'stoker'"):
        second.load_state_dict(stoker.Loader(labelled, batch_size=8).state_dict())


def test_repeated_indices_draw_their_own_augmentations(folder):
    crop = stoker.transforms.Compose([stoker.transforms.RandomResizedCrop(16),
                                      stoker.transforms.ToTensor()])
    images, _ = next(iter(stoker.Loader(stoker.ImageFolder(folder, transform=crop),
                                        batch_size=3, sampler=[0, 0, 0])))
    assert not torch.equal(images[0], images[1]) and not torch.equal(images[1], images[2])


def test_the_references_mixup_collate_fn_and_a_batch_mixup_take_the_default_batches(labelled):
    """The classification reference's collate_fn, `mixup_cutmix(*default_collate(batch))`, and
    a batch transform written as `forward(images, labels)`, each on [image, label] batches."""
    def mixup(images, labels):  # the reference's v1 RandomMixup's signature
        return images.float().roll(1, 0) * 0.5 + images * 0.5, labels.roll(1, 0)

    images, labels = next(iter(stoker.Loader(
        labelled, batch_size=4, collate_fn=lambda batch: mixup(*default_collate(batch)))))
    assert labels.tolist() == [3, 0, 1, 2] and images.dtype == torch.float32
    mixed, labels = next(iter(stoker.Loader(labelled, batch_size=4,
                                            batches=stoker.Batches(batch_transform=mixup))))
    assert labels.tolist() == [3, 0, 1, 2] and torch.equal(mixed, images)


def test_a_batch_transform_that_fails_names_the_batch_it_was_given(labelled):
    def wants_a_dict(batch):
        return batch["image"]

    with pytest.raises(stoker.Error, match=r"raised TypeError: .*, given its fields as arguments "
                                           r"\(uint8 \[4, 1, 4, 4\], int64 \[4\]\) \(another "
                                           r"form: stoker.Batches\(batch_format=...\)\)"):
        next(iter(stoker.Loader(labelled, batch_size=4,
                                batches=stoker.Batches(batch_transform=wants_a_dict))))


# Detection as the references run it -------------------------------------------------------


def references_collate(batch):
    """The detection references' collate_fn (utils.collate_fn)."""
    return tuple(zip(*batch))


def test_native_detection_batches_come_in_the_references_shape(coco_dataset):
    import torchvision.transforms.v2 as v2

    preset = v2.Compose([v2.ToImage(), v2.RandomHorizontalFlip(0.5),
                         v2.ToDtype(torch.float32, scale=True)])
    loader = stoker.Loader(stoker.Dataset(coco_dataset, transforms=preset), batch_size=4,
                           collate_fn=references_collate)
    images, targets = next(iter(loader))
    assert len(images) == len(targets) == 4
    for image, target in zip(images, targets):
        assert image.ndim == 3 and target["boxes"].shape[-1] == 4
        assert len(target["labels"]) == len(target["boxes"])


def wrapped_coco(coco_set, transforms, **wrap):
    """torchvision's CocoDetection over `coco_set`, wrapped for v2 as the references wrap it."""
    datasets = pytest.importorskip("torchvision.datasets")
    return datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(
        coco_set / "images", coco_set / "annotations" / "instances.json",
        transforms=transforms), **wrap)


def with_objects(dataset):
    """The references' training set: the images with annotations (a Subset)."""
    return torch.utils.data.Subset(dataset, [i for i, image_id in enumerate(dataset.ids)
                                             if dataset.coco.getAnnIds(imgIds=image_id)])


def test_torchvisions_coco_detection_runs_the_references_loop_and_evaluate(
        coco_set, tmp_path, monkeypatch):
    """CocoDetection wrapped for v2 is read natively; the references' collate, then COCOeval
    through loader.dataset (as evaluate() reaches the annotations): the batches are
    DataLoader's, images without annotations as the wrapper gives them."""
    cocoeval = pytest.importorskip("pycocotools.cocoeval")
    import torchvision.transforms.v2 as v2

    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    dataset = wrapped_coco(coco_set, v2.Compose([v2.ToImage(),
                                                 v2.ToDtype(torch.float32, scale=True)]),
                           target_keys=["boxes", "labels", "image_id"])
    loader = stoker.Loader(dataset, batch_size=4, num_workers=2, collate_fn=references_collate)
    assert "read natively" in loader.plan["notes"]["dataset"][0]
    assert [step for step in loader.plan["image"] if step[1] != "native"] == []
    theirs = DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=references_collate)
    detections = []
    for (images, targets), (want_images, want_targets) in zip(loader, theirs, strict=True):
        same(list(images), list(want_images))
        same(list(targets), list(want_targets))
        for target in targets:  # the ground truth as detections: evaluate() must give AP 1
            if "boxes" not in target:  # an image without annotations
                continue
            for box, label in zip(target["boxes"].tolist(), target["labels"].tolist()):
                x0, y0, x1, y1 = box
                detections.append({"image_id": int(target["image_id"]), "category_id": label,
                                   "bbox": [x0, y0, x1 - x0, y1 - y0], "score": 1.0})
    coco = loader.dataset.coco  # the user's own dataset object
    evaluation = cocoeval.COCOeval(coco, coco.loadRes(detections), "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    assert evaluation.stats[0] > 0.99


def reference_presets():
    """The v2 detection reference's default train preset (hflip, on PIL images) and its eval
    preset, the flip certain (p=1) so that DataLoader's draws and stoker's agree without a
    shared seed (the native steps' own tests share the draws)."""
    v2 = pytest.importorskip("torchvision.transforms.v2")
    return {
        "hflip": v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.PILToTensor(),
                             v2.ToDtype(torch.float32, scale=True), v2.SanitizeBoundingBoxes(),
                             v2.ToPureTensor()]),
        "eval": v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                            v2.ToPureTensor()]),
    }


@pytest.mark.parametrize("preset", ["hflip", "eval"])
def test_the_detection_references_training_set_is_read_natively_as_dataloader_reads_it(
        coco_set, tmp_path, monkeypatch, preset):
    """The references' get_coco(train): wrapped, the images without annotations dropped (a
    Subset), a preset; batches from a batch sampler (as GroupedBatchSampler gives them) equal
    DataLoader's, with no step in Python."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    dataset = with_objects(wrapped_coco(coco_set, reference_presets()[preset]))
    batches = [[5, 0, 9], [1, 2], [20, 3, 7, 4], [8]]
    loader = stoker.Loader(dataset, batch_sampler=batches, collate_fn=references_collate)
    assert [step for step in loader.plan["image"] if step[1] != "native"] == []
    theirs = DataLoader(dataset, batch_sampler=batches, collate_fn=references_collate)
    for ours, want in zip(loader, theirs, strict=True):
        same(ours, want)


def test_coco_detection_one_sample_at_a_time_and_default_collate_are_dataloaders(
        coco_set, tmp_path, monkeypatch):
    import torchvision.transforms.v2 as v2

    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    dataset = wrapped_coco(coco_set, v2.Compose([v2.ToImage()]))
    for kwargs in ({"batch_size": None}, {"batch_size": 1}):
        loader = stoker.Loader(dataset, **kwargs)
        assert "read natively" in loader.plan["notes"]["dataset"][0]
        for ours, want in zip(loader, DataLoader(dataset, **kwargs), strict=True):
            same(ours, want)


def test_coco_detection_stoker_cannot_read_is_read_by_its_own_getitem(
        coco_set, tmp_path, monkeypatch):
    """Masks, a PIL image left by the transforms, separate transform/target_transform: the
    dataset's own __getitem__ (the Python route), still DataLoader's batches."""
    import torchvision.transforms.v2 as v2

    monkeypatch.setenv("STOKER_CACHE", str(tmp_path))
    datasets = pytest.importorskip("torchvision.datasets")
    for dataset in (
            wrapped_coco(coco_set, v2.ToImage(), target_keys=["boxes", "labels", "masks"]),
            wrapped_coco(coco_set, None),
            datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(
                coco_set / "images", coco_set / "annotations" / "instances.json",
                transform=v2.ToImage()))):
        loader = stoker.Loader(dataset, batch_size=3, collate_fn=references_collate)
        assert loader.plan["dataset"][0][1] == "python"
        want = next(iter(DataLoader(dataset, batch_size=3, collate_fn=references_collate)))
        same(next(iter(loader)), want)


# webdataset's pipelines, read natively -----------------------------------------------------


@pytest.fixture
def tars(folder, tmp_path, monkeypatch):
    from test_webdataset_source import write_tars

    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))
    return write_tars(folder, tmp_path / "tars")


def test_a_webdataset_pipeline_is_read_natively_as_dataloader_reads_it(tars):
    """decode("pil").to_tuple(image, "cls").map_tuple(transform): stoker.WebDataset's samples,
    in the tars' order, DataLoader's batches (its num_workers=0 order)."""
    wds = pytest.importorskip("webdataset")
    import torchvision.transforms.v2 as v2

    recipe = v2.Compose([v2.CenterCrop(8), v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
    for dataset in (
            wds.WebDataset(tars, shardshuffle=False).decode("pil").to_tuple("jpg;png", "cls")
            .map_tuple(recipe),
            wds.WebDataset(tars, shardshuffle=False, empty_check=False).decode("pil")
            .to_tuple("jpg;png", "cls").map_tuple(recipe, lambda label: label)):
        loader = stoker.Loader(dataset, batch_size=4)
        assert "read natively" in loader.plan["notes"]["dataset"][0]
        want = list(DataLoader(dataset, batch_size=4))
        got = list(loader)
        assert len(got) == len(want) == 6
        for ours, theirs in zip(got, want):
            same(ours, theirs)


def test_a_webdataset_pipeline_stoker_cannot_read_is_iterated_by_the_library(tars):
    """A sample shuffle, a decode to numpy, a stage of the user's own: the library's pipeline
    runs (the Python route), its samples as DataLoader gives them."""
    wds = pytest.importorskip("webdataset")
    import torchvision.transforms.v2 as v2

    recipe = v2.Compose([v2.CenterCrop(8), v2.PILToTensor()])
    for dataset in (
            wds.WebDataset(tars, shardshuffle=False).shuffle(0).decode("rgb8")
            .to_tuple("jpg;png", "cls").map_tuple(lambda image: image[:8, :8]),
            wds.WebDataset(tars, shardshuffle=False).decode("pil").map(lambda s: s)
            .to_tuple("jpg;png", "cls").map_tuple(recipe)):
        loader = stoker.Loader(dataset, batch_size=4)
        assert loader.plan["dataset"][0][1] == "python"
        for ours, theirs in zip(loader, DataLoader(dataset, batch_size=4), strict=True):
            same(ours, theirs)


# torchvision's in-memory datasets, read natively -------------------------------------------


@pytest.fixture
def fashion_mnist(tmp_path, monkeypatch):
    """torchvision's FashionMNIST (its test split, 10,000 images) over Debian's
    dataset-fashion-mnist files, the arrays cache in tmp_path."""
    import gzip
    import shutil

    datasets = pytest.importorskip("torchvision.datasets")
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        source = f"/usr/share/datasets/fashion-mnist/{name}.gz"
        with gzip.open(source) as packed, open(raw / name, "wb") as out:
            shutil.copyfileobj(packed, out)
    return lambda **kwargs: datasets.FashionMNIST(tmp_path, train=False, **kwargs)


def test_torchvisions_fashion_mnist_is_read_natively_with_its_tensors(fashion_mnist):
    """Its pixels exactly (PILToTensor), and ToTensor + Normalize's float32 values bit for bit
    (torchvision's divisions, each rounded)."""
    import torchvision.transforms as T

    pixels = fashion_mnist(transform=T.PILToTensor())
    loader = stoker.Loader(pixels, batch_size=500)
    assert loader.dataset is pixels
    assert "read natively" in loader.plan["notes"]["dataset"][0]
    batches = 0
    for a, b in zip(loader, DataLoader(pixels, batch_size=500)):
        same(a, b)
        batches += 1
    assert batches == len(loader) == 20
    normalised = fashion_mnist(transform=T.Compose([T.ToTensor(),
                                                    T.Normalize((0.286,), (0.353,))]))
    loader = stoker.Loader(normalised, batch_size=500)
    assert all(where == "native" for _, where in loader.plan["image"])
    for (a, label), (b, want) in zip(loader, DataLoader(normalised, batch_size=500)):
        assert torch.equal(a, b)
        assert torch.equal(label, want)


def test_a_v2_normalize_broadcasting_a_grey_image_to_three_channels_is_dataloaders(
        fashion_mnist):
    """torchvision v2's Normalize with three means on a 1-channel image broadcasts it to three
    channels: the native steps before it, it in Python, DataLoader's batches bit for bit (v1's
    fails on such images, as in DataLoader)."""
    import torchvision.transforms.v2 as v2

    dataset = fashion_mnist(transform=v2.Compose([
        v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
        v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]))
    loader = stoker.Loader(dataset, batch_size=500)
    assert [where for _, where in loader.plan["image"]] == ["native", "python"]
    assert "Normalize has 3 means for images of 1 channel" in loader.plan["notes"]["image"][0]
    for (a, label), (b, want) in zip(loader, DataLoader(dataset, batch_size=500)):
        assert a.shape == b.shape == (500, 3, 28, 28) and torch.equal(a, b)
        assert torch.equal(label, want)


def test_an_in_memory_dataset_is_kept_once(fashion_mnist, tmp_path):
    first = stoker.Loader(fashion_mnist(), batch_size=8)
    kept = sorted((tmp_path / "cache" / "arrays").iterdir())
    assert len(kept) == 1 and (kept[0] / "manifest.json").exists()
    second = stoker.Loader(fashion_mnist(), batch_size=8)
    assert sorted((tmp_path / "cache" / "arrays").iterdir()) == kept
    same(next(iter(first)), next(iter(second)))


def test_torchvisions_cifar10_is_read_natively_with_its_pixels(tmp_path, monkeypatch):
    """A CIFAR-10 folder written here in its pickled layout (a subclass skips the checksums of
    the real files, nothing else): its pixels exactly, the classic recipe all native."""
    datasets = pytest.importorskip("torchvision.datasets")
    import torchvision.transforms as T

    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {"data": rng.integers(0, 256, (20, 3072), dtype=np.uint8),
                 "labels": rng.integers(0, 10, 20).tolist()}
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(pickle.dumps(
        {"label_names": [f"class{i}" for i in range(10)]}))

    class Cifar(datasets.CIFAR10):
        meta = dict(datasets.CIFAR10.meta, md5=None)  # no checksum: any file passes

        def _check_integrity(self):
            return True

    pixels = Cifar(tmp_path, train=True, transform=T.PILToTensor())
    for a, b in zip(stoker.Loader(pixels, batch_size=16), DataLoader(pixels, batch_size=16)):
        same(a, b)
    recipe = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                        T.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
    loader = stoker.Loader(Cifar(tmp_path, train=True, transform=recipe), batch_size=16,
                           shuffle=True)
    assert all(where == "native" for _, where in loader.plan["image"])
    images, labels = next(iter(loader))
    assert images.shape == (16, 3, 32, 32) and images.dtype == torch.float32


def test_encoded_images_without_a_transform_come_at_their_own_sizes(images):
    """As a dataset without a transform gives its images: decoded, each its own size."""
    path, _ = images
    loader = stoker.Loader(path, batch_size=4, batches=stoker.Batches(batch_format="dict"))
    batch = next(iter(loader))
    shapes = {tuple(image.shape) for image in batch["image"]}
    assert len(shapes) > 1 and all(shape[0] == 3 for shape in shapes)
    assert all(image.dtype == torch.uint8 for image in batch["image"])


def test_a_subset_of_a_native_dataset_is_read_natively(fashion_mnist):
    """random_split's Subsets of a recognised dataset: native, DataLoader's batches in order,
    the sampler's positions when shuffled."""
    import torchvision.transforms as T

    dataset = fashion_mnist(transform=T.PILToTensor())
    train, val = torch.utils.data.random_split(dataset, [0.9, 0.1],
                                               generator=torch.Generator().manual_seed(0))
    loader = stoker.Loader(val, batch_size=64)
    assert "a Subset of 1000" in loader.plan["notes"]["dataset"][-1]
    for a, b in zip(loader, DataLoader(val, batch_size=64)):
        same(a, b)
    shuffled = stoker.Loader(train, batch_size=100, shuffle=True)
    positions = list(shuffled.sampler)
    assert sorted(positions) == list(range(9000))
    targets = dataset.targets
    assert labels_of(shuffled) == [int(targets[train.indices[p]]) for p in positions]
    assert len(shuffled) == 90


def pin_memory_warning():
    """DataLoader's warning for pin_memory=True where no accelerator is; none where one is."""
    if torch.cuda.is_available():
        return contextlib.nullcontext()
    return pytest.warns(UserWarning, match="pin_memory")


def test_the_classification_references_loaders_run_as_written(folder):
    """The classification reference's data loading, with its DataLoader lines' arguments as
    written (samplers, workers, pin_memory, the MixUp/CutMix collate_fn): native, every
    sample once an epoch, its evaluate() reading len(data_loader.dataset)."""
    datasets = pytest.importorskip("torchvision.datasets")
    import torchvision.transforms.v2 as v2

    train = v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip(0.5), v2.PILToTensor(),
                        v2.ToDtype(torch.float, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])
    dataset = datasets.ImageFolder(folder, train)
    dataset_test = datasets.ImageFolder(folder, v2.Compose([
        v2.Resize(20), v2.CenterCrop(16), v2.PILToTensor(), v2.ToDtype(torch.float, scale=True)]))
    mixupcutmix = v2.RandomChoice([v2.MixUp(num_classes=3), v2.CutMix(num_classes=3)])
    with pin_memory_warning():
        data_loader = stoker.Loader(dataset, batch_size=4, sampler=RandomSampler(dataset),
                                    num_workers=2, pin_memory=True,
                                    collate_fn=lambda batch: mixupcutmix(*default_collate(batch)))
    with pin_memory_warning():
        data_loader_test = stoker.Loader(dataset_test, batch_size=4,
                                         sampler=SequentialSampler(dataset_test), num_workers=2,
                                         pin_memory=True)
    assert all(where == "native" for _, where in data_loader.plan["image"])
    seen = 0
    for image, target in data_loader:
        assert image.shape[1:] == (3, 16, 16) and target.shape[1:] == (3,)  # soft labels
        seen += len(image)
    assert seen == len(dataset)
    labels = [int(t) for _, target in data_loader_test for t in target]
    assert labels == [c for _, c in dataset_test.samples] and \
        len(data_loader_test.dataset) == len(labels)


class Hanging(Squares):
    def __getitem__(self, i):
        if i == 2:
            __import__("time").sleep(60)
        return i


def test_a_hung_getitem_fails_at_the_timeout_in_one_line():
    loader = stoker.Loader(Hanging(), batch_size=4, num_workers=1, timeout=1)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 1 seconds$"):
        next(iter(loader))
