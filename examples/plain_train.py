"""Plain PyTorch: stoker.Loader where a DataLoader would be.

    python examples/plain_train.py DATA [--epochs 1] [--batch-size 64] [--arch mlp|cnn]
"""

import time

import torch

import stoker
from common import FIELDS, arguments, classifier, train_step


def train(data: str, epochs: int = 1, batch_size: int = 64, arch: str = "mlp") -> float:
    """Trains the classifier `arch` (common.classifier) for `epochs` epochs; returns the
    images/s."""
    loader = stoker.Loader(data, shuffle=True, batch_size=batch_size,
                           transforms={"image": stoker.transforms.ToTensor()}, batch_format=FIELDS)
    model = classifier(data, arch=arch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images, start = 0, time.perf_counter()
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for image, label in loader:
            train_step(model, optimizer, image, label)
            images += len(label)
    return images / (time.perf_counter() - start)


if __name__ == "__main__":
    args = arguments(__doc__)
    print(f"{train(args.data, args.epochs, args.batch_size, args.arch):.0f} images/s")
