"""stoker.Loader over a Python dataset (its __getitem__ in DataLoader's workers) as DataLoader
runs it, each compared with torch's DataLoader: what workers see, start methods, batched
fetches, the keys a sampler gives, copies of the loader and failing samples."""

import copy
import itertools
import multiprocessing
import pickle

import pytest
import torch
from torch.utils.data import DataLoader

import stoker
from map_datasets import (Batched, ById, CorruptRecord, Numbers, Unsized,
                          WorkerHandle, open_handle, refuse_odd_firsts)


def batches(loader):
    return [batch.tolist() for batch in loader]


def test_worker_init_fn_and_getitem_see_the_users_dataset_as_dataloader_does():
    def run(kind):
        return [(indices.tolist(), handles, names) for indices, handles, names in
                kind(WorkerHandle(8), batch_size=4, num_workers=2, worker_init_fn=open_handle)]

    ours, theirs = run(stoker.Loader), run(DataLoader)
    assert ours == theirs
    assert ours[0][1:] == (("handle-0",) * 4, ("WorkerHandle",) * 4)


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_spawned_and_forkserver_workers_start_for_a_picklable_dataset(context):
    def run(kind):
        return batches(kind(Numbers(), batch_size=3, num_workers=2,
                            multiprocessing_context=context))

    assert run(stoker.Loader) == run(DataLoader) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_spawn_as_the_global_start_method_starts_the_workers():
    method = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        def run(kind):
            return batches(kind(Numbers(), batch_size=4, num_workers=2))

        assert run(stoker.Loader) == run(DataLoader)
    finally:
        multiprocessing.set_start_method(method, force=True)


def fetched(loader):
    """Each batch's (how fetched, indices, the indices asked for together) of Batched."""
    return [(kinds, indices.tolist(), [list(map(int, asked)) for asked in zip(*together)])
            for kinds, indices, together, _ in loader]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_getitems_is_called_once_per_batch_as_dataloader_calls_it(num_workers):
    def run(kind):
        return fetched(kind(Batched(7), batch_size=3, num_workers=num_workers))

    assert run(stoker.Loader) == run(DataLoader)
    assert run(stoker.Loader)[0] == (("batched",) * 3, [0, 1, 2], [[0, 1, 2]] * 3)


def test_getitems_draws_are_seeded_per_batch_whatever_the_workers():
    def draws(num_workers):
        loader = stoker.Loader(Batched(7), batch_size=3, shuffle=True, num_workers=num_workers)
        return [draw.tolist() for *_, draw in loader]

    once = draws(0)
    assert once == draws(2) and all(len(set(batch)) == 1 for batch in once)


@pytest.mark.parametrize("dataset, sampler", [
    (Unsized(), [0, 1, 2]), (ById(), [100, 205, 317]), (Numbers(5), [-1, -2, 7])])
def test_the_samplers_keys_go_to_the_dataset_as_dataloader_passes_them(dataset, sampler):
    def run(kind):
        return batches(kind(dataset, batch_size=2, sampler=sampler))

    assert run(stoker.Loader) == run(DataLoader)
    resumed = stoker.Loader(dataset, batch_size=2, sampler=sampler)
    resumed.load_state_dict(stoker.Loader(dataset, batch_size=2, sampler=sampler).state_dict())
    assert batches(resumed) == run(DataLoader)


def test_stokers_own_order_of_a_dataset_without_len_is_refused_in_one_line():
    with pytest.raises(TypeError, match=r"^a Unsized has no __len__, which stoker's own order "
                       r"needs: give it one, or pass a sampler \(or batch_sampler\)$"):
        iter(stoker.Loader(Unsized(), batch_size=2))


@pytest.mark.parametrize("copied", [copy.deepcopy, lambda x: pickle.loads(pickle.dumps(x))],
                         ids=["deepcopy", "pickle"])
def test_a_loader_is_copied_and_pickled_as_a_dataloader_is(copied):
    theirs = DataLoader(Numbers(9), batch_size=2, num_workers=2)
    assert batches(copied(theirs)) == batches(theirs)
    loader = stoker.Loader(Numbers(9), batch_size=2, shuffle=True, num_workers=2,
                           order=stoker.Order(seed=3))
    iterator = iter(loader)
    first = next(iterator).tolist()
    copy_ = copied(loader)
    rest = batches(iterator)
    assert copy_.dataset is not loader.dataset and copy_.sampler._loader is copy_
    assert batches(copy_) == [first] + rest  # from where the loader was: epoch 0's start
    assert batches(copy_) == batches(loader)  # epoch 1, as the loader's


