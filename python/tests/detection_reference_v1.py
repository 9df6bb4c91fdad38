"""The detection reference's own v1 path (references/detection/: coco_utils.get_coco with
use_v2=False, transforms.py, presets.py), which torchvision does not install, written here by
its definition with torchvision's kernels: the datasets test_reference_v1_detection.py and
bench/python_dataset.py --section coco-v1 give stoker.Loader and DataLoader."""

import torch
import torchvision
from pycocotools import mask as coco_mask

F = torchvision.transforms.functional


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image, target):
        for step in self.transforms:
            image, target = step(image, target)
        return image, target


class RandomHorizontalFlip(torchvision.transforms.RandomHorizontalFlip):
    """Flips the image, the boxes' x and the masks when torch.rand(1) < p."""

    def forward(self, image, target=None):
        if torch.rand(1) < self.p:
            image = F.hflip(image)
            if target is not None:
                width = F.get_dimensions(image)[2]
                target["boxes"][:, [0, 2]] = width - target["boxes"][:, [2, 0]]
                if "masks" in target:
                    target["masks"] = target["masks"].flip(-1)
        return image, target


class PILToTensor(torch.nn.Module):
    def forward(self, image, target=None):
        return F.pil_to_tensor(image), target


class ToDtype(torch.nn.Module):
    def __init__(self, dtype, scale=False):
        super().__init__()
        self.dtype, self.scale = dtype, scale

    def forward(self, image, target=None):
        if self.scale:
            return F.convert_image_dtype(image, self.dtype), target
        return image.to(dtype=self.dtype), target


def polygons_to_mask(segmentations, height, width):
    """Each object's segmentation decoded by pycocotools and its parts united: uint8 [N, H, W]
    (torch's any keeps uint8)."""
    masks = []
    for segmentation in segmentations:
        mask = coco_mask.decode(coco_mask.frPyObjects(segmentation, height, width))
        mask = torch.as_tensor(mask if mask.ndim == 3 else mask[..., None], dtype=torch.uint8)
        masks.append(mask.any(dim=2))
    return torch.stack(masks) if masks else torch.zeros((0, height, width), dtype=torch.uint8)


