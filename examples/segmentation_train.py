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

import argparse

import torch
import torchvision

from detection_data import coco_loader, samples

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
    losses, epoch = [], 0
    while len(losses) < steps:
        loader.set_epoch(epoch)
        for batch in loader:
            images, targets = [], []
            for image, _, labels, masks in samples(batch, size):
                images.append(image)
                targets.append(class_map(masks, labels, size))
            out = model(torch.stack(images))["out"]
            loss = torch.nn.functional.cross_entropy(out, torch.stack(targets),
                                                     ignore_index=IGNORED)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            print(f"step {len(losses)}: loss {losses[-1]:.4f}", flush=True)
            if len(losses) == steps:
                break
        epoch += 1
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="a dataset of `stoker convert coco`")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(),
                        help="torch's threads (on a busy machine 1 is much faster)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train(args.data, args.steps, args.batch_size, args.size)
