"""torchvision v2 transforms on a detection sample (image, target) run natively by stoker.Loader
(stoker/_joint.py, pipeline/joint_pipeline.h): the detection reference's presets (`hflip`,
`multiscale`, `ssdlite`, `ssd`, `lsj`) and the segmentation preset on the converted COCO-shaped
set equal torchvision's v2 on CocoDetection's samples for the same draws (image floats, boxes,
labels, masks, each bit): draws recovered from stoker's output, or stoker's own computed
(sample_draws.py) and given to torchvision; bad records and parameters are one line naming the
field or the transform."""

import itertools
import math
import re
from collections import defaultdict

import numpy as np
import pytest
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F
from torchvision.transforms.v2._utils import _get_fill, _setup_fill_arg

import stoker
from stoker.transforms import DecodeImage

from sample_draws import SampleDraws
from test_coco_import import torchvision_samples

SEED = 3  # stoker_samples' loader seed


def hflip_preset(p, max_size=None, min_size=1.0):
    """The detection reference's DetectionPresetTrain(data_augmentation="hflip", backend="pil",
    use_v2=True) with flip probability p and SanitizeBoundingBoxes' min_size (stoker's
    DecodeImage first, where given, sets the image's capacity)."""
    steps = [v2.RandomHorizontalFlip(p=p), v2.ToImage(), v2.ToDtype(torch.float, scale=True),
             v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
             v2.SanitizeBoundingBoxes(min_size=min_size), v2.ToPureTensor()]
    return v2.Compose(([DecodeImage(max_size=max_size)] if max_size else []) + steps)


def reference_target(image, target):
    """`target` with the empty boxes, labels and masks of an image without objects (the v2
    wrapper leaves them out; SanitizeBoundingBoxes needs boxes)."""
    if "boxes" in target:
        return target
    h, w = image.height, image.width
    return dict(target, boxes=tv_tensors.BoundingBoxes(torch.zeros((0, 4)), format="XYXY",
                                                       canvas_size=(h, w)),
                labels=torch.zeros(0, dtype=torch.int64),
                masks=tv_tensors.Mask(torch.zeros((0, h, w), dtype=torch.uint8)))


def largest_side(reference):
    return max(max(image.size) for image, _ in reference)


def stoker_samples(dataset, transforms, **options):
    options = {"batch_size": 5, **options}
    loader = stoker.Loader(dataset, shuffle=False, batch_format="dict", variable="list",
                           transforms=transforms, seed=SEED, **options)
    for batch in loader:
        for k in range(len(batch["image"])):
            yield {name: batch[name][k].clone() for name in ("image", "boxes", "labels", "masks")
                   if name in batch}


def equal_to(sample, image, target):
    """True if stoker's `sample` is torchvision's (image, target), each bit (masks where stoker
    made them)."""
    return (torch.equal(sample["image"], image) and torch.equal(sample["boxes"], target["boxes"])
            and torch.equal(sample["labels"], target["labels"])
            and ("masks" not in sample or torch.equal(sample["masks"], target["masks"])))


@pytest.mark.parametrize("p, min_size", [(0.0, 1.0), (1.0, 1.0), (1.0, 40.0)])
def test_the_hflip_preset_equals_torchvision_v2(coco_set, coco_dataset, p, min_size):
    """The preset as the reference has it, and with SanitizeBoundingBoxes(min_size=40), which
    drops objects of the set (its default drops none: no degenerate box)."""
    reference = torchvision_samples(coco_set)
    preset = hflip_preset(p, min_size=min_size)
    samples = list(stoker_samples(coco_dataset, hflip_preset(p, largest_side(reference),
                                                             min_size)))
    assert len(samples) == len(reference) == 24
    dropped = 0
    for k, sample in enumerate(samples):
        image, target = reference[k]
        target = reference_target(image, target)
        want_image, want = preset(image, target)
        assert sample["image"].dtype == torch.float32
        assert torch.equal(sample["image"], want_image), k
        assert torch.equal(sample["boxes"], want["boxes"]), k
        assert torch.equal(sample["labels"], want["labels"]), k
        assert torch.equal(sample["masks"], want["masks"]), k
        dropped += len(target["labels"]) - len(want["labels"])
    # SanitizeBoundingBoxes dropped objects (boxes, labels and masks) where it should.
    assert (dropped > 0) == (min_size > 1)


def test_one_flip_draw_moves_image_boxes_and_masks(coco_set, coco_dataset):
    """p=0.5: each sample is torchvision's unflipped or flipped sample, whole; both occur."""
    reference = torchvision_samples(coco_set)
    flipped = []
    for k, sample in enumerate(stoker_samples(coco_dataset,
                                              hflip_preset(0.5, largest_side(reference)))):
        image, target = reference[k]
        target = reference_target(image, target)
        kept, mirrored = (hflip_preset(p)(image, target) for p in (0.0, 1.0))
        flipped.append(equal_to(sample, *mirrored))
        assert flipped[-1] or equal_to(sample, *kept), k
    assert 0 < sum(flipped) < len(flipped)


def png_of(width, height, mode="RGB"):
    import io

    from PIL import Image
    out = io.BytesIO()
    Image.new(mode, (width, height), (10, 20, 30) if mode == "RGB" else 1).save(out, format="PNG")
    return out.getvalue()


