"""torchvision v2 transforms on a detection sample (image, target) run natively by stoker.Loader
(stoker/_joint.py, pipeline/joint_pipeline.h): the detection reference's `hflip` preset on the
converted COCO-shaped set equals torchvision's v2 on CocoDetection's samples for the same flip
draws (image floats, boxes, labels, masks, each bit); bad records are one line naming the field."""

import numpy as np
import pytest
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2

import stoker
from stoker.transforms import DecodeImage

from test_coco_import import torchvision_samples


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


def stoker_samples(dataset, transforms):
    loader = stoker.Loader(dataset, batch_size=5, shuffle=False, batch_format="dict",
                           variable="list", transforms=transforms, seed=3)
    for batch in loader:
        for k in range(len(batch["image"])):
            yield {name: batch[name][k].clone() for name in ("image", "boxes", "labels", "masks")}


def equal_to(sample, image, target):
    """True if stoker's `sample` is torchvision's (image, target), each bit."""
    return (torch.equal(sample["image"], image) and torch.equal(sample["boxes"], target["boxes"])
            and torch.equal(sample["labels"], target["labels"])
            and torch.equal(sample["masks"], target["masks"]))


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


def test_unsupported_steps_on_a_detection_sample_are_named(coco_dataset):
    with pytest.raises(ValueError, match=r"field 'image' \(a detection sample.*RandomVertical"
                                         r"Flip is not supported"):
        stoker.Loader(coco_dataset, transforms=v2.Compose([v2.RandomVerticalFlip(),
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


def segmentation_tail(crop):
    """The segmentation reference's preset after its resize and flip (backend="pil",
    use_v2=True), its padding as RandomCrop's pad_if_needed (fill 255 for the mask, 0 else)."""
    return [v2.RandomCrop(crop, pad_if_needed=True, fill={tv_tensors.Mask: 255, "others": 0}),
            v2.PILToTensor(),
            v2.ToDtype({torch.Tensor: torch.float32, tv_tensors.Mask: torch.int64,
                        "others": None}, scale=True),
            v2.Normalize(MEAN, STD), v2.ToPureTensor()]


def segmentation_head(size, p):
    """RandomResize to a shorter side of `size` (its one choice) and a flip of probability p."""
    return [v2.RandomResize(size, size + 1), v2.RandomHorizontalFlip(p)]


def every_crop(image, mask, crop):
    """What segmentation_tail(crop) makes of (image, mask) at every crop position: torchvision's
    RandomCrop with its draws (torch.randint) replaced by each top and left in turn."""
    tail = v2.Compose(segmentation_tail(crop))
    h, w = mask.shape[-2:]
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


@pytest.mark.parametrize("size, p", [(56, 0.0), (72, 1.0)])
def test_the_segmentation_preset_equals_torchvision_v2(mask_folders, tmp_path, size, p):
    """RandomResize + flip + RandomCrop(pad_if_needed) + ToDtype + Normalize on (image, class
    map) of `stoker convert masks`: each sample is torchvision's at one crop position (the
    image padded with 0, the mask with 255 where the resized image is smaller than the crop)."""
    from PIL import Image
    stoker.convert("masks", mask_folders / "images", tmp_path / "ds",
                   masks=mask_folders / "masks")
    crop = 64
    natively = v2.Compose([DecodeImage(max_size=1600), *segmentation_head(size, p),
                           *segmentation_tail(crop)])
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
                       for want_image, want_mask in every_crop(image, mask, crop)), name
            padded += int((got_mask == 255).all(dim=1).any())
            seen += 1
    assert seen == 24
    assert (padded > 0) == (size < crop)  # rows of the mask's fill where the crop padded


def ssdlite_preset(p, to_float=True):
    """The detection reference's `ssdlite` preset (backend="pil", use_v2=True), flip
    probability p; without ToDtype where not `to_float` (the same draws: the crop found in
    uint8)."""
    return v2.Compose([v2.RandomIoUCrop(), v2.RandomHorizontalFlip(p=p), v2.ToImage(),
                       *([v2.ToDtype(torch.float, scale=True)] if to_float else []),
                       v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
                       v2.SanitizeBoundingBoxes(), v2.ToPureTensor()])


def crop_position(image, cropped):
    """(top, left) of the uint8 [3, h, w] `cropped` in the PIL `image`."""
    whole = np.asarray(image)
    part = cropped.permute(1, 2, 0).numpy()
    h, w = part.shape[:2]
    first = part[0].tobytes()
    for top in range(whole.shape[0] - h + 1):
        row, at = whole[top].tobytes(), -1
        while (at := row.find(first, at + 1)) >= 0:
            if at % 3 == 0 and np.array_equal(whole[top:top + h, at // 3:at // 3 + w], part):
                return top, at // 3
    raise AssertionError("the crop is not in the image")


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
        params = {}
        h, w = plain["image"].shape[1:]
        if (h, w) != (image.height, image.width):
            top, left = crop_position(image, plain["image"])
            boxes = target["boxes"].as_subclass(torch.Tensor)
            cx, cy = 0.5 * (boxes[:, 0] + boxes[:, 2]), 0.5 * (boxes[:, 1] + boxes[:, 3])
            within = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
            params = dict(top=top, left=left, height=h, width=w, is_within_crop_area=within)
            cropped += 1
        crop = v2.RandomIoUCrop()
        crop.make_params = lambda flat_inputs: params  # the crop stoker drew
        want_image, want = v2.Compose([crop, *ssdlite_preset(0.0).transforms[1:]])(image,
                                                                                   target)
        assert equal_to(sample, want_image, want), k
    assert 0 < cropped < len(natively)
