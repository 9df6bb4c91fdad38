"""stoker.Order(aspect_ratio_groups=k) on the converted COCO-shaped set: each rank's batches are
those torchvision's detection reference makes (create_aspect_ratio_groups from COCO's image
sizes, GroupedBatchSampler over the sampler's indices), given stoker's order as the sampler;
``loader.batch_sampler`` gives them too; a state_dict resumes them mid-epoch; settings it cannot
honour are one line."""

import bisect
import json
from collections import OrderedDict

import numpy as np
import pytest
import torch

import stoker

from coco_sets import annotations_of

BATCH = 3


def reference_groups(coco_set, k):
    """Group of each image, in CocoDetection's order (by id): the reference's rule, written
    here — width / height among the bins 2 ** linspace(-1, 1, 2k + 1), bisect_right."""
    images = sorted(json.load(open(annotations_of(coco_set)))["images"], key=lambda i: i["id"])
    bins = sorted((2 ** np.linspace(-1, 1, 2 * k + 1)).tolist() if k > 0 else [1.0])
    return [bisect.bisect_right(bins, float(i["width"]) / float(i["height"])) for i in images]


def reference_batches(indices, groups, batch_size):
    """What the reference's GroupedBatchSampler yields for a sampler giving `indices` (its
    behaviour restated: a group's batch goes out when full, the group then rejoining the end of
    the queue; then the part-filled groups, fullest first, queue order among equals, filled up
    with the group's members cycled from the first, until len(indices) // batch_size)."""
    queue, seen, out = OrderedDict(), {}, []
    for index in indices:
        group = groups[index]
        seen[group] = seen.get(group, []) + [index]
        queue[group] = queue.get(group, []) + [index]
        if len(queue[group]) == batch_size:
            out.append(queue[group])
            queue[group] = []
            queue.move_to_end(group)
    fullest = sorted(queue.items(), key=lambda item: -len(item[1]))
    while len(out) < len(indices) // batch_size:
        group, part = fullest.pop(0)
        cycle = seen[group] * batch_size
        out.append(part + cycle[:batch_size - len(part)])
    return out


def grouped_loader(coco_dataset, k=1, **order):
    return stoker.Loader(coco_dataset, batch_size=BATCH, shuffle=True,
                         order=stoker.Order(seed=5, aspect_ratio_groups=k, **order),
                         batches=stoker.Batches(batch_format="dict", variable="list"),
                         transforms={"image": None, "masks": None})


def image_ids(coco_set):
    return sorted(i["id"] for i in json.load(open(annotations_of(coco_set)))["images"])


@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize("world_size", [1, 2])
def test_batches_are_the_references_for_stokers_order(coco_set, coco_dataset, k, world_size):
    groups = reference_groups(coco_set, k)
    ids = image_ids(coco_set)
    assert len(set(groups)) > 1  # the set has images of several shapes
    for rank in range(world_size):
        loader = grouped_loader(coco_dataset, k, rank=rank, world_size=world_size)
        for epoch in (0, 1):
            loader.set_epoch(epoch)
            order = list(loader.sampler)  # stoker's order of this rank's epoch, grouped
            plain = stoker.Loader(coco_dataset, batch_size=BATCH, shuffle=True,
                                  order=stoker.Order(seed=5, rank=rank, world_size=world_size))
            plain.set_epoch(epoch)
            want = reference_batches(list(plain.sampler), groups, BATCH)
            assert order == [i for batch in want for i in batch]
            assert list(loader.batch_sampler) == want
            got = [batch["image_id"].tolist() for batch in loader]
            assert got == [[ids[i] for i in batch] for batch in want]
            assert len(loader) == len(want) == len(list(plain.sampler)) // BATCH
            assert all(len({groups[i] for i in batch}) == 1 for batch in want)


def test_a_state_dict_resumes_the_grouped_batches(coco_dataset):
    loader = grouped_loader(coco_dataset)
    loader.set_epoch(2)
    whole = [batch["image_id"].tolist() for batch in loader]
    loader = grouped_loader(coco_dataset)
    loader.set_epoch(2)
    iterator = iter(loader)
    head = [next(iterator)["image_id"].tolist() for _ in range(3)]
    state = loader.state_dict()
    assert state["order"] == "aspect_ratio_groups=1"
    again = grouped_loader(coco_dataset)
    again.load_state_dict(state)
    assert head + [batch["image_id"].tolist() for batch in again] == whole
    plain = stoker.Loader(coco_dataset, batch_size=BATCH, shuffle=True,
                          order=stoker.Order(seed=5), transforms={"image": None, "masks": None})
    with pytest.raises(ValueError, match="aspect_ratio_groups=1"):
        plain.load_state_dict(state)
    assert len(list(plain)) == len(plain)  # the refused state left it usable


def test_settings_it_cannot_honour_are_one_line(coco_dataset, tmp_path):
    with pytest.raises(ValueError, match="whole number >= 0"):
        grouped_loader(coco_dataset, k=-1)
    sampler = torch.utils.data.SequentialSampler(range(24))
    with pytest.raises(ValueError, match="leave out sampler and batch_sampler"):
        stoker.Loader(coco_dataset, batch_size=2, sampler=sampler,
                      order=stoker.Order(aspect_ratio_groups=1))
    with pytest.raises(ValueError, match="GroupedBatchSampler as batch_sampler="):
        stoker.Loader([torch.zeros(2)] * 4, batch_size=2,
                      order=stoker.Order(aspect_ratio_groups=1))
    no_sizes = stoker.write_dataset(tmp_path / "plain", [(np.zeros((1, 4, 4), np.uint8), 0)] * 4,
                                    workers=0, progress=False)
    with pytest.raises(ValueError, match="height and width") as error:
        stoker.Loader(no_sizes, batch_size=2, order=stoker.Order(aspect_ratio_groups=1))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_ratios_on_a_bin_edge_go_above_it_as_bisect_right_puts_them(k):
    """Square images, 2:1 and 1:2 ones sit exactly on bins: each in the group above."""
    from stoker._aspect_ratio_groups import group_of_each
    sizes = [(100, 100), (50, 100), (100, 50), (480, 640), (640, 480), (3, 7), (7, 3)]
    bins = sorted((2 ** np.linspace(-1, 1, 2 * k + 1)).tolist() if k > 0 else [1.0])
    want = [bisect.bisect_right(bins, float(w) / float(h)) for h, w in sizes]
    heights, widths = zip(*sizes)
    assert group_of_each(heights, widths, k).tolist() == want
