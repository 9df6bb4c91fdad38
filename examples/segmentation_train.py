"""Semantic segmentation from stoker.Loader: torchvision's DeepLabV3 (MobileNetV3 backbone, no
pretrained weights: nothing is downloaded) trained on a dataset of `stoker convert coco`, on
the CPU, at a small fixed image size. Prints the loss of every step.

Each image's target is its class map as torchvision's segmentation reference makes it from
COCO (its ConvertCocoPolysToMask): every object's mask painted with its category id, pixels of
two or more objects 255 (ignored by the loss). The reference then keeps VOC's 20 categories;
here all of COCO's ids are classes (91 outputs).

    stoker convert coco --images DIR --annotations FILE --out DATA
    python examples/segmentation_train.py DATA [--steps 8] [--batch-size 2] [--size 128]
                                               [--threads N]
"""

import torch
import torchvision

from common import train_steps
from detection_data import coco_loader, main, samples

IGNORED = 255


def class_map(masks: torch.Tensor, labels: torch.Tensor, size: int) -> torch.Tensor:
    """int64 [size, size]: each object's category where its mask is, 0 elsewhere, IGNORED where
    objects overlap."""
    if len(masks) == 0:
        return torch.zeros((size, size), dtype=torch.int64)
    target = (masks.long() * labels[:, None, None]).amax(dim=0)
    target[masks.long().sum(dim=0) > 1] = IGNORED
    return target


def train(data: str, steps: int, batch_size: int, size: int) -> list:
    """Trains for `steps` batches (epochs repeat as needed); returns each step's loss."""
    torch.manual_seed(0)
    model = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=91, aux_loss=False)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9)
    loader = coco_loader(data, batch_size, masks=True)

    def loss_of(batch):
        images, targets = [], []
        for image, _, labels, masks in samples(batch, size):
            images.append(image)
            targets.append(class_map(masks, labels, size))
        out = model(torch.stack(images))["out"]
        return torch.nn.functional.cross_entropy(out, torch.stack(targets),
                                                 ignore_index=IGNORED)
    return train_steps(loader, optimizer, steps, loss_of)


if __name__ == "__main__":
    main(__doc__, train)
