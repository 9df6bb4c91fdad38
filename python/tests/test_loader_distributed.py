"""stoker.Loader in distributed runs (gloo, over loopback): torchrun's processes train a
DistributedDataParallel model fed by loaders sharded by their rank (taken from torch.distributed)
and together see the dataset exactly once, or exactly the padding; every last_batch mode gives
every rank the same number of batches; a 2-D DeviceMesh shards by its data-parallel dimension;
an epoch saved at one world size resumes at another; a rank that dies ends the run."""

import collections
import json
import time

import pytest
import torch.distributed as dist

import stoker
from loader_datasets import RECORDS, write_labelled
from torchrun import torchrun_text

TRAIN_SCRIPT = """
import json, sys
import torch
import torch.distributed as dist
import stoker

path, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
loader = stoker.Loader(path, shuffle=True, batch_size=16, seed=3, workers=1,
                       transforms={"image": stoker.transforms.Normalize(0.5, 0.25)})
assert (loader.options["rank"], loader.options["world_size"]) == (rank, 2), loader.options
torch.manual_seed(rank)  # different initial weights: DDP broadcasts rank 0's
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 1000)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
seen, losses = [], []
loader.set_epoch(0)
for image, label in loader:  # a dataset of image and label: (image, label) tuples
    loss = torch.nn.functional.cross_entropy(model(image), label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    seen += label.tolist()
    losses.append(loss.item())
weights = [p.detach().double().sum().item() for p in model.parameters()]
with open(f"{out}/rank{rank}.json", "w") as f:
    json.dump({"seen": seen, "steps": len(losses), "batches": len(loader),
               "weights": weights, "state": loader.state_dict()}, f)
dist.destroy_process_group()
"""


