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

import torch
import torchvision

from common import train_steps
from detection_data import detection_loader, main


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

    def loss_of(batch):
        images, boxes, labels = batch
        targets = [{"boxes": b, "labels": l} for b, l in zip(boxes, labels)]
        return sum(model(images, targets).values())
    return train_steps(loader, optimizer, steps, loss_of)


if __name__ == "__main__":
    main(__doc__, train)
