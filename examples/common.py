"""What the examples share: their command line, the small classifiers they train and the step
loop (train_steps).

Every example trains on a stoker dataset with a uint8 "image" field and an int64 "label" field
(e.g. Fashion-MNIST, converted by `stoker convert fashion-mnist`: DATA is its train/). Their
loaders name those two fields, batch_format=FIELDS, so that batches are (image, label) tuples
(a dataset of exactly those fields gives them by default) and any other field is not read.
"""

import argparse
import json
import math
import os

import torch


ARCHS = ("mlp", "cnn")
FIELDS = ("image", "label")  # the loaders' batch_format: batches are (image, label)


def arguments(doc: str) -> argparse.Namespace:
    """DATA, --epochs, --batch-size and --arch, with the example's docstring as the help
    text."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="a stoker dataset directory")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--arch", choices=ARCHS, default="mlp")
    return parser.parse_args()


def classifier(data: str, classes: int = 10, arch: str = "mlp") -> torch.nn.Module:
    """Sized from the dataset's "image" field (its manifest's schema, docs/FORMAT.md): "mlp" is
    Flatten, Linear(64), ReLU, Linear(classes); "cnn" is LeNet-like, two 3x3 convolutions (32
    and 64 channels, each with ReLU and 2x2 max-pooling), Linear(128), ReLU, Linear(classes),
    for an image of shape (H, W) or (C, H, W)."""
    with open(os.path.join(data, "manifest.json")) as f:
        fields = json.load(f)["schema"]["fields"]
    shape = next(field["shape"] for field in fields if field["name"] == "image")
    if arch == "mlp":
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(math.prod(shape), 64),
                                   torch.nn.ReLU(), torch.nn.Linear(64, classes))
    if arch != "cnn":
        raise ValueError(f"arch {arch!r}: expected one of {', '.join(ARCHS)}")
    if len(shape) not in (2, 3) or min(shape[-2:]) < 4:
        raise ValueError(f"arch 'cnn' needs an image of shape (H, W) or (C, H, W), H and W at "
                         f"least 4; {data} has {shape}")
    channels, height, width = ([1] + list(shape))[-3:]
    # (B, H, W) to (B, 1, H, W); (B, C, H, W) as it is.
    to_chw = torch.nn.Unflatten(1, (1, height)) if len(shape) == 2 else torch.nn.Identity()
    return torch.nn.Sequential(
        to_chw,
        torch.nn.Conv2d(channels, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * (height // 4) * (width // 4), 128),
        torch.nn.ReLU(), torch.nn.Linear(128, classes))


def train_step(model: torch.nn.Module, optimizer, image, label, backward=torch.Tensor.backward):
    """One step on a batch (image, label): cross-entropy, `backward(loss)` (Accelerate passes
    its own), the optimizer's step; returns the loss."""
    loss = torch.nn.functional.cross_entropy(model(image), label)
    optimizer.zero_grad()
    backward(loss)
    optimizer.step()
    return loss


def train_steps(loader, optimizer, steps: int, loss_of) -> list:
    """`steps` optimizer steps on `loss_of(batch)` over `loader`'s batches, epochs repeating as
    needed (set_epoch before each); prints and returns each step's loss."""
    losses, epoch = [], 0
    while len(losses) < steps:
        loader.set_epoch(epoch)
        for batch in loader:
            loss = loss_of(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            print(f"step {len(losses)}: loss {losses[-1]:.4f}", flush=True)
            if len(losses) == steps:
                break
        epoch += 1
    return losses