def detections_with(path, boxes, labels, masks=None):
    """A dataset of two records of an 8x6 image: record 0 one fine box (and mask), record 1
    `boxes`, `labels` and `masks` (a PNG of its masks stacked; default one a box). Boxes and
    labels name different dimensions, so the writer takes any counts."""
    schema = {"image": "bytes", "boxes": ("float32", ("N", 4)), "labels": ("int64", ("M",)),
              "masks": "bytes"}
    masks = png_of(8, 6 * len(boxes), "L") if masks is None else masks
    samples = [{"image": png_of(8, 6), "boxes": np.array(b, np.float32).reshape(-1, 4),
                "labels": np.array(l, np.int64), "masks": m}
               for b, l, m in [([[1, 1, 4, 4]], [1], png_of(8, 6, "L")),
                               (boxes, labels, masks)]]
    stoker.write_dataset(path, samples, schema=schema)
    return path


@pytest.mark.parametrize("boxes, labels, masks, message", [
    ([[1, 1, 8.5, 4]], [1], None,
     r"field 'boxes': box 0 \(1, 1, 8.5, 4\) lies outside the 8x6 image"),
    ([[1, -1, 3, 4]], [1], None,
     r"field 'boxes': box 0 \(1, -1, 3, 4\) lies outside the 8x6 image"),
    ([[1, 1, 4, 4], [2, 2, 5, 5]], [1], None, r"field 'labels': 1 labels for 2 boxes in 'boxes'"),
    ([[1, 1, 4, 4]], [1], png_of(8, 12, "L"),
     r"field 'masks': 1 masks of the 8x6 image: PNG: 8x12, not 8x6"),
])
def test_a_bad_detection_record_is_one_line_naming_it_and_the_field(tmp_path, boxes, labels,
                                                                    masks, message):
    path = detections_with(tmp_path / "ds", boxes, labels, masks)
    loader = stoker.Loader(path, batch_size=2, shuffle=False, batch_format="dict",
                           transforms=hflip_preset(1.0, 16))
    with pytest.raises(ValueError, match=r"record 1: " + message) as raised:
        list(loader)
    assert "\n" not in str(raised.value)
    skipped = stoker.Loader(path, batch_size=2, shuffle=False, batch_format="dict",
                            transforms=hflip_preset(1.0, 16), on_error="skip")
    batches = list(skipped)
    assert len(batches) == 1 and len(batches[0]["image"]) == 1
    assert batches[0]["boxes"][0].tolist() == [[4, 1, 7, 4]]  # record 0, flipped
    assert batches[0]["masks"][0].shape == (1, 6, 8)


def test_a_v1_step_on_a_detection_sample_is_named(coco_dataset):
    """torchvision v1's classes take an image alone: on (image, target) a wrong step, not one
    for Python (an untranslated v2 step runs there: test_joint_python.py)."""
    from torchvision import transforms as v1
    with pytest.raises(ValueError, match=r"field 'image' \(a detection sample.*torchvision."
                                         r"transforms.*RandomVerticalFlip is not a torchvision"
                                         r" v2 transform"):
        stoker.Loader(coco_dataset, batch_size=256, shuffle=True, transforms=v2.Compose([v1.RandomVerticalFlip(),
                                                           v2.ToImage()]))


def multiscale_preset(min_size, max_size=None):
    """The detection reference's `multiscale` preset (backend="pil", use_v2=True) with its
    RandomShortestSize's sizes `min_size`, the flip left out (p=0)."""
    return v2.Compose([v2.RandomShortestSize(min_size=min_size, max_size=max_size),
                       v2.RandomHorizontalFlip(p=0.0), v2.ToImage(),
                       v2.ToDtype(torch.float, scale=True),
                       v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
                       v2.SanitizeBoundingBoxes(), v2.ToPureTensor()])


def test_the_multiscale_preset_equals_torchvision_v2(coco_set, coco_dataset):
    """RandomShortestSize: each sample is torchvision's for one of the sizes (stoker's draw),
    the image by PIL's bilinear, masks nearest, boxes scaled; several sizes occur."""
    sizes, max_size = (96, 160, 211), 300
    reference = torchvision_samples(coco_set)
    natively = v2.Compose([DecodeImage(max_size=largest_side(reference)),
                           *multiscale_preset(sizes, max_size).transforms])
    chosen = set()
    for k, sample in enumerate(stoker_samples(coco_dataset, natively)):
        image, target = reference[k]
        target = reference_target(image, target)
        matches = [s for s in sizes if equal_to(sample, *multiscale_preset([s], max_size)(
            image, target))]
        assert matches, k
        chosen.add(matches[0])
    assert len(chosen) > 1


def test_clamp_and_the_padded_form(coco_set, coco_dataset):
    """ClampBoundingBoxes in the preset (stoker's boxes are inside their image: clamping keeps
    them), and variable="padded": each sample's rows within its NAME_sizes, zeros around."""
    reference = torchvision_samples(coco_set)
    steps = hflip_preset(1.0).transforms
    preset = v2.Compose([steps[0], v2.ClampBoundingBoxes(), *steps[1:]])
    loader = stoker.Loader(coco_dataset, batch_size=5, shuffle=False, batch_format="dict",
                           variable="padded", transforms=v2.Compose(
                               [DecodeImage(max_size=largest_side(reference)), preset]))
    seen = 0
    for batch in loader:
        for k in range(len(batch["image"])):
            image, target = reference[seen]
            want_image, want = preset(image, reference_target(image, target))
            h, w = batch["image_sizes"][k, 1:].tolist()
            n = batch["boxes_sizes"][k, 0].item()
            assert torch.equal(batch["image"][k, :, :h, :w], want_image)
            assert batch["image"][k, :, h:].abs().sum() == 0
            assert torch.equal(batch["boxes"][k, :n], want["boxes"])
            assert torch.equal(batch["labels"][k, :n], want["labels"])
            assert torch.equal(batch["masks"][k, :n, :h, :w], want["masks"])
            seen += 1
    assert seen == 24


MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


SEGMENTATION_FILL = {tv_tensors.Mask: 255, "others": 0}


class PadIfSmaller:
    """The segmentation reference's PadIfSmaller(size, fill) (references/segmentation/
    v2_extras.py, which torchvision does not install), by its definition: the right and bottom
    of (image, mask) padded up to `size`, each with its type's fill (v2's _get_fill of the fill
    dict). stoker knows it by its name and attributes."""

    def __init__(self, size, fill=0):
        self.size, self.fill = size, _setup_fill_arg(fill)

    def __call__(self, image, mask):
        padding = [0, 0, max(self.size - image.width, 0), max(self.size - image.height, 0)]
        if not any(padding):
            return image, mask
        return tuple(F.pad(x, padding, fill=_get_fill(self.fill, type(x))) for x in (image, mask))


def segmentation_tail(crop, pad="pad_if_needed"):
    """The segmentation reference's preset after its resize and flip (backend="pil",
    use_v2=True): its PadIfSmaller and RandomCrop (fill 255 for the mask, 0 else), or RandomCrop's
    pad_if_needed padding both ends instead."""
    if pad == "pad_if_smaller":
        cropping = [PadIfSmaller(crop, fill=dict(SEGMENTATION_FILL)), v2.RandomCrop(crop)]
    else:
        cropping = [v2.RandomCrop(crop, pad_if_needed=True, fill=dict(SEGMENTATION_FILL))]
    return [*cropping, v2.PILToTensor(),
            v2.ToDtype({torch.Tensor: torch.float32, tv_tensors.Mask: torch.int64,
                        "others": None}, scale=True),
            v2.Normalize(MEAN, STD), v2.ToPureTensor()]


def segmentation_head(size, p):
    """RandomResize to a shorter side of `size` (its one choice) and a flip of probability p."""
    return [v2.RandomResize(size, size + 1), v2.RandomHorizontalFlip(p)]


def every_crop(image, mask, crop, pad):
    """What segmentation_tail(crop, pad) makes of (image, mask) at every crop position:
    torchvision's RandomCrop with its draws (torch.randint) replaced by each top and left."""
    tail = v2.Compose(segmentation_tail(crop, pad))
    h, w = mask.shape[-2:]
    if pad == "pad_if_smaller":
        padded_h, padded_w = max(h, crop), max(w, crop)
    else:
        padded_h, padded_w = h + 2 * max(crop - h, 0), w + 2 * max(crop - w, 0)
    randint = torch.randint
    try:
        for top in range(padded_h - crop + 1):
            for left in range(padded_w - crop + 1):
                draws = iter([top] * (padded_h > crop) + [left] * (padded_w > crop))
                torch.randint = lambda *args, **kwargs: torch.tensor(next(draws))
                yield tail(image, mask)
    finally:
        torch.randint = randint


@pytest.mark.parametrize("size, p, pad", [(56, 0.0, "pad_if_needed"), (72, 1.0, "pad_if_needed"),
                                         (56, 1.0, "pad_if_smaller"),
                                         (72, 0.0, "pad_if_smaller")])
def test_the_segmentation_preset_equals_torchvision_v2(mask_folders, tmp_path, size, p, pad):
    """RandomResize + flip + PadIfSmaller and RandomCrop (or RandomCrop(pad_if_needed)) +
    ToDtype + Normalize on (image, class map) of `stoker convert masks`: each sample is
    torchvision's at one crop position (the image padded with 0, the mask with 255 where the
    resized image is smaller than the crop: right and bottom, or both ends)."""
    from PIL import Image
    stoker.convert("masks", mask_folders / "images", tmp_path / "ds",
                   masks=mask_folders / "masks")
    crop = 64
    natively = v2.Compose([DecodeImage(max_size=1600), *segmentation_head(size, p),
                           *segmentation_tail(crop, pad)])
    loader = stoker.Loader(tmp_path / "ds", batch_size=4, shuffle=False, batch_format="dict",
                           variable="list", transforms=natively, prefetch=1)
    names = sorted(path.name for path in (mask_folders / "images").iterdir())
    seen, padded = 0, 0
    for batch in loader:
        for k in range(len(batch["image"])):
            name = names[seen]
            with Image.open(mask_folders / "images" / name) as pil:
                image = pil.convert("RGB")
            with Image.open(mask_folders / "masks" / name.replace(".jpg", ".png")) as pil:
                mask = tv_tensors.Mask(torch.from_numpy(np.asarray(pil).copy()))
            image, mask = v2.Compose(segmentation_head(size, p))(image, mask)
            got_image, got_mask = batch["image"][k], batch["mask"][k]
            assert got_image.shape == (3, crop, crop) and got_mask.dtype == torch.int64
            assert any(torch.equal(got_image, want_image) and torch.equal(got_mask, want_mask)
                       for want_image, want_mask in every_crop(image, mask, crop, pad)), name
            padded += int((got_mask == 255).all(dim=1).any())
            seen += 1
    assert seen == 24
    assert (padded > 0) == (size < crop)  # rows of the mask's fill where the crop padded


