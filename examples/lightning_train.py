"""PyTorch Lightning: a LightningDataModule returns the stoker.Loader.

    python examples/lightning_train.py DATA [--epochs 1] [--batch-size 64] [--arch mlp|cnn]

Lightning uses the loader as it is (it rebuilds DataLoaders only): under a multi-process
strategy the loader takes its rank from torch.distributed, and Lightning sets each epoch
through loader.sampler.set_epoch, as for a DataLoader's DistributedSampler. Lightning saves
the loader's state_dict() in its checkpoints and restores it with load_state_dict(), so a run
resumed mid-epoch (Trainer.fit(ckpt_path=...)) continues with the batch after the checkpoint's.
"""

import time

import lightning as L
import torch

import stoker
from common import FIELDS, arguments, classifier


class StokerData(L.LightningDataModule):
    def __init__(self, data: str, batch_size: int = 64, fields=FIELDS):
        super().__init__()
        self.data, self.batch_size, self.fields = data, batch_size, fields
        self.loader = None

    def train_dataloader(self):
        # Made here, once torch.distributed runs (under a multi-process strategy).
        self.loader = stoker.Loader(self.data, shuffle=True, batch_size=self.batch_size,
                                    transforms={"image": stoker.transforms.ToTensor()},
                                    batch_format=self.fields)
        return self.loader


class Classifier(L.LightningModule):
    """The examples' classifier; `images_per_s` is the training's rate once fit() returns."""

    def __init__(self, data: str, arch: str = "mlp"):
        super().__init__()
        self.model = classifier(data, arch=arch)
        self.images, self.start, self.images_per_s = 0, 0.0, 0.0

    def on_train_start(self):
        self.images, self.start = 0, time.perf_counter()

    def training_step(self, batch, batch_idx):
        image, label = batch[:2]  # (image, label, *fields named after them)
        self.images += len(label)
        return torch.nn.functional.cross_entropy(self.model(image), label)

    def on_train_end(self):
        self.images_per_s = self.images / (time.perf_counter() - self.start)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def train(data: str, epochs: int = 1, batch_size: int = 64, arch: str = "mlp") -> float:
    """Trains the classifier `arch` (common.classifier) for `epochs` epochs on the CPU;
    returns the images/s."""
    model = Classifier(data, arch)
    trainer = L.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, datamodule=StokerData(data, batch_size))
    return model.images_per_s


if __name__ == "__main__":
    args = arguments(__doc__)
    print(f"{train(args.data, args.epochs, args.batch_size, args.arch):.0f} images/s")
