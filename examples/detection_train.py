"""Object detection from stoker.Loader: torchvision's Faster R-CNN (MobileNetV3 backbone, no
pretrained weights: nothing is downloaded) trained on a dataset of `stoker convert coco`, on
the CPU, at a small image size. The detection reference's `hflip` preset (torchvision v2 on
image and target) runs natively in the loader's workers; the model resizes each image (and its
boxes) to --size itself. Prints the loss of every step.

    stoker convert coco --images DIR --annotations FILE --out DATA
    python examples/detection_train.py DATA [--steps 8] [--batch-size 2] [--size 128]
                                            [--threads N]

The model samples fewer proposals and regions than torchvision's defaults (64 a batch image
instead of 512), which makes a CPU step about 4x cheaper.
"""

import argparse

import torch
import torchvision

from detection_data import detection_loader


def train(data: str, steps: int, batch_size: int, size: int) -> list:
    """Trains for `steps` batches (epochs repeat as needed); returns each step's loss."""
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=91, min_size=size, max_size=size,
        rpn_pre_nms_top_n_train=200, rpn_post_nms_top_n_train=100, rpn_batch_size_per_image=64,
        box_batch_size_per_image=64)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = detection_loader(data, batch_size)
    losses, epoch = [], 0
    while len(losses) < steps:
        loader.set_epoch(epoch)
        for images, boxes, labels in loader:
            targets = [{"boxes": b, "labels": l} for b, l in zip(boxes, labels)]
            loss = sum(model(images, targets).values())
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
