"""What the detection and segmentation examples share: a stoker.Loader over a dataset of
`stoker convert coco` (image, boxes, labels, masks, ...) whose batches are lists of samples at
their own sizes (variable="list", what torchvision's detection models take): the detection
reference's `hflip` preset run natively (detection_loader), or each sample brought to one small
fixed size in Python (a plain resize: the segmentation example trains on the CPU); their training loop
(train_steps) and command line (main).
"""

import argparse

import torch
import torch.nn.functional as F

from torchvision.transforms import v2

import stoker
from stoker.transforms import DecodeImage, RawBytes

# Largest image side and mask PNG the loaders' slots hold.
MAX_IMAGE_SIDE = 2048
MAX_MASKS_BYTES = 4 << 20


def coco_loader(data: str, batch_size: int, masks: bool, seed: int = 0) -> stoker.Loader:
    """Batches of dicts: "image" a list of uint8 [3, H, W], "boxes", "labels" lists of [N, 4]
    and [N], "height"/"width" int64 [B]; "masks" a list of stacked mask PNGs if `masks`."""
    transforms = {"image": DecodeImage(max_size=MAX_IMAGE_SIDE), "area": None, "iscrowd": None,
                  "image_id": None,
                  "masks": RawBytes(max_length=MAX_MASKS_BYTES) if masks else None}
    return stoker.Loader(data, shuffle=True, batch_size=batch_size, seed=seed, transforms=transforms,
                         batch_format="dict", variable="list")


def hflip_preset(hflip_prob: float = 0.5) -> v2.Compose:
    """The detection reference's DetectionPresetTrain(data_augmentation="hflip", backend="pil",
    use_v2=True), DecodeImage first for the image's capacity: stoker.Loader runs it natively on
    each (image, target)."""
    return v2.Compose([DecodeImage(max_size=MAX_IMAGE_SIDE), v2.RandomHorizontalFlip(hflip_prob),
                       v2.ToImage(), v2.ToDtype(torch.float, scale=True),
                       v2.ConvertBoundingBoxFormat("XYXY"), v2.SanitizeBoundingBoxes(),
                       v2.ToPureTensor()])


def detection_loader(data: str, batch_size: int, seed: int = 0) -> stoker.Loader:
    """Batches of (images, boxes, labels), lists of float32 [3, H, W], [N, 4] and [N]: the
    hflip preset's samples (degenerate boxes dropped with their labels). Two batches ahead: a
    float32 image's slot holds MAX_IMAGE_SIDE² pixels."""
    return stoker.Loader(data, shuffle=True, batch_size=batch_size, seed=seed, transforms=hflip_preset(),
                         batch_format=("image", "boxes", "labels"), variable="list", prefetch=2)


def resized_image(image: torch.Tensor, size: int) -> torch.Tensor:
    """uint8 [3, H, W] to float32 [3, size, size] in [0, 1] (bilinear)."""
    x = image.unsqueeze(0).float() / 255
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)[0]


def resized_boxes(boxes: torch.Tensor, height: int, width: int, size: int) -> torch.Tensor:
    """XYXY boxes of an H x W image scaled to a size x size one."""
    scale = torch.tensor([size / width, size / height, size / width, size / height])
    return boxes * scale


def resized_masks(masks: torch.Tensor, size: int) -> torch.Tensor:
    """uint8 [N, H, W] masks to [N, size, size] (nearest)."""
    if len(masks) == 0:
        return torch.zeros((0, size, size), dtype=torch.uint8)
    return F.interpolate(masks.unsqueeze(0).float(), size=(size, size), mode="nearest")[0].byte()


def samples(batch: dict, size: int):
    """Per sample of `batch`: (image, boxes, labels, masks or None, height, width), the image
    and boxes at size x size and masks (decoded from their PNG) too."""
    for k, image in enumerate(batch["image"]):
        h, w = int(batch["height"][k]), int(batch["width"][k])
        masks = None
        if "masks" in batch:
            masks = resized_masks(stoker.decode_masks(batch["masks"][k], h, w), size)
        yield (resized_image(image, size), resized_boxes(batch["boxes"][k], h, w, size),
               batch["labels"][k], masks)


def main(doc: str, train) -> None:
    """An example's command line: DATA [--steps] [--batch-size] [--size] [--threads], then
    train(data, steps, batch_size, size)."""
    parser = argparse.ArgumentParser(description=doc,
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