def test_a_loader_over_native_data_refuses_a_copy_in_one_line(labelled):
    with pytest.raises(TypeError, match=r"^a stoker.Loader over data stoker reads natively "
                       r"cannot be pickled or copied \(its native reader is live state\)"):
        copy.deepcopy(stoker.Loader(labelled, batch_size=4))


def skipping(loader):
    """A skip-bad-batch loop over one iterator: each batch, or the type and message of what it
    raised instead."""
    iterator, out = iter(loader), []
    while True:
        try:
            out.append(next(iterator).tolist())
        except StopIteration:
            return out
        except Exception as error:  # noqa: BLE001 (the test looks at what it is)
            out.append((type(error), str(error)))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_failing_sample_raises_its_own_type_and_the_iterator_goes_on(num_workers):
    def run(kind, **batched):
        return skipping(kind(CorruptRecord(8), num_workers=num_workers, **batched))

    ours, theirs = run(stoker.Loader, batch_size=2), run(DataLoader, batch_size=2)
    assert [b for b in ours if isinstance(b, list)] == [b for b in theirs if isinstance(b, list)]
    # DataLoader: KeyError, then TwoPartError (RuntimeError from workers: it cannot make one)
    assert [b[0] for b in theirs if isinstance(b, tuple)][0] is KeyError
    failed = [b for b in ours if isinstance(b, tuple)]
    assert issubclass(failed[0][0], KeyError) and issubclass(failed[0][0], stoker.SampleError)
    assert failed[0][1] == "epoch 0, batch 1: CorruptRecord[2] raised KeyError: 'corrupt record 2'"
    assert failed[1] == (stoker.SampleError, "epoch 0, batch 2: CorruptRecord[5] raised "
                         "TwoPartError: bad record 5")
    unbatched = run(stoker.Loader, batch_size=None)
    assert [b for b in unbatched if isinstance(b, int)] == [0, 1, 3, 4, 6, 7]
    assert issubclass(unbatched[2][0], KeyError)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_failing_collate_fn_raises_its_own_type_and_the_iterator_goes_on(num_workers):
    def run(kind):
        return skipping(kind(Numbers(7), batch_size=2, sampler=[0, 1, 3, 4, 2, 5, 6],
                             collate_fn=refuse_odd_firsts, num_workers=num_workers))

    ours, theirs = run(stoker.Loader), run(DataLoader)
    assert [b for b in ours if isinstance(b, list)] == [b for b in theirs if isinstance(b, list)]
    kind, message = ours[1]
    assert issubclass(kind, ValueError) and issubclass(kind, stoker.SampleError)
    assert message == "epoch 0, batch 1: refuse_odd_firsts on 2 samples raised ValueError: " \
        "odd first sample 3"


class Endless(torch.utils.data.Sampler):
    """detectron2's TrainingSampler's way: indices for ever; counts those drawn."""

    def __init__(self, size):
        self.size, self.drawn = size, 0

    def __iter__(self):
        for k in itertools.count():
            self.drawn += 1
            yield k % self.size


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_endless_sampler_is_drawn_as_dataloader_draws_it(num_workers):
    def first(loader_class):
        sampler = Endless(10)
        loader = loader_class(Numbers(10), batch_size=4, sampler=sampler,
                              num_workers=num_workers)
        batches = [batch.tolist() for batch in itertools.islice(loader, 3)]
        return batches, sampler.drawn

    (ours, drawn), (theirs, _) = first(stoker.Loader), first(DataLoader)
    assert ours == theirs
    assert drawn < 100  # drawn as the batches are asked for, not the whole epoch first
    with pytest.raises(TypeError):
        len(stoker.Loader(Numbers(10), batch_size=4, sampler=Endless(10)))


def test_a_state_of_the_other_shuffle_is_refused_naming_it():
    shuffled = stoker.Loader(Numbers(10), batch_size=2, shuffle=True)
    iterator = iter(shuffled)
    next(iterator)
    state = shuffled.state_dict()
    plain = stoker.Loader(Numbers(10), batch_size=2, shuffle=False)
    with pytest.raises(ValueError, match="state_dict\\['shuffle'\\] is True; this loader's "
                                         "shuffle is False"):
        plain.load_state_dict(state)
    assert [b.tolist() for b in plain][0] == [0, 1]  # usable after the refusal
    again = stoker.Loader(Numbers(10), batch_size=2, shuffle=True)
    again.load_state_dict(state)
    assert sum(len(b) for b in again) == 8  # the epoch's rest
