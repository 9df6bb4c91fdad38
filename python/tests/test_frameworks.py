"""stoker.Loader inside Lightning and Accelerate (examples/lightning_train.py's DataModule and
module; Accelerate's save_state/load_state): a run stopped mid-epoch and resumed from its
checkpoint sees exactly the batches the uninterrupted run saw; a checkpoint of another dataset
is refused in one line."""

import json
import pathlib
import sys

import pytest
import torch

import stoker
from loader_datasets import write_classes
from torchrun import torchrun_text

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

L = pytest.importorskip("lightning")
accelerate = pytest.importorskip("accelerate")
from lightning_train import Classifier, StokerData  # noqa: E402

FIELDS = ("image", "label", "id")  # the batches' tuples


class Ids(L.Callback):
    """The sample ids of every training batch, in order."""

    def __init__(self):
        self.ids = []

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.ids.append(batch[2].tolist())  # (image, label, id): FIELDS


class Crash(L.Callback):
    def __init__(self, step):
        self.step = step

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.step:
            raise RuntimeError("crash")


def fit(data, tmp_path, callbacks, ckpt_path=None, every=None):
    """Two epochs of examples/lightning_train.py's model and data (16 a batch: 13 batches an
    epoch), checkpointing into tmp_path every `every` steps and at the end of each epoch."""
    checkpoints = [L.pytorch.callbacks.ModelCheckpoint(tmp_path, save_top_k=-1, **when)
                   for when in ({"every_n_train_steps": every}, {"every_n_epochs": 1})
                   ] if every else []
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=bool(every), enable_progress_bar=False,
                        enable_model_summary=False, callbacks=callbacks + checkpoints)
    trainer.fit(Classifier(data), datamodule=StokerData(data, 16, FIELDS), ckpt_path=ckpt_path)


def test_lightning_resumes_mid_epoch_with_the_same_batches(classes, tmp_path):
    whole = Ids()
    fit(classes, tmp_path, [whole])
    assert len(whole.ids) == 2 * 13
    stopped = Ids()
    with pytest.raises(RuntimeError, match="crash"):
        fit(classes, tmp_path, [stopped, Crash(20)], every=9)
    assert stopped.ids == whole.ids[:20]
    # Mid-way through epoch 0, at its end and mid-way through epoch 1.
    for step, name in ((9, "epoch=0-step=9"), (13, "epoch=0-step=13"), (18, "epoch=1-step=18")):
        resumed = Ids()
        fit(classes, tmp_path, [resumed], ckpt_path=tmp_path / f"{name}.ckpt")
        assert resumed.ids == whole.ids[step:]


def test_lightning_sets_the_epoch_through_the_loaders_sampler(classes, tmp_path, monkeypatch):
    """As for a DataLoader's DistributedSampler: the example sets no epoch itself."""
    epochs = []
    import stoker._samplers

    set_epoch = stoker._samplers.LoaderSampler.set_epoch
    monkeypatch.setattr(stoker._samplers.LoaderSampler, "set_epoch",
                        lambda self, epoch: (epochs.append(epoch), set_epoch(self, epoch)))
    fit(classes, tmp_path, [])
    assert epochs == [0, 1]


def test_lightning_refuses_a_checkpoint_of_another_dataset(classes, tmp_path):
    with pytest.raises(RuntimeError, match="crash"):
        fit(classes, tmp_path, [Crash(4)], every=3)
    other = write_classes(tmp_path / "other", offset=1)  # as many records, other images
    with pytest.raises(ValueError, match=r"^the state_dict is of another dataset \(id '\w+'\); "
                                         r".*other is '\w+'$"):
        fit(other, tmp_path, [], ckpt_path=tmp_path / "epoch=0-step=3.ckpt")


LIGHTNING_DDP = """
import json, sys
import lightning as L
import torch.distributed as dist

data, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from lightning_train import Classifier, StokerData

class Recording(Classifier):
    ids = []

    def training_step(self, batch, batch_idx):
        self.ids += batch[2].tolist()  # (image, label, id)
        return super().training_step(batch, batch_idx)

model = Recording(data)
L.Trainer(max_epochs=1, accelerator="cpu", devices=2, strategy="ddp", logger=False,
          enable_checkpointing=False, enable_progress_bar=False,
          enable_model_summary=False).fit(model, datamodule=StokerData(data, 16,
                                                                       ("image", "label", "id")))
with open(f"{out}/rank{dist.get_rank()}.json", "w") as f:
    json.dump(model.ids, f)
"""


