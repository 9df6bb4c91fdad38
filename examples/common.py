"""What the examples share: their command line and the small classifier they train.

Every example trains on a stoker dataset with a uint8 "image" field and an int64 "label" field
(e.g. Fashion-MNIST, converted by `stoker convert fashion-mnist`: DATA is its train/).
"""

import argparse
import json
import math
import os

import torch


def arguments(doc: str) -> argparse.Namespace:
    """DATA, --epochs and --batch-size, with the example's docstring as the help text."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="a stoker dataset directory")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    return parser.parse_args()


def classifier(data: str, classes: int = 10) -> torch.nn.Module:
    """Flatten, Linear(64), ReLU, Linear(classes), sized from the dataset's "image" field (its
    manifest's schema, docs/FORMAT.md)."""
    with open(os.path.join(data, "manifest.json")) as f:
        fields = json.load(f)["schema"]["fields"]
    shape = next(field["shape"] for field in fields if field["name"] == "image")
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(math.prod(shape), 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, classes))


def train_step(model: torch.nn.Module, optimizer, batch: dict, backward=torch.Tensor.backward):
    """One step on a batch: cross-entropy, `backward(loss)` (Accelerate passes its own), the
    optimizer's step; returns the loss."""
    loss = torch.nn.functional.cross_entropy(model(batch["image"]), batch["label"])
    optimizer.zero_grad()
    backward(loss)
    optimizer.step()
    return loss
