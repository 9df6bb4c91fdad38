"""Hugging Face Accelerate: prepare() the model and optimizer; the loader stays stoker's.

    python examples/accelerate_train.py DATA [--epochs 1] [--batch-size 64] [--arch mlp|cnn]
    torchrun --nproc-per-node 2 -- examples/accelerate_train.py DATA    # 2 processes, gloo

accelerator.prepare(loader) returns a stoker.Loader as it is (Accelerate wraps DataLoaders
only), so its sharding (torch.distributed's rank) and order are stoker's. One line puts the
loader's position in accelerator.save_state() and back with load_state():
accelerator.register_for_checkpointing(loader). The restored loader continues after the saved
batch by itself: skip_first_batches() is for DataLoaders and not needed.
"""

import time

import accelerate
import torch

import stoker
from common import FIELDS, arguments, classifier, train_step


def train(data: str, epochs: int = 1, batch_size: int = 64, arch: str = "mlp") -> float:
    """Trains the classifier `arch` (common.classifier) for `epochs` epochs; returns the
    images/s."""
    accelerator = accelerate.Accelerator(cpu=True)
    loader = stoker.Loader(data, shuffle=True, batch_size=batch_size, device=accelerator.device,
                           transforms={"image": stoker.transforms.ToTensor()}, batch_format=FIELDS)
    model = classifier(data, arch=arch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)  # loader: as it is
    accelerator.register_for_checkpointing(loader)  # its position in save_state()/load_state()
    images, start = 0, time.perf_counter()
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for image, label in loader:
            train_step(model, optimizer, image, label, accelerator.backward)
            images += len(label)
    return images / (time.perf_counter() - start)


if __name__ == "__main__":
    args = arguments(__doc__)
    print(f"{train(args.data, args.epochs, args.batch_size, args.arch):.0f} images/s")