def test_batch_format_may_name_what_the_joint_transform_makes(mask_folders, tmp_path):
    """The class map is a bytes field as stored, made by the joint transform: batch_format
    names it as the segmentation reference's loop unpacks it, the same batches as a dict."""
    stoker.convert("masks", mask_folders / "images", tmp_path / "ds",
                   masks=mask_folders / "masks")
    preset = v2.Compose([DecodeImage(max_size=1600), *segmentation_head(56, 1.0),
                         *segmentation_tail(64)])
    common = dict(batch_size=4, shuffle=False, variable="list", transforms=preset, prefetch=1)
    as_dict = next(iter(stoker.Loader(tmp_path / "ds", batch_format="dict", **common)))
    image, mask = next(iter(stoker.Loader(tmp_path / "ds", batch_format=("image", "mask"),
                                          **common)))
    assert len(mask) == 4 and mask[0].dtype == torch.int64
    assert all(torch.equal(a, b) for a, b in zip(as_dict["mask"], mask))
    assert all(torch.equal(a, b) for a, b in zip(as_dict["image"], image))


@pytest.mark.parametrize("steps, message", [
    ([v2.RandomResize(40, 41), v2.RandomCrop(64)],
     r"joint_random_crop: the \d+x40 image is smaller than the 64x64 crop \(no pad_if_needed\)"),
])
def test_bad_segmentation_steps_are_one_line(mask_folders, tmp_path, steps, message):
    """RandomCrop without padding on a smaller sample (torchvision refuses it too)."""
    stoker.convert("masks", mask_folders / "images", tmp_path / "ds",
                   masks=mask_folders / "masks")
    with pytest.raises(ValueError, match=message) as raised:
        loader = stoker.Loader(tmp_path / "ds", shuffle=True, batch_size=2, batch_format="dict",
                               transforms=v2.Compose([DecodeImage(max_size=1600), *steps,
                                                      v2.PILToTensor()]))
        next(iter(loader))
    assert "\n" not in str(raised.value)


def ssdlite_preset(p, to_float=True):
    """The detection reference's `ssdlite` preset (backend="pil", use_v2=True), flip
    probability p; without ToDtype where not `to_float` (the same draws: the crop found in
    uint8)."""
    return v2.Compose([v2.RandomIoUCrop(), v2.RandomHorizontalFlip(p=p), v2.ToImage(),
                       *([v2.ToDtype(torch.float, scale=True)] if to_float else []),
                       v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
                       v2.SanitizeBoundingBoxes(), v2.ToPureTensor()])


