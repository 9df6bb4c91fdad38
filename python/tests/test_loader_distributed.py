"""stoker.Loader under torchrun: two processes (gloo) train a DistributedDataParallel model fed
by loaders sharded by their rank (taken from torch.distributed), and together see the dataset
exactly once."""

import json
import subprocess
import sys

from loader_datasets import write_labelled

TRAIN_SCRIPT = """
import json, sys
import torch
import torch.distributed as dist
import stoker

path, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
loader = stoker.Loader(path, batch_size=16, seed=3, workers=1,
                       transforms={"image": stoker.transforms.Normalize(0.5, 0.25)})
assert (loader.options["rank"], loader.options["world_size"]) == (rank, 2), loader.options
torch.manual_seed(rank)  # different initial weights: DDP broadcasts rank 0's
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 1000)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
seen, losses = [], []
loader.set_epoch(0)
for batch in loader:
    loss = torch.nn.functional.cross_entropy(model(batch["image"]), batch["label"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    seen += batch["label"].tolist()
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
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    # torchrun's own module, run by this interpreter (the one with stoker installed); torch
    # 1.13's launcher needs --redirects/--tee on Python 3.11.
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         "--redirects", "1", "--tee", "1", str(script), str(path), str(tmp_path)],
        capture_output=True, text=True, timeout=300)
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