def test_torchrun_ddp_training_sees_the_dataset_exactly_once(tmp_path):
    records = 1000  # a multiple of the world size: no padding
    path = write_labelled(tmp_path / "ds", records=records)
    run = torchrun_text(tmp_path, 2, TRAIN_SCRIPT, path, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    # Every rank took the same number of steps: the loader's batch count on each.
    assert ranks[0]["steps"] == ranks[1]["steps"] == ranks[0]["batches"] == records // 2 // 16 + 1
    # Together they saw each sample once.
    assert sorted(ranks[0]["seen"] + ranks[1]["seen"]) == list(range(records))
    assert not set(ranks[0]["seen"]) & set(ranks[1]["seen"])
    # DDP kept the replicas identical (gradients all-reduced, rank 0's weights broadcast).
    assert ranks[0]["weights"] == ranks[1]["weights"]
    # Both ranks' loaders finished the epoch: their states agree on the global position.
    assert ranks[0]["state"] == ranks[1]["state"]
    assert (ranks[0]["state"]["epoch"], ranks[0]["state"]["position"]) == (1, 0)


# Every last_batch mode in one launch: 1003 records, not a multiple of 2 ranks x 16.
MODES_SCRIPT = """
import json, sys
import torch
import torch.distributed as dist
import stoker

path, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank, result = dist.get_rank(), {}
for mode in ("short", "drop", "pad"):
    loader = stoker.Loader(path, shuffle=True, batch_size=16, seed=3, workers=1, last_batch=mode)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1003))
    seen, valid, steps = [], [], 0
    for image, label, *mask in loader:  # "pad": (image, label, valid)
        assert len(mask) == (mode == "pad")
        loss = torch.nn.functional.cross_entropy(model(image.flatten(1).float()), label)
        loss.backward()  # DDP's all-reduce: a rank with a batch more would wait forever
        seen += label.tolist()
        valid += mask[0].tolist() if mask else [True] * len(label)
        steps += 1
    result[mode] = {"seen": seen, "valid": valid, "steps": steps, "batches": len(loader)}
with open(f"{out}/rank{rank}.json", "w") as f:
    json.dump(result, f)
dist.destroy_process_group()
"""


def test_every_last_batch_mode_gives_every_rank_the_same_batches(tmp_path, labelled):
    run = torchrun_text(tmp_path, 2, MODES_SCRIPT, labelled, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    order = [label for b in stoker.Loader(labelled, shuffle=True, batch_size=16, seed=3, rank=0, world_size=1,
                                          batch_format="dict")
             for label in b["label"].tolist()]  # the global order the ranks are dealt
    for mode in ("short", "drop", "pad"):
        runs = [rank[mode] for rank in ranks]
        assert runs[0]["steps"] == runs[1]["steps"] == runs[0]["batches"] == runs[1]["batches"]
        seen = collections.Counter(s for r in runs for s, ok in zip(r["seen"], r["valid"]) if ok)
        if mode == "drop":  # the tail that fills no batch on every rank, dropped
            assert max(seen.values()) == 1 and set(seen) == set(order[:len(seen)])
            assert RECORDS - len(seen) == RECORDS % (2 * 16)
        else:  # each sample once: "pad" masks its repeats, "short" repeats the first one
            assert set(seen) == set(range(RECORDS))
            repeats = seen - collections.Counter(range(RECORDS))
            assert list(repeats.elements()) == (order[:1] if mode == "short" else [])


def test_an_epoch_saved_at_one_world_size_resumes_at_another(labelled):
    """Elastic: the state of a run of 4 ranks (2) stopped mid-epoch continues on 2 ranks (4):
    each remaining sample once, the padding masked."""
    for before, after in ((4, 2), (2, 4)):
        seen = []
        for rank in range(before):
            loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=rank, world_size=before,
                                   seed=6, last_batch="pad", workers=1, batch_format="dict")
            loader.set_epoch(2)
            iterator = iter(loader)
            for _ in range(5):
                batch = next(iterator)
                seen += batch["label"][batch["valid"]].tolist()
            state = loader.state_dict()
        assert (state["world_size"], state["position"]) == (before, 5 * 16 * before)
        for rank in range(after):
            loader = stoker.Loader(labelled, shuffle=True, batch_size=16, rank=rank, world_size=after, seed=6,
                                   last_batch="pad", workers=1, batch_format="dict")
            loader.load_state_dict(state)
            seen += [s for b in loader for s in b["label"][b["valid"]].tolist()]
        assert sorted(seen) == list(range(RECORDS))


@pytest.fixture
def one_process_group():
    """torch.distributed initialised in this process, a group of one (gloo)."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_a_world_size_beyond_the_run_is_refused(labelled, one_process_group):
    with pytest.raises(ValueError, match="world_size=4, but torch.distributed runs 1 process: "
                                         "leave rank and world_size out .* to reshard"):
        stoker.Loader(labelled, batch_size=256, shuffle=True, rank=0, world_size=4, batch_format="dict")
    assert stoker.Loader(labelled, batch_size=256, shuffle=True, batch_format="dict").options["world_size"] == 1


def test_mesh_takes_the_data_parallel_dimension(labelled, one_process_group):
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    options = stoker.Loader(labelled, batch_size=256, shuffle=True, mesh=mesh["dp"], batch_format="dict").options
    assert (options["rank"], options["world_size"]) == (0, 1)
    with pytest.raises(ValueError, match=r"mesh has 2 dimensions \('dp', 'tp'\): pass its "
                                         r"data-parallel one, e.g. mesh\['dp'\]"):
        stoker.Loader(labelled, batch_size=256, shuffle=True, mesh=mesh, batch_format="dict")
    with pytest.raises(ValueError, match="give mesh or rank/world_size, not both"):
        stoker.Loader(labelled, batch_size=256, shuffle=True, mesh=mesh["dp"], rank=0, batch_format="dict")
    with pytest.raises(TypeError, match="mesh must be a torch.distributed DeviceMesh, not int"):
        stoker.Loader(labelled, batch_size=256, shuffle=True, mesh=2, batch_format="dict")


class NotQuiteAMesh:
    """A DeviceMesh's names, with `ndim` of another type."""
    def __init__(self, ndim):
        self.ndim = ndim

    def get_local_rank(self):
        return 0

    def size(self):
        return 1


@pytest.mark.parametrize("ndim", ["1", 1.0, None, True, [1]])
def test_a_mesh_whose_ndim_is_not_an_int_is_one_line(labelled, ndim):
    with pytest.raises(TypeError, match=f"^mesh.ndim must be an int, not {type(ndim).__name__}: "):
        stoker.Loader(labelled, batch_size=256, shuffle=True, mesh=NotQuiteAMesh(ndim), batch_format="dict")


MESH_SCRIPT = """
import json, sys
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
import stoker

path, out = sys.argv[1], sys.argv[2]
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
loader = stoker.Loader(path, shuffle=True, batch_size=16, seed=2, workers=1, mesh=mesh["dp"])
seen = [label.tolist() for _, label in loader]
with open(f"{out}/rank{dist.get_rank()}.json", "w") as f:
    json.dump({"seen": seen, "dp": mesh["dp"].get_local_rank()}, f)
dist.destroy_process_group()
"""


def test_a_2d_mesh_shards_by_data_parallel_rank(tmp_path, labelled):
    """dp x tp = 2 x 2 under torchrun: the ranks of a tensor-parallel group get the same
    batches; the two data-parallel groups split the dataset."""
    run = torchrun_text(tmp_path, 4, MESH_SCRIPT, labelled, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(4)]
    assert [r["dp"] for r in ranks] == [0, 0, 1, 1]  # torch's layout: tp is the inner dim
    assert ranks[0]["seen"] == ranks[1]["seen"] and ranks[2]["seen"] == ranks[3]["seen"]
    groups = [[s for batch in ranks[i]["seen"] for s in batch] for i in (0, 2)]
    # Disjoint but for the padding: 1003 records on 2 data-parallel ranks repeat the epoch's
    # first sample (data-parallel rank 0's first) as rank 1's last.
    assert set(groups[0]) & set(groups[1]) == {groups[0][0]} == {groups[1][-1]}
    assert set(groups[0] + groups[1]) == set(range(RECORDS))
    assert len(groups[0]) == len(groups[1]) == (RECORDS + 1) // 2


DYING_SCRIPT = """
import os, sys
from datetime import timedelta
import torch
import torch.distributed as dist
import stoker

dist.init_process_group("gloo", timeout=timedelta(seconds=20))
loader = stoker.Loader(sys.argv[1], shuffle=True, batch_size=16, workers=1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1000))
for step, (image, _) in enumerate(loader):
    if step == 3 and dist.get_rank() == 1:
        os._exit(7)  # dies mid-epoch, without a word
    model(image.flatten(1).float()).sum().backward()
"""


def test_a_rank_that_dies_ends_the_others(tmp_path, labelled):
    """Rank 1 dies mid-epoch: rank 0's next all-reduce fails (or torchrun ends it) well within
    the timeout, and torchrun names the rank and its exit code."""
    start = time.monotonic()
    run = torchrun_text(tmp_path, 2, DYING_SCRIPT, labelled, timeout=120)
    assert run.returncode != 0
    assert time.monotonic() - start < 90
    assert "exitcode  : 7" in run.stderr and "rank      : 1" in run.stderr, run.stderr[-3000:]


SAMPLER_SCRIPT = """
import json, sys, warnings
import torch
import torch.distributed as dist
import stoker

dist.init_process_group("gloo")
data = list(range(8))
said = {}
for name, sampler in (("plain", torch.utils.data.SequentialSampler(data)),
                      ("split", torch.utils.data.DistributedSampler(data, shuffle=False))):
    loader = stoker.Loader(data, batch_size=2, sampler=sampler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = [int(x) for batch in loader for x in batch]
        seen += [int(x) for batch in loader for x in batch]  # said once a loader
    said[name] = {"seen": seen, "warnings": [str(w.message) for w in caught]}
json.dump(said, open(f"{sys.argv[2]}/rank{dist.get_rank()}.json", "w"))
dist.destroy_process_group()
"""


def test_a_sampler_not_split_by_rank_is_said_once_and_a_split_one_is_not(tmp_path):
    # Lightning and Accelerate split a DataLoader's sampler, not a stoker.Loader's: every rank
    # reading all of a plain sampler's indices (as a DataLoader does) is said, once a loader.
    run = torchrun_text(tmp_path, 2, SAMPLER_SCRIPT, tmp_path, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for said in ranks:
        assert said["plain"]["seen"] == list(range(8)) * 2
        assert len(said["plain"]["warnings"]) == 1
        assert "SequentialSampler given is not split across the 2 ranks" in \
            said["plain"]["warnings"][0]
        assert said["split"]["warnings"] == []
    assert sorted(ranks[0]["split"]["seen"] + ranks[1]["split"]["seen"]) == sorted(
        list(range(8)) * 2)