def crop_positions(image, cropped):
    """Every (top, left) of the uint8 [3, h, w] `cropped` in the PIL `image`, found by its most
    varied row of a few (a row of a zoom's fill alone would match everywhere)."""
    whole = np.asarray(image)
    part = cropped.permute(1, 2, 0).numpy()
    h, w = part.shape[:2]
    key = max(range(0, h, max(1, h // 16)), key=lambda r: len(np.unique(part[r])))
    wanted = part[key].tobytes()
    for top in range(whole.shape[0] - h + 1):
        row, at = whole[top + key].tobytes(), -1
        while (at := row.find(wanted, at + 1)) >= 0:
            if at % 3 == 0 and np.array_equal(whole[top:top + h, at // 3:at // 3 + w], part):
                yield top, at // 3


def found_crop(image, target, cropped):
    """Each RandomIoUCrop params (v2's make_params) of a crop of (image, target) whose image is
    the uint8 [3, h, w] `cropped` (one: no crop; several where the image repeats, as a zoom's
    fill does)."""
    h, w = cropped.shape[1:]
    if (h, w) == (image.height, image.width):
        yield {}
        return
    boxes = target["boxes"].as_subclass(torch.Tensor)
    cx, cy = 0.5 * (boxes[:, 0] + boxes[:, 2]), 0.5 * (boxes[:, 1] + boxes[:, 3])
    for top, left in crop_positions(image, cropped):
        within = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
        yield dict(top=top, left=left, height=h, width=w, is_within_crop_area=within)


def with_params(step, params):
    """v2 transform `step` whose draw gives `params`: its make_params (_get_params before
    torchvision 0.21)."""
    step.make_params = step._get_params = lambda flat_inputs: params
    return step


def cropping(params):
    """v2's RandomIoUCrop drawing `params` (the crop stoker drew)."""
    return with_params(v2.RandomIoUCrop(), params)


def test_the_ssdlite_preset_equals_torchvision_v2(coco_set, coco_dataset):
    """RandomIoUCrop: each sample is torchvision's RandomIoUCrop output for the crop stoker drew
    (found in the image; the boxes whose centre it holds kept and clamped, the others zeroed,
    then sanitized); crops and uncropped samples both occur."""
    reference = torchvision_samples(coco_set)
    first = DecodeImage(max_size=largest_side(reference))
    natively = list(stoker_samples(coco_dataset, v2.Compose([first, ssdlite_preset(0.0)])))
    in_uint8 = list(stoker_samples(coco_dataset, v2.Compose([first,
                                                             ssdlite_preset(0.0, False)])))
    cropped = 0
    for k, (sample, plain) in enumerate(zip(natively, in_uint8)):
        image, target = reference[k]
        target = reference_target(image, target)
        params = next(found_crop(image, target, plain["image"]))
        cropped += bool(params)
        want_image, want = v2.Compose([cropping(params), *ssdlite_preset(0.0).transforms[1:]])(
            image, target)
        assert equal_to(sample, want_image, want), k
    assert 0 < cropped < len(natively)


MEAN_PIXEL = (123.0, 117.0, 104.0)  # the detection presets' mean, their fill


def draws_of(k, step):
    """Sample k's draws at joint step `step` (the step-th operation of its joint transform, from
    1) in stoker_samples' first epoch."""
    return SampleDraws(SEED, 0, k, step)


def drawing(transform, draws):
    """`transform` run with torch.rand giving `draws`' float32 draws in turn (torch.rand's float
    values are multiples of 2^-24 too): torchvision's own make_params on stoker's draws."""
    def rand(*size, **kwargs):
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        values = [draws.next_float() for _ in range(math.prod(shape))]
        return torch.tensor(values, dtype=torch.float32).reshape(shape)

    def run(*inputs):
        torch_rand, torch.rand = torch.rand, rand
        try:
            return transform(*inputs)
        finally:
            torch.rand = torch_rand
    return run


def uint8_tail(p=0.0):
    """The detection presets' steps after their augmentation, the image left uint8."""
    return [v2.RandomHorizontalFlip(p=p), v2.ToImage(),
            v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
            v2.SanitizeBoundingBoxes(), v2.ToPureTensor()]


def ssd_fill():
    """The `ssd` preset's RandomZoomOut fill (use_v2=True): the mean by default, 0 for masks
    (torchvision's _get_fill finds no entry for a PIL image in it: the image fills with 0)."""
    return defaultdict(lambda: MEAN_PIXEL, {tv_tensors.Mask: 0})


@pytest.mark.parametrize("fill, p", [("ssd", 1.0), ("per channel", 0.5)])
def test_random_zoom_out_equals_torchvision_v2(coco_set, coco_dataset, fill, p):
    """RandomZoomOut (side_range (1, 2)): each sample is torchvision's v2 RandomZoomOut given
    stoker's draws as torch.rand's: the canvas, the image's place on it, its fill (the ssd
    preset's, or per channel, truncated as PIL's pad), masks padded with theirs, boxes moved;
    p=0.5 zooms some samples."""
    reference = torchvision_samples(coco_set)

    def zoom():
        fills = ssd_fill() if fill == "ssd" else {tv_tensors.Mask: 3, "others": (10, 200, 30.7)}
        return v2.RandomZoomOut(fill=fills, side_range=(1.0, 2.0), p=p)
    natively = v2.Compose([DecodeImage(max_size=2 * largest_side(reference)), zoom(),
                           *uint8_tail()])
    zoomed = 0
    for k, sample in enumerate(stoker_samples(coco_dataset, natively)):
        image, target = reference[k]
        target = reference_target(image, target)
        want = v2.Compose([drawing(zoom(), draws_of(k, 1)), *uint8_tail()])(image, target)
        assert equal_to(sample, *want), k
        zoomed += sample["image"].shape[1:] != (image.height, image.width)
    assert zoomed > 0 and (p == 1.0 or zoomed < len(reference))


def photometric_params(draws, step):
    """v2 RandomPhotometricDistort `step`'s make_params as ops/random_photometric_distort.cc
    draws it."""
    params = {}
    for name in ("brightness", "contrast", "saturation", "hue"):
        low, high = getattr(step, name)
        on = draws.next_double() < step.p
        params[f"{name}_factor"] = (float(np.float32(low + (high - low) * draws.next_double()))
                                    if on else None)
    params["contrast_before"] = draws.next_double() < 0.5
    if draws.next_double() < step.p:
        order = list(itertools.permutations(range(3)))[int(6 * draws.next_double())]
        params["channel_permutation"] = torch.tensor(order)
    else:
        params["channel_permutation"] = None
    return params


def distorting(step, draws):
    """v2 RandomPhotometricDistort `step` with its make_params giving stoker's draws."""
    return with_params(step, photometric_params(draws, step))


@pytest.mark.parametrize("p, ranges", [(1.0, {}), (0.5, {}),
                                       (1.0, dict(brightness=(0.2, 2.5), contrast=(0.1, 3.0),
                                                  saturation=(0.0, 3.0), hue=(-0.5, 0.5)))])
def test_random_photometric_distort_equals_torchvision_v2(coco_set, coco_dataset, p, ranges):
    """RandomPhotometricDistort on PIL images (the `ssd` preset's, before ToImage): each sample's
    pixels are torchvision's for stoker's draws (factors, order, channel permutation); boxes
    and masks unchanged; permutations and, at p=0.5, skipped adjustments both occur."""
    reference = torchvision_samples(coco_set)

    def distort():
        return v2.RandomPhotometricDistort(p=p, **ranges)
    natively = v2.Compose([DecodeImage(max_size=largest_side(reference)), distort(),
                           *uint8_tail()])
    permuted, skipped = 0, 0
    for k, sample in enumerate(stoker_samples(coco_dataset, natively)):
        image, target = reference[k]
        target = reference_target(image, target)
        step = distorting(distort(), draws_of(k, 1))
        want = v2.Compose([step, *uint8_tail()])(image, target)
        assert equal_to(sample, *want), k
        params = step.make_params([])
        permuted += params["channel_permutation"] is not None
        skipped += any(v is None for v in params.values())
    assert permuted > 0 and (skipped > 0) == (p < 1)


def ssd_preset(p, to_float=True):
    """The detection reference's `ssd` preset (backend="pil", use_v2=True), flip probability p,
    without ToDtype where not `to_float`."""
    return v2.Compose([v2.RandomPhotometricDistort(), v2.RandomZoomOut(fill=ssd_fill()),
                       *ssdlite_preset(p, to_float).transforms])


def test_the_ssd_preset_equals_torchvision_v2(coco_set, coco_dataset):
    """RandomPhotometricDistort, RandomZoomOut, RandomIoUCrop, flip, ToDtype, sanitize on the
    first 8 samples: each is torchvision's for stoker's draws (the distortion's and the zoom's
    given to v2, the IoU crop found in the zoomed image). Masks left out: their slots would be
    4 times the largest image square for each object (the zoom's test covers them)."""
    reference = torchvision_samples(coco_set)
    first = DecodeImage(max_size=4 * largest_side(reference))

    def samples(to_float):
        transforms = {"image": v2.Compose([first, ssd_preset(0.0, to_float)]), "masks": None}
        return list(itertools.islice(stoker_samples(coco_dataset, transforms, batch_size=1,
                                                    prefetch=1), 8))
    zoomed, cropped = 0, 0
    for k, (sample, plain) in enumerate(zip(samples(True), samples(False))):
        image, target = reference[k]
        target = reference_target(image, target)
        distort, zoom, *rest = ssd_preset(0.0).transforms
        image, target = v2.Compose([distorting(distort, draws_of(k, 1)),
                                    drawing(zoom, draws_of(k, 2))])(image, target)
        zoomed += image.size != reference[k][0].size
        cropped += plain["image"].shape[1:] != (image.height, image.width)
        assert any(equal_to(sample, *v2.Compose([cropping(params), *rest[1:]])(image, target))
                   for params in found_crop(image, target, plain["image"])), k
    assert zoomed > 0 and cropped > 0


class FixedSizeCrop:
    """The detection reference's FixedSizeCrop(size, fill, padding_mode) (references/detection/
    transforms.py, which torchvision does not install), by its definition with torchvision's
    kernels on (PIL image, v2 target): where a side is longer than the crop, one torch.rand(1)
    r places a cut at int((side - crop) r) of each, boxes moved and clamped to the cut, those
    left empty dropped with their labels and masks; then the right and bottom padded to the
    crop, the image with `fill` (PIL's pad), masks with 0. stoker knows it by its name and
    attributes."""

    def __init__(self, size, fill=0, padding_mode="constant"):
        self.crop_height, self.crop_width = size
        self.fill, self.padding_mode = fill, padding_mode
        self.dropped = 0

    def __call__(self, image, target):
        height, width = image.height, image.width
        cut_h, cut_w = min(height, self.crop_height), min(width, self.crop_width)
        boxes, labels, masks = (target[key].as_subclass(torch.Tensor)
                                for key in ("boxes", "labels", "masks"))
        if (cut_h, cut_w) != (height, width):
            r = torch.rand(1)
            top = int(max(height - self.crop_height, 0) * r)
            left = int(max(width - self.crop_width, 0) * r)
            image = F.crop(image, top, left, cut_h, cut_w)
            boxes = boxes - torch.tensor([left, top, left, top], dtype=boxes.dtype)
            boxes[:, 0::2] = boxes[:, 0::2].clamp(0, cut_w)
            boxes[:, 1::2] = boxes[:, 1::2].clamp(0, cut_h)
            keep = (boxes[:, 0] < boxes[:, 2]) & (boxes[:, 1] < boxes[:, 3])
            self.dropped += int((~keep).sum())
            boxes, labels = boxes[keep], labels[keep]
            masks = masks[keep][:, top:top + cut_h, left:left + cut_w]
        padding = [0, 0, self.crop_width - cut_w, self.crop_height - cut_h]
        image = F.pad(image, padding, fill=self.fill, padding_mode=self.padding_mode)
        masks = F.pad(tv_tensors.Mask(masks), padding, fill=0)
        canvas = (self.crop_height, self.crop_width)
        return image, dict(target, labels=labels, masks=masks,
                           boxes=tv_tensors.BoundingBoxes(boxes, format="XYXY",
                                                          canvas_size=canvas))


def lsj_preset(size, p):
    """The detection reference's `lsj` preset (backend="pil", use_v2=True) at target size `size`
    (the reference's is 1024), flip probability p."""
    return [v2.ScaleJitter(target_size=(size, size), antialias=True),
            FixedSizeCrop(size=(size, size), fill=MEAN_PIXEL), v2.RandomHorizontalFlip(p=p),
            v2.ToImage(), v2.ToDtype(torch.float, scale=True),
            v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
            v2.SanitizeBoundingBoxes(), v2.ToPureTensor()]


@pytest.mark.parametrize("size, p, count", [(96, 0.0, 24), (160, 1.0, 24), (1024, 1.0, 3)])
def test_the_lsj_preset_equals_torchvision_v2(coco_set, coco_dataset, size, p, count):
    """ScaleJitter (torchvision's make_params given stoker's draw), the reference's
    FixedSizeCrop (its draw stoker's), flip, ToDtype, sanitize: each of the first `count`
    samples is torchvision's, size x size; cuts drop objects, smaller images are padded."""
    reference = torchvision_samples(coco_set)
    natively = v2.Compose([DecodeImage(max_size=max(size, largest_side(reference))),
                           *lsj_preset(size, p)])
    dropped, padded = 0, 0
    for k, sample in enumerate(itertools.islice(stoker_samples(coco_dataset, natively), count)):
        image, target = reference[k]
        target = reference_target(image, target)
        jitter, crop, *rest = lsj_preset(size, p)
        want = v2.Compose([drawing(jitter, draws_of(k, 1)), drawing(crop, draws_of(k, 2)),
                           *rest])(image, target)
        assert sample["image"].shape == (3, size, size)
        assert equal_to(sample, *want), k
        dropped += crop.dropped
        bottom = (sample["image"][:, -1] * 255).round()
        padded += bool((bottom == torch.tensor(MEAN_PIXEL)[:, None]).all())
    assert padded > 0 and (dropped > 0 or count < 24)


def test_fixed_size_crop_drops_the_objects_it_cuts_off(tmp_path):
    """An object wholly outside the cut goes, box, label and mask; one across its edge stays,
    clamped, its mask cut."""
    import io
    from PIL import Image
    masks = np.zeros((12, 8), np.uint8)  # two 8x6 masks stacked
    masks[:2, :1] = 1
    masks[7:11, 1:7] = 1
    png = io.BytesIO()
    Image.fromarray(masks).save(png, format="PNG")
    path = detections_with(tmp_path / "ds", [[0, 0, 1, 2], [1, 1, 7, 5]], [5, 6], png.getvalue())
    # A 4 wide cut of the 8x6 image at int(4 u): this seed's draw u for record 1 cuts at 1.
    assert int(4 * np.float32(draws_of(1, 1).next_float())) == 1
    crop = FixedSizeCrop(size=(6, 4), fill=MEAN_PIXEL)
    loader = stoker.Loader(path, batch_size=2, shuffle=False, batch_format="dict", seed=SEED,
                           variable="list",
                           transforms=v2.Compose([crop, v2.ToImage(), v2.ToPureTensor()]))
    batch = next(iter(loader))
    assert batch["labels"][1].tolist() == [6]
    assert batch["boxes"][1].tolist() == [[0, 1, 4, 5]]
    want = np.zeros((1, 6, 4), np.uint8)
    want[0, 1:5] = 1
    assert np.array_equal(batch["masks"][1].numpy(), want)


@pytest.mark.parametrize("steps, message", [
    ([v2.RandomZoomOut(side_range=(1.0, 100.0))], r"random_zoom_out.*side_range.*100"),
    ([v2.RandomPhotometricDistort(hue=(-0.7, 0.2))], r"random_photometric_distort.*hue.*-0.7"),
    ([v2.RandomPhotometricDistort(contrast=(1.5, 0.5))],
     r"random_photometric_distort: contrast \[1.5, 0.5\] has its minimum above its maximum"),
    ([v2.ScaleJitter((64, 64), scale_range=(2.0, 1.0))],
     r"scale_jitter: scale_range \[2, 1\] has its minimum above"),
])
def test_bad_parameters_are_one_line_naming_the_transform(coco_dataset, steps, message):
    with pytest.raises(ValueError, match=message) as raised:
        loader = stoker.Loader(coco_dataset, shuffle=True, batch_size=2, batch_format="dict",
                               transforms=v2.Compose([*steps, v2.ToImage()]))
        next(iter(loader))
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("steps, why", [
    ([v2.RandomZoomOut(fill=300)], r"RandomZoomOut\(fill=300\): stoker fills"),
    ([v2.ToImage(), v2.RandomZoomOut()], r"RandomZoomOut after ToImage"),
    ([FixedSizeCrop((64, 64), padding_mode="edge")],
     r"FixedSizeCrop\(fill=0, padding_mode='edge'\)"),
    ([FixedSizeCrop((64, 64), fill=(1, 2))], r"FixedSizeCrop\(fill=\(1, 2\)\): stoker fills"),
])
def test_settings_stoker_does_not_run_natively_go_to_python(coco_dataset, steps, why):
    """A v2 step (or the reference's) with settings the native operation lacks runs in Python
    from there on (stoker/_joint_python.py), and loader.plan says why."""
    loader = stoker.Loader(coco_dataset, shuffle=True, batch_size=2, batch_format="dict",
                           transforms=v2.Compose([*steps, v2.ToImage()]))
    first = next(n for n, s in enumerate(steps) if type(s).__name__ != "ToImage")
    rows = loader.plan["image"]
    assert [where for _, where in rows] == ["python"] * (len(steps) - first + 1)
    assert rows[0][0].startswith(type(steps[first]).__name__)
    assert re.search(why, loader.plan["notes"]["image"][0])


def segmentation_pairs(mask_folders):
    """(PIL image, tv_tensors.Mask class map) of the mask folders' pairs, in the order
    `stoker convert masks` stores them."""
    from PIL import Image
    for name in sorted(path.name for path in (mask_folders / "images").iterdir()):
        with Image.open(mask_folders / "images" / name) as pil:
            image = pil.convert("RGB")
        with Image.open(mask_folders / "masks" / name.replace(".jpg", ".png")) as pil:
            yield image, tv_tensors.Mask(torch.from_numpy(np.asarray(pil).copy()))


SEGMENTATION_STEPS = {
    "ScaleJitter": lambda: v2.ScaleJitter(target_size=(96, 96), antialias=True),
    "RandomZoomOut": lambda: v2.RandomZoomOut(
        fill={tv_tensors.Mask: 255, "others": (10, 200, 30)}, side_range=(1.0, 2.0), p=0.5),
    "RandomPhotometricDistort": lambda: v2.RandomPhotometricDistort(p=0.5),
}


@pytest.mark.parametrize("name", list(SEGMENTATION_STEPS))
def test_joint_steps_on_a_segmentation_sample_equal_torchvision_v2(mask_folders, tmp_path,
                                                                   name):
    """ScaleJitter, RandomZoomOut and RandomPhotometricDistort on (image, class map) of
    `stoker convert masks`: each sample's image and mask are torchvision's for stoker's draws
    (ScaleJitter's and RandomZoomOut's as torch.rand's, the distortion's as make_params'): the
    mask resized with nearest, padded with the Mask's fill, or left as it is; each step
    changes some samples (p=0.5: not all)."""
    stoker.convert("masks", mask_folders / "images", tmp_path / "ds",
                   masks=mask_folders / "masks")
    pairs = list(segmentation_pairs(mask_folders))
    largest = max(max(image.size) for image, _ in pairs)
    natively = v2.Compose([DecodeImage(max_size=2 * largest), SEGMENTATION_STEPS[name](),
                           v2.PILToTensor(), v2.ToPureTensor()])
    loader = stoker.Loader(tmp_path / "ds", batch_size=4, shuffle=False, batch_format="dict",
                           variable="list", transforms=natively, seed=SEED, prefetch=1)
    samples = [(image, mask) for batch in loader for image, mask in zip(batch["image"],
                                                                         batch["mask"])]
    changed = 0
    for k, ((got_image, got_mask), (image, mask)) in enumerate(zip(samples, pairs)):
        step = SEGMENTATION_STEPS[name]()
        step = distorting(step, draws_of(k, 1)) if name == "RandomPhotometricDistort" else \
            drawing(step, draws_of(k, 1))
        want_image, want_mask = v2.Compose([step, v2.PILToTensor(), v2.ToPureTensor()])(
            image, mask)
        assert torch.equal(got_image, want_image), k
        assert torch.equal(got_mask, want_mask.as_subclass(torch.Tensor)), k
        changed += not torch.equal(got_image, F.pil_to_tensor(image))
    assert len(samples) == len(pairs) and 0 < changed
    assert name == "ScaleJitter" or changed < len(pairs)


def image_capacity(transforms, dataset):
    """The largest image side the loader's slots hold for `transforms` on `dataset`."""
    schema = stoker.Loader(dataset, batch_size=256, shuffle=True, transforms={"image": None})._native.schema
    image = [s for s in stoker.transforms.field_specs(transforms, schema) if s["name"] == "image"]
    return image[0]["joint"]["max_size"]


def test_without_decode_image_the_capacity_is_what_the_steps_make(coco_dataset, mask_folders,
                                                                   tmp_path):
    """The references' presets without a DecodeImage: a step that bounds the output (the
    multiscale preset's max_size, lsj's FixedSizeCrop, the segmentation preset's RandomCrop)
    sizes the slots; where the stored image bounds it (hflip, ssdlite, ssd) 1024; a DecodeImage
    first is the user's capacity."""
    assert image_capacity(multiscale_preset((480, 800), 1333), coco_dataset) == 1333
    assert image_capacity(v2.Compose(lsj_preset(1024, 0.5)), coco_dataset) == 1024
    jitter = v2.ScaleJitter(target_size=(300, 200), scale_range=(0.5, 1.7))
    assert image_capacity(v2.Compose([jitter, v2.RandomHorizontalFlip()]), coco_dataset) == 510
    assert image_capacity(v2.Compose([jitter, v2.RandomZoomOut(side_range=(1.0, 2.5))]),
                          coco_dataset) == 1275
    for preset in (hflip_preset(0.5), ssdlite_preset(0.5), ssd_preset(0.5),
                   multiscale_preset((480, 800))):  # no max_size: the long side is the image's
        assert image_capacity(preset, coco_dataset) == 1024
    assert image_capacity(v2.Compose([DecodeImage(max_size=700), *lsj_preset(1024, 0.5)]),
                          coco_dataset) == 700
    stoker.convert("masks", mask_folders / "images", tmp_path / "seg",
                   masks=mask_folders / "masks")
    for pad in ("pad_if_needed", "pad_if_smaller"):
        segmentation = v2.Compose([*segmentation_head(520, 0.5), *segmentation_tail(480, pad)])
        assert image_capacity(segmentation, tmp_path / "seg") == 480


def test_the_multiscale_preset_at_its_real_sizes_needs_no_decode_image(coco_set, coco_dataset):
    """RandomShortestSize((480, ..., 800), max_size=1333), as the reference builds it, on images
    up to 1466 px: many outputs pass 1024 a side, and each sample is torchvision's for one of the
    sizes."""
    sizes = (480, 640, 800)
    reference = torchvision_samples(coco_set)
    largest = 0
    for k, sample in enumerate(stoker_samples(coco_dataset, multiscale_preset(sizes, 1333),
                                              batch_size=2)):
        image, target = reference[k]
        target = reference_target(image, target)
        assert any(equal_to(sample, *multiscale_preset([s], 1333)(image, target))
                   for s in sizes), k
        largest = max(largest, *sample["image"].shape[-2:])
    assert 1024 < largest <= 1333


def passing_through(image, target):
    """A user's step on (image, target): the steps from it on run in Python."""
    return image, target


@pytest.mark.parametrize("python_tail", [False, True])
def test_the_nested_form_of_boxes_and_labels(coco_dataset, python_tail):
    """variable="nested" for boxes and labels (images and masks as lists), natively and after
    a Python step: each sample's rows are the list form's; masks cannot be nested."""
    steps = hflip_preset(0.5, max_size=2048).transforms
    preset = v2.Compose(steps + [passing_through] if python_tail else steps)

    def made(variable):
        return stoker.Loader(coco_dataset, batch_size=5, shuffle=False, seed=SEED,
                             batch_format="dict", variable=variable, transforms=preset)

    nested = {"boxes": "nested", "labels": "nested", "image": "list", "masks": "list"}
    batches = 0
    for a, b in zip(made(nested), made("list")):
        assert "boxes_sizes" not in a and "labels_sizes" not in a
        for name in ("boxes", "labels"):
            assert a[name].is_nested
            assert [x.shape for x in a[name].unbind()] == [y.shape for y in b[name]]
            assert all(torch.equal(x, y) for x, y in zip(a[name].unbind(), b[name]))
        batches += 1
    assert batches == 5
    with pytest.raises(ValueError, match="field 'masks' varies in more than its first dimension"):
        made({"masks": "nested"})
