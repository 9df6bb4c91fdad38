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


class RandomIoUCrop(torch.nn.Module):
    """The SSD crop: an IoU option picked by torch.randint (>= 1: no crop), then up to `trials`
    crops of sides (min_scale + span * torch.rand(2)) times the image's in the aspect bounds,
    at offsets of torch.rand(2), kept when a box's centre lies inside it and one such box
    overlaps it by the option; the boxes outside dropped with their labels, the others moved and
    clamped; the masks, area and iscrowd left as they are."""

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40):
        super().__init__()
        self.min_scale, self.max_scale = min_scale, max_scale
        self.min_aspect_ratio, self.max_aspect_ratio = min_aspect_ratio, max_aspect_ratio
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None \
            else sampler_options
        self.trials = trials

    def forward(self, image, target):
        _, height, width = F.get_dimensions(image)
        while True:
            option = self.options[int(torch.randint(low=0, high=len(self.options), size=(1,)))]
            if option >= 1.0:
                return image, target
            for _ in range(self.trials):
                r = self.min_scale + (self.max_scale - self.min_scale) * torch.rand(2)
                new_w, new_h = int(width * r[0]), int(height * r[1])
                if not self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio:
                    continue
                r = torch.rand(2)
                left, top = int((width - new_w) * r[0]), int((height - new_h) * r[1])
                right, bottom = left + new_w, top + new_h
                if left == right or top == bottom:
                    continue
                boxes = target["boxes"]
                cx, cy = 0.5 * (boxes[:, 0] + boxes[:, 2]), 0.5 * (boxes[:, 1] + boxes[:, 3])
                inside = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
                if not inside.any():
                    continue
                boxes = boxes[inside]
                crop = torch.tensor([[left, top, right, bottom]], dtype=boxes.dtype)
                if torchvision.ops.box_iou(boxes, crop).max() < option:
                    continue
                boxes[:, 0::2] -= left
                boxes[:, 1::2] -= top
                boxes[:, 0::2].clamp_(min=0, max=new_w)
                boxes[:, 1::2].clamp_(min=0, max=new_h)
                target["boxes"], target["labels"] = boxes, target["labels"][inside]
                return F.crop(image, top, left, new_h, new_w), target


class RandomZoomOut(torch.nn.Module):
    """With probability p (torch.rand(1) < p), the PIL image placed on a canvas side_range
    times its size (one torch.rand(1)) at offsets of torch.rand(2), filled with int(fill[c]);
    the boxes moved; the masks left as they are."""

    def __init__(self, fill=None, side_range=(1.0, 4.0), p=0.5):
        super().__init__()
        self.fill = [0.0, 0.0, 0.0] if fill is None else fill
        self.side_range, self.p = side_range, p

    def forward(self, image, target):
        if torch.rand(1) >= self.p:
            return image, target
        _, height, width = F.get_dimensions(image)
        r = self.side_range[0] + torch.rand(1) * (self.side_range[1] - self.side_range[0])
        canvas_w, canvas_h = int(width * r), int(height * r)
        r = torch.rand(2)
        left, top = int((canvas_w - width) * r[0]), int((canvas_h - height) * r[1])
        padding = [left, top, canvas_w - left - width, canvas_h - top - height]
        image = F.pad(image, padding, fill=tuple(int(v) for v in self.fill))
        target["boxes"][:, 0::2] += left
        target["boxes"][:, 1::2] += top
        return image, target


class RandomPhotometricDistort(torch.nn.Module):
    """torch.rand(7) first; then, each with probability p, ColorJitter's brightness, contrast
    (before the others or after, as r[1] < 0.5 says), saturation and hue, each drawing its own
    factor as it runs (ColorJitter.get_params), and a channel order (torch.randperm), the PIL
    image through a float tensor and back."""

    def __init__(self, contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 brightness=(0.875, 1.125), p=0.5):
        super().__init__()
        jitter = torchvision.transforms.ColorJitter
        self._brightness, self._contrast = jitter(brightness=brightness), jitter(contrast=contrast)
        self._hue, self._saturation = jitter(hue=hue), jitter(saturation=saturation)
        self.p = p

    def forward(self, image, target):
        r = torch.rand(7)
        before = r[1] < 0.5
        if r[0] < self.p:
            image = self._brightness(image)
        if before and r[2] < self.p:
            image = self._contrast(image)
        if r[3] < self.p:
            image = self._saturation(image)
        if r[4] < self.p:
            image = self._hue(image)
        if not before and r[5] < self.p:
            image = self._contrast(image)
        if r[6] < self.p:
            order = torch.randperm(F.get_dimensions(image)[0])
            tensor = F.convert_image_dtype(F.pil_to_tensor(image))
            image = F.to_pil_image(tensor[..., order, :, :])
        return image, target


MEAN = (123.0, 117.0, 104.0)


class DetectionPresetTrain:
    def __init__(self, hflip_prob=0.5, data_augmentation="hflip", size=1024):
        steps = {"hflip": [],
                 "multiscale": [RandomShortestSize(min_size=(96, 128, 160), max_size=240)],
                 "lsj": [ScaleJitter(target_size=(size, size), antialias=True),
                         FixedSizeCrop(size=(size, size), fill=MEAN)],
                 "ssd": [RandomPhotometricDistort(), RandomZoomOut(fill=list(MEAN)),
                         RandomIoUCrop()],
                 "ssdlite": [RandomIoUCrop()]}[data_augmentation]
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