class ConvertCocoPolysToMask:
    """The crowds left out; XYWH boxes to XYXY in float32, clamped to the image; the objects
    with an empty box left out of boxes, labels and masks (area and iscrowd keep them)."""

    def __call__(self, image, target):
        width, height = image.size
        objects = [a for a in target["annotations"] if a["iscrowd"] == 0]
        boxes = torch.as_tensor([a["bbox"] for a in objects], dtype=torch.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        boxes[:, 0::2].clamp_(min=0, max=width)
        boxes[:, 1::2].clamp_(min=0, max=height)
        labels = torch.tensor([a["category_id"] for a in objects], dtype=torch.int64)
        masks = polygons_to_mask([a["segmentation"] for a in objects], height, width)
        keep = (boxes[:, 3] > boxes[:, 1]) & (boxes[:, 2] > boxes[:, 0])
        return image, {"boxes": boxes[keep], "labels": labels[keep], "masks": masks[keep],
                       "image_id": target["image_id"],
                       "area": torch.tensor([a["area"] for a in objects]),
                       "iscrowd": torch.tensor([a["iscrowd"] for a in objects])}


class CocoDetection(torchvision.datasets.CocoDetection):
    def __init__(self, img_folder, ann_file, transforms):
        super().__init__(img_folder, ann_file)
        self._transforms = transforms

    def __getitem__(self, idx):
        image, annotations = super().__getitem__(idx)
        target = {"image_id": self.ids[idx], "annotations": annotations}
        if self._transforms is not None:
            image, target = self._transforms(image, target)
        return image, target


def resize_target(target, size, width, height):
    """The boxes scaled by the new size over the old (float32), the masks resized nearest."""
    new_height, new_width = size
    target["boxes"][:, 0::2] *= new_width / width
    target["boxes"][:, 1::2] *= new_height / height
    target["masks"] = F.resize(target["masks"], size,
                               interpolation=F.InterpolationMode.NEAREST)


class RandomShortestSize(torch.nn.Module):
    """The short side set to a min_size picked by torch.randint, the long one within max_size."""

    def __init__(self, min_size, max_size, interpolation=F.InterpolationMode.BILINEAR):
        super().__init__()
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size, self.interpolation = max_size, interpolation

    def forward(self, image, target):
        _, height, width = F.get_dimensions(image)
        min_size = self.min_size[torch.randint(len(self.min_size), (1,)).item()]
        r = min(min_size / min(height, width), self.max_size / max(height, width))
        size = [int(height * r), int(width * r)]
        image = F.resize(image, size, interpolation=self.interpolation)
        resize_target(target, size, width, height)
        return image, target


class ScaleJitter(torch.nn.Module):
    """Scaled to fit target_size (height, width) times a scale drawn in scale_range."""

    def __init__(self, target_size, scale_range=(0.1, 2.0),
                 interpolation=F.InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.target_size, self.scale_range = target_size, scale_range
        self.interpolation, self.antialias = interpolation, antialias

    def forward(self, image, target):
        _, height, width = F.get_dimensions(image)
        low, high = self.scale_range
        scale = low + torch.rand(1) * (high - low)
        r = min(self.target_size[1] / height, self.target_size[0] / width) * scale
        size = [int(height * r), int(width * r)]
        image = F.resize(image, size, interpolation=self.interpolation,
                         antialias=self.antialias)
        resize_target(target, size, width, height)
        return image, target


class FixedSizeCrop(torch.nn.Module):
    """Cut to at most (height, width) at offsets of one torch.rand(1), the boxes moved and
    clamped and the empty ones dropped with their labels and masks; then padded right and
    bottom, the image with `fill`, the masks with 0."""

    def __init__(self, size, fill=0, padding_mode="constant"):
        super().__init__()
        self.crop_height, self.crop_width = size
        self.fill, self.padding_mode = fill, padding_mode

    def forward(self, image, target):
        _, height, width = F.get_dimensions(image)
        cut_h, cut_w = min(height, self.crop_height), min(width, self.crop_width)
        if (cut_h, cut_w) != (height, width):
            r = torch.rand(1)
            top = int(max(height - self.crop_height, 0) * r)
            left = int(max(width - self.crop_width, 0) * r)
            image = F.crop(image, top, left, cut_h, cut_w)
            boxes = target["boxes"]
            boxes[:, 0::2] -= left
            boxes[:, 1::2] -= top
            boxes[:, 0::2].clamp_(min=0, max=cut_w)
            boxes[:, 1::2].clamp_(min=0, max=cut_h)
            keep = (boxes[:, 0] < boxes[:, 2]) & (boxes[:, 1] < boxes[:, 3])
            target["boxes"], target["labels"] = boxes[keep], target["labels"][keep]
            target["masks"] = F.crop(target["masks"][keep], top, left, cut_h, cut_w)
        padding = [0, 0, self.crop_width - cut_w, self.crop_height - cut_h]
        if padding[2] or padding[3]:
            image = F.pad(image, padding, self.fill, self.padding_mode)
            target["masks"] = F.pad(target["masks"], padding, 0, "constant")
        return image, target


MEAN = (123.0, 117.0, 104.0)


class DetectionPresetTrain:
    def __init__(self, hflip_prob=0.5, data_augmentation="hflip", size=1024):
        steps = {"hflip": [],
                 "multiscale": [RandomShortestSize(min_size=(96, 128, 160), max_size=240)],
                 "lsj": [ScaleJitter(target_size=(size, size), antialias=True),
                         FixedSizeCrop(size=(size, size), fill=MEAN)]}[data_augmentation]
        self.transforms = Compose(steps + [RandomHorizontalFlip(p=hflip_prob), PILToTensor(),
                                           ToDtype(torch.float, scale=True)])

    def __call__(self, image, target):
        return self.transforms(image, target)


class DetectionPresetEval:
    def __init__(self):
        self.transforms = Compose([PILToTensor(), ToDtype(torch.float, scale=True)])

    def __call__(self, image, target):
        return self.transforms(image, target)


def with_annotations(dataset):
    """The training set: the images with an object whose box is wider and taller than 1."""
    keep = [k for k, image_id in enumerate(dataset.ids)
            if any(all(side > 1 for side in a["bbox"][2:])
                   for a in dataset.coco.loadAnns(dataset.coco.getAnnIds(imgIds=image_id)))]
    return torch.utils.data.Subset(dataset, keep)


def get_coco(coco_set, train, preset):
    dataset = CocoDetection(coco_set / "images", coco_set / "annotations" / "instances.json",
                            Compose([ConvertCocoPolysToMask()] + ([preset] if preset else [])))
    return with_annotations(dataset) if train else dataset


def collate_fn(batch):
    return tuple(zip(*batch))