def test_lightning_ddp_shards_the_loader_by_rank(classes, tmp_path):
    """Lightning's DDP strategy under torchrun: each rank's loader reads its half."""
    run = torchrun_text(tmp_path, 2, LIGHTNING_DDP, classes, tmp_path, EXAMPLES)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    # 203 records: 102 a rank, the epoch's first sample repeated as rank 1's last.
    assert len(ranks[0]) == len(ranks[1]) == 102
    assert set(ranks[0]) & set(ranks[1]) == {ranks[0][0]} == {ranks[1][-1]}
    assert set(ranks[0] + ranks[1]) == set(range(203))


def accelerate_run(data, checkpoint, save_at=None, resume=False):
    """Two epochs through Accelerate, the loader registered for checkpointing; with `save_at`,
    saves the state after that many batches and stops; the ids of the batches it trained on."""
    accelerator = accelerate.Accelerator(cpu=True)
    loader = stoker.Loader(data, shuffle=True, batch_size=16, seed=5, workers=1, batch_format=FIELDS)
    model = torch.nn.Linear(64, 10)
    model, optimizer, prepared = accelerator.prepare(
        model, torch.optim.SGD(model.parameters(), lr=0.1), loader)
    assert prepared is loader  # Accelerate keeps stoker's sharding and order
    accelerator.register_for_checkpointing(loader)
    if resume:
        accelerator.load_state(checkpoint)
    ids = []
    for epoch in range(loader.state_dict()["epoch"], 2):
        loader.set_epoch(epoch)
        for image, label, id_ in loader:
            loss = torch.nn.functional.cross_entropy(model(image.flatten(1).float()), label)
            accelerator.backward(loss)
            optimizer.step()
            ids.append(id_.tolist())
            if len(ids) == save_at:
                accelerator.save_state(checkpoint)
                return ids
    return ids


def test_accelerate_save_state_and_load_state_restore_the_position(classes, tmp_path):
    whole = accelerate_run(classes, tmp_path / "unused")
    assert len(whole) == 2 * 13
    for step in (5, 13, 17):  # mid-way through epoch 0, at its end, in epoch 1
        checkpoint = tmp_path / f"step{step}"
        assert accelerate_run(classes, checkpoint, save_at=step) == whole[:step]
        assert accelerate_run(classes, checkpoint, resume=True) == whole[step:]


class Squares(torch.utils.data.Dataset):
    """A Python dataset: (x [4] float, x % 2) for x in [0, 64)."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), float(i)), i % 2


class Tiny(L.LightningModule):
    """A module with its own train, val and test loaders, each stoker.Loader as a DataLoader
    script writes them; it counts the samples each stage sees."""

    def __init__(self, classes_path):
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)
        self.classes_path = classes_path
        self.seen = {"train": 0, "val": 0, "test": 0}

    def step(self, batch, stage):
        x, y = batch
        self.seen[stage] += len(y)
        return torch.nn.functional.cross_entropy(self.layer(x.float().flatten(1)[:, :4]), y % 2)

    def training_step(self, batch, batch_idx):
        return self.step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self.step(batch, "val")

    def test_step(self, batch, batch_idx):
        self.step(batch, "test")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return stoker.Loader(Squares(), batch_size=8, shuffle=True, num_workers=2)

    def val_dataloader(self):
        return stoker.Loader(self.classes_path, batch_size=16)

    def test_dataloader(self):
        return stoker.Loader(self.classes_path, batch_size=32)


def test_a_module_with_train_val_and_test_loaders_runs_as_with_dataloaders(classes, recwarn):
    module = Tiny(classes)
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(module)
    trainer.test(module, verbose=False)
    records = len(stoker.Loader(classes).dataset)
    assert module.seen == {"train": 2 * 64, "val": 2 * records, "test": records}
    assert not [w for w in recwarn if "shuffl" in str(w.message)]  # val and test: in order
