"""stoker.Loader in torch.distributed.checkpoint (DCP), the way torchtitan's CheckpointManager
keeps its dataloader: the loader itself in the state saved (a Stateful: DCP calls its
state_dict() and load_state_dict()), each rank saving and loading its own. A run of 2 ranks
saved mid-epoch and loaded by 3 ranks (and 3 by 2) delivers every sample of the epoch exactly
once across both runs, because the state is the global position, the same on every rank (DCP
keeps one rank's copy of a non-tensor value). A checkpoint of another dataset is refused."""

import json

import pytest

from loader_datasets import write_labelled
from torchrun import torchrun_text

RECORDS = 600

SCRIPT = """
import json, os, sys
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import stoker

path, checkpoint, out, phase, stop_after = sys.argv[1:6]
dist.init_process_group("gloo")
rank = dist.get_rank()
loader = stoker.Loader(path, shuffle=True, batch_size=10, seed=5, workers=1, batch_format="dict")
loader.set_epoch(0)
seen = []
if phase == "after":
    dcp.load({"dataloader": loader}, checkpoint_id=checkpoint)
for i, batch in enumerate(loader):
    seen += batch["label"].tolist()
    if phase == "before" and i + 1 == int(stop_after):
        dcp.save({"dataloader": loader}, checkpoint_id=checkpoint)
        break
with open(f"{out}/{phase}-rank{rank}.json", "w") as f:
    json.dump({"seen": seen, "state": loader.state_dict()}, f)
if torch.__version__ < "2.5":
    # torch 2.4's destroy_process_group hangs at times after a dcp.save or dcp.load (a plain
    # Stateful dict does it too, with no stoker in the process): the results are written.
    os._exit(0)
dist.destroy_process_group()
"""


def run(tmp_path, ranks, *args):
    result = torchrun_text(tmp_path, ranks, SCRIPT, *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def seen(tmp_path, phase, ranks):
    return [json.loads((tmp_path / f"{phase}-rank{r}.json").read_text()) for r in range(ranks)]


# Stopped after 60 samples: the 540 left fill batches of 10 on 2 ranks and on 3 (no padding).
@pytest.mark.parametrize("before, after, stop_after", [(2, 3, 3), (3, 2, 2)])
def test_a_dcp_checkpoint_of_n_ranks_resumes_on_m_with_each_sample_once(tmp_path, before, after,
                                                                         stop_after):
    path = write_labelled(tmp_path / "ds", records=RECORDS)
    checkpoint = tmp_path / "checkpoint"
    run(tmp_path, before, path, checkpoint, tmp_path, "before", stop_after)
    first = seen(tmp_path, "before", before)
    # Every rank saved the same state: DCP's one copy of it is every rank's.
    assert all(r["state"] == first[0]["state"] for r in first)
    assert first[0]["state"]["position"] == 60
    run(tmp_path, after, path, checkpoint, tmp_path, "after", 0)
    rest = seen(tmp_path, "after", after)
    labels = [s for r in first + rest for s in r["seen"]]
    assert sorted(labels) == list(range(RECORDS))
    assert rest[0]["state"]["epoch"] == 1 and rest[0]["state"]["position"] == 0


def test_a_dcp_checkpoint_of_another_dataset_is_refused_in_one_line(tmp_path):
    path = write_labelled(tmp_path / "ds", records=RECORDS)
    other = write_labelled(tmp_path / "other", records=RECORDS - 10)
    checkpoint = tmp_path / "checkpoint"
    run(tmp_path, 2, path, checkpoint, tmp_path, "before", 3)
    result = torchrun_text(tmp_path, 2, SCRIPT, other, checkpoint, tmp_path, "after", 0)
    assert result.returncode != 0
    refusals = [line for line in (result.stdout + result.stderr).splitlines()
                if "ValueError" in line or "stoker.Error" in line]
    assert refusals and "dataset" in refusals[-1], (result.stdout + result.stderr)[-3000:]
