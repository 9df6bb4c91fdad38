"""torchvision's VOC datasets given to stoker.Loader (stoker/_torchvision_voc.py): VOCDetection
wrapped for v2 and VOCSegmentation (wrapped, or raw with flips) read natively, each sample,
its types and tv_tensors' metadata equal to iterating the dataset (through DataLoader; random
steps for stoker's draws), in its order, for each year and split; kept once, kept again when a file or the split changes; what the wrapper would fail
on is one line naming the file and the object, with nothing kept; what stoker cannot read
exactly goes to the dataset's own __getitem__, loader.plan saying why."""

import os
import re
import shutil

import pytest
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, tv_tensors
from torchvision.transforms import v2

import stoker

from test_dataloader_contract import references_collate, same

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "arrays"


def hflip_preset(p):
    """The detection reference's v2 hflip training preset (backend="pil")."""
    return v2.Compose([v2.RandomHorizontalFlip(p), v2.PILToTensor(),
                       v2.ToDtype(torch.float32, scale=True), v2.SanitizeBoundingBoxes(),
                       v2.ToPureTensor()])


def wrapped_detection(root, transforms, year="2012", image_set="train", **wrap):
    return datasets.wrap_dataset_for_transforms_v2(
        datasets.VOCDetection(root, year=year, image_set=image_set, transforms=transforms),
        **wrap)


def natively(loader, name):
    note = loader.plan["notes"]["dataset"][0]
    assert note.startswith(f"torchvision's {name} is read natively"), note
    assert all(step[1] == "native" for field in ("image", "boxes", "labels", "mask")
               for step in loader.plan.get(field, []))


def by_itself(loader, why):
    assert loader.plan["dataset"][0][1] == "python"
    assert re.search(why, loader.plan["notes"]["dataset"][0]), loader.plan["notes"]


@pytest.mark.parametrize("year, image_set", [("2012", "train"), ("2012", "val"),
                                             ("2012", "trainval"), ("2007", "train")])
def test_wrapped_voc_detection_is_read_natively_as_dataloader_reads_it(voc_root, cache, year,
                                                                       image_set):
    """The reference's hflip preset (the flip certain, so that both draw alike) and the eval
    preset, with the references' collate and one sample at a time; each year's folder and
    split in its order."""
    eval_preset = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
    for transforms, kwargs in ((hflip_preset(1.0), {"batch_size": 4,
                                                    "collate_fn": references_collate}),
                               (eval_preset, {"batch_size": None})):
        dataset = wrapped_detection(voc_root, transforms, year, image_set)
        loader = stoker.Loader(dataset, **kwargs)
        natively(loader, "VOCDetection (wrapped for v2)")
        for ours, theirs in zip(loader, DataLoader(dataset, **kwargs), strict=True):
            same(ours, theirs)
    assert len(list(cache.iterdir())) == 1  # one split of one year kept once, for both presets


def test_a_subset_and_a_batch_sampler_stay_native(voc_root, cache):
    """A Subset of the wrapped dataset, batches from a batch sampler (as GroupedBatchSampler
    gives them): DataLoader's batches."""
    dataset = torch.utils.data.Subset(wrapped_detection(voc_root, hflip_preset(1.0)),
                                      [7, 0, 3, 11, 5, 2])
    batches = [[5, 0], [1, 2, 3], [4]]
    loader = stoker.Loader(dataset, batch_sampler=batches, collate_fn=references_collate)
    natively(loader, "VOCDetection (wrapped for v2)")
    theirs = DataLoader(dataset, batch_sampler=batches, collate_fn=references_collate)
    for ours, want in zip(loader, theirs, strict=True):
        same(ours, want)


def test_one_flip_draw_moves_the_image_and_its_boxes(voc_root, cache):
    """p=0.5 and a zoom-out on a tv_tensors.Image (the wrapper's types kept): each sample is
    the dataset's own unflipped or flipped one, both occur; the zoom-out (its fill, p=1 and
    side_range (1, 1): no growth) leaves the boxes' whole pixels."""
    def flipping(p):
        return wrapped_detection(voc_root, v2.Compose([
            v2.RandomHorizontalFlip(p), v2.RandomZoomOut(fill=0, side_range=(1.0, 1.0), p=1.0),
            v2.ToImage()]))

    loader = stoker.Loader(flipping(0.5), batch_size=None, num_workers=2)
    natively(loader, "VOCDetection (wrapped for v2)")
    flipped_or_not(loader, flipping)


def flipped_or_not(loader, flipping):
    """Each sample of `loader` (flip probability 0.5) is DataLoader's of flipping(0.0) or of
    flipping(1.0), whole; both occur."""
    kept, flipped = (DataLoader(flipping(p), batch_size=None) for p in (0.0, 1.0))
    mirrored = []
    for ours, unflipped, mirror in zip(loader, kept, flipped, strict=True):
        mirrored.append(torch.equal(ours[0], mirror[0]))
        same(ours, mirror if mirrored[-1] else unflipped)
    assert 0 < sum(mirrored) < len(mirrored)


def test_the_ssdlite_presets_iou_crop_equals_the_wrappers(voc_root, cache):
    """RandomIoUCrop on the wrapper's int64 boxes (its IoUs from int64 areas): each sample is
    the wrapper's for the crop stoker drew (found in the image), boxes int64; crops and
    uncropped samples both occur."""
    from test_joint_transforms import SEED, cropping, found_crop, ssdlite_preset

    samples, in_uint8 = (stoker.Loader(wrapped_detection(voc_root, ssdlite_preset(0.0, to_float)),
                                       batch_size=None, seed=SEED) for to_float in (True, False))
    natively(samples, "VOCDetection (wrapped for v2)")
    raw = wrapped_detection(voc_root, None)
    cropped = 0
    for k, (sample, plain) in enumerate(zip(samples, in_uint8, strict=True)):
        image, target = raw[k]
        params = next(found_crop(image, target, plain[0]))
        cropped += bool(params)
        want = v2.Compose([cropping(params), *ssdlite_preset(0.0).transforms[1:]])(image, target)
        assert sample[1]["boxes"].dtype == torch.int64
        same(sample, list(want))
    assert 0 < cropped < len(raw)


def test_the_ssd_preset_equals_the_wrappers(voc_root, cache):
    """The ssd preset (its zoom-out's side_range (1, 2)) on the first 8 samples: each is the
    wrapper's for stoker's draws (the distortion's and the zoom's given to v2, the IoU crop
    found in the zoomed image). Its default side_range (1, 4) on this set's largest images
    (over 1,024 pixels a side) is read by the dataset's own __getitem__: torchvision's int64
    areas are past float32's whole numbers there."""
    from test_joint_transforms import (SEED, cropping, distorting, draws_of, drawing, found_crop,
                                       ssd_fill, ssd_preset)

    def preset(to_float, side_range=(1.0, 2.0)):
        steps = ssd_preset(0.0, to_float).transforms
        steps[1] = v2.RandomZoomOut(fill=ssd_fill(), side_range=side_range)
        return v2.Compose(steps)

    by_itself(stoker.Loader(wrapped_detection(voc_root, preset(True, (1.0, 4.0))),
                            batch_size=None),
              r"RandomIoUCrop on images of up to \d{4} pixels a side: torchvision's int64 "
              r"areas")
    samples, in_uint8 = (stoker.Loader(wrapped_detection(voc_root, preset(to_float)),
                                       batch_size=None, seed=SEED) for to_float in (True, False))
    natively(samples, "VOCDetection (wrapped for v2)")
    raw = wrapped_detection(voc_root, None)
    zoomed, cropped = 0, 0
    for k, (sample, plain) in zip(range(8), zip(samples, in_uint8)):
        image, target = raw[k]
        distort, zoom, *rest = preset(True).transforms
        image, target = v2.Compose([distorting(distort, draws_of(k, 1)),
                                    drawing(zoom, draws_of(k, 2))])(image, target)
        zoomed += image.size != raw[k][0].size
        cropped += plain[0].shape[1:] != (image.height, image.width)
        matches = 0
        for params in found_crop(image, target, plain[0]):
            want = v2.Compose([cropping(params), *rest[1:]])(image, target)
            matches += torch.equal(sample[0], want[0]) and \
                torch.equal(sample[1]["boxes"], want[1]["boxes"]) and \
                torch.equal(sample[1]["labels"], want[1]["labels"])
        assert matches, k
    assert zoomed > 0 and cropped > 0


def test_the_kept_dataset_changes_with_a_file_or_the_split(voc_root, cache, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(voc_root / "VOCdevkit" / "VOC2012", root / "VOCdevkit" / "VOC2012")
    voc = root / "VOCdevkit" / "VOC2012"
    preset = v2.Compose([v2.ToImage()])

    def kept():
        stoker.Loader(wrapped_detection(root, preset), batch_size=None)
        return sorted(os.listdir(cache))

    first = kept()
    assert kept() == first and len(first) == 1
    xml = voc / "Annotations" / (voc / "ImageSets/Main/train.txt").read_text().split()[0]
    xml = xml.with_suffix(".xml")
    xml.write_text(xml.read_text().replace("<pose>Unspecified</pose>", "<pose>Left</pose>", 1))
    second = kept()
    assert len(second) == 2
    listing = voc / "ImageSets/Main/train.txt"
    listing.write_text("".join(n + "\n" for n in listing.read_text().split()[1:]))
    assert len(kept()) == 3
    loader = stoker.Loader(wrapped_detection(root, preset), batch_size=None)
    for ours, theirs in zip(loader, DataLoader(wrapped_detection(root, preset), batch_size=None),
                            strict=True):
        same(ours, theirs)


def first_annotated(voc):
    names = (voc / "ImageSets/Main/train.txt").read_text().split()
    return voc / "Annotations" / f"{names[0]}.xml"


def without(tag):
    """Takes the first object's `tag` element out of an annotation."""
    def change(xml):
        start = xml.index(f"<{tag}>", xml.index("<object>"))
        return xml[:start] + xml[xml.index(f"</{tag}>", start) + len(tag) + 3:]
    return change


@pytest.mark.parametrize("change, message", [
    (lambda x: x.replace("</annotation>", ""), r"\.xml: not XML: .*line \d+"),
    (without("name"), r"\.xml: object 1: no name$"),
    (without("bndbox"), r"\.xml: object 1: no bndbox$"),
    (lambda x: x.replace("<ymax>", "<ymax>2.", 1),
     r"\.xml: object 1: ymax '2\.\d+' is not a whole number \(the v2 wrapper reads it with "
     r"int\(\)\)$"),
    (lambda x: re.sub(r"<object>.*?</object>", "", x, flags=re.S),
     r"\.xml: no object \(the v2 wrapper of VOCDetection reads each image's objects\)$"),
    (None, r"JPEGImages/.*\.jpg: No such file or directory$"),
])
def test_what_the_wrapper_fails_on_is_one_line_and_keeps_nothing(voc_root, cache, tmp_path,
                                                                  change, message):
    root = tmp_path / "root"
    voc = root / "VOCdevkit" / "VOC2012"
    shutil.copytree(voc_root / "VOCdevkit" / "VOC2012", voc)
    xml = first_annotated(voc)
    if change is None:
        (voc / "JPEGImages" / xml.with_suffix(".jpg").name).unlink()
    else:
        xml.write_text(change(xml.read_text()))
    with pytest.raises(ValueError, match=message) as raised:
        stoker.Loader(wrapped_detection(root, v2.ToImage()), batch_size=2)
    assert "\n" not in str(raised.value)
    assert not cache.exists() or os.listdir(cache) == []


def test_what_stoker_cannot_read_exactly_is_read_by_its_own_getitem(voc_root, cache, tmp_path):
    """A box outside the image (the wrapper takes it, stoker's importer not), a resize (which
    truncates the wrapper's int64 boxes), the annotation kept in the target, a PIL image left,
    a flip of plain tensors (v2 flips the image alone):
    DataLoader's samples, loader.plan saying why in one line."""
    root = tmp_path / "root"
    voc = root / "VOCdevkit" / "VOC2012"
    shutil.copytree(voc_root / "VOCdevkit" / "VOC2012", voc)
    xml = first_annotated(voc)
    xml.write_text(xml.read_text().replace("<xmax>", "<xmax>9999", 1))
    for dataset, why in (
            (wrapped_detection(root, v2.ToImage()),
             r"stoker's VOC importer refuses it: .*\.xml: object 1: box .* is not inside"),
            (wrapped_detection(voc_root, v2.Compose([v2.Resize(40), v2.ToImage()])),
             r"Resize rounds its int64 boxes"),
            (wrapped_detection(voc_root, v2.ToImage(), target_keys="all"),
             r"its target keys \[\] are not among"),
            (wrapped_detection(voc_root, None), r"its transforms leave a PIL image"),
            (wrapped_detection(voc_root, v2.Compose([v2.ToImage(), v2.ToPureTensor(),
                                                     v2.RandomHorizontalFlip(1.0)])),
             r"its RandomHorizontalFlip after ToPureTensor changes the image alone")):
        loader = stoker.Loader(dataset, batch_size=3, collate_fn=references_collate)
        by_itself(loader, "^torchvision's VOCDetection \\(wrapped for v2\\) is read by its own "
                          "__getitem__: " + why)
        same(next(iter(loader)), next(iter(DataLoader(dataset, batch_size=3,
                                                      collate_fn=references_collate))))
    assert not cache.exists() or os.listdir(cache) == []


def test_raw_voc_detection_is_read_by_its_own_getitem_the_plan_saying_why(voc_root, cache):
    dataset = datasets.VOCDetection(voc_root, image_set="val")
    loader = stoker.Loader(dataset, batch_size=4, collate_fn=list)
    by_itself(loader, r"^torchvision's VOCDetection is read by its own __getitem__: its target "
                      r"is the parsed XML .*; wrap_dataset_for_transforms_v2 of it is read "
                      r"natively")
    theirs = [target for batch in DataLoader(dataset, batch_size=4, collate_fn=list)
              for _, target in batch]
    assert [target for batch in loader for _, target in batch] == theirs


def segmentation_preset(p):
    """The segmentation reference's training steps without the random crop (their draws
    differ): a resize of one choice, a flip, the reference's dtypes and Normalize."""
    return v2.Compose([v2.RandomResize(40, 41), v2.RandomHorizontalFlip(p), v2.PILToTensor(),
                       v2.ToDtype({torch.Tensor: torch.float32, tv_tensors.Mask: torch.int64,
                                   "others": None}, scale=True),
                       v2.Normalize(MEAN, STD), v2.ToPureTensor()])


@pytest.mark.parametrize("image_set", ["train", "val"])
def test_voc_segmentation_wrapped_and_raw_are_read_natively(voc_root, cache, image_set):
    """Wrapped (image, Mask [1, H, W]) with the segmentation preset and with the wrapper's
    types kept; raw (PIL image, PIL mask) flipped and made tensors (v2 takes the PIL mask as an
    image: a tv_tensors.Image, or a tensor [1, H, W])."""
    for dataset in (
            datasets.wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(
                voc_root, image_set=image_set, transforms=segmentation_preset(1.0))),
            datasets.wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(
                voc_root, year="2007", image_set=image_set,
                transforms=v2.Compose([v2.RandomHorizontalFlip(1.0), v2.ToImage()]))),
            datasets.VOCSegmentation(voc_root, image_set=image_set, transforms=v2.Compose(
                [v2.RandomHorizontalFlip(1.0), v2.ToImage()])),
            datasets.VOCSegmentation(voc_root, image_set=image_set, transforms=v2.Compose(
                [v2.RandomHorizontalFlip(1.0), v2.PILToTensor()]))):
        loader = stoker.Loader(dataset, batch_size=None)
        wrapped = isinstance(dataset, datasets.VOCSegmentation) and \
            type(dataset) is not datasets.VOCSegmentation
        natively(loader, "VOCSegmentation" + (" (wrapped for v2)" if wrapped else ""))
        count = 0
        for ours, theirs in zip(loader, DataLoader(dataset, batch_size=None), strict=True):
            same(ours, theirs)
            count += 1
        assert count == len(dataset) > 4


def test_voc_segmentation_flips_image_and_mask_together(voc_root, cache):
    def flipping(p):
        return datasets.wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(
            voc_root, transforms=segmentation_preset(p)))

    flipped_or_not(stoker.Loader(flipping(0.5), batch_size=None), flipping)


def test_raw_voc_segmentation_other_steps_are_its_own_getitem(voc_root, cache):
    """A resize or ToDtype would treat the PIL mask as an image (bilinear, scaled), a flip
    after PILToTensor the image alone: its own __getitem__, loader.plan saying why."""
    for transforms in (v2.Compose([v2.Resize(32), v2.PILToTensor()]),
                       v2.Compose([v2.PILToTensor(), v2.RandomHorizontalFlip(1.0)]),
                       v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])):
        dataset = datasets.VOCSegmentation(voc_root, transforms=transforms)
        loader = stoker.Loader(dataset, batch_size=None)
        by_itself(loader, r"^torchvision's VOCSegmentation is read by its own __getitem__: its "
                          r"mask is a PIL image, which v2 transforms take as an image")
        same(next(iter(loader)), next(iter(DataLoader(dataset, batch_size=None))))


def test_a_missing_mask_is_one_line_and_keeps_nothing(voc_root, cache, tmp_path):
    voc = tmp_path / "root" / "VOCdevkit" / "VOC2012"
    shutil.copytree(voc_root / "VOCdevkit" / "VOC2012", voc)
    name = (voc / "ImageSets/Segmentation/train.txt").read_text().split()[2]
    (voc / "SegmentationClass" / f"{name}.png").unlink()
    dataset = datasets.wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(
        tmp_path / "root", transforms=v2.ToImage()))
    with pytest.raises(ValueError, match=rf"SegmentationClass/{name}\.png: No such file or "
                                         r"directory$"):
        stoker.Loader(dataset, batch_size=2)
    assert not cache.exists() or os.listdir(cache) == []


def test_a_mask_stoker_refuses_is_read_by_its_own_getitem(voc_root, cache, tmp_path):
    """A mask of another size than its image (v2's ToImage takes the pair, stoker's mask
    importer not): DataLoader's samples, loader.plan naming the file."""
    from PIL import Image
    voc = tmp_path / "root" / "VOCdevkit" / "VOC2012"
    shutil.copytree(voc_root / "VOCdevkit" / "VOC2012", voc)
    name = (voc / "ImageSets/Segmentation/val.txt").read_text().split()[0]
    path = voc / "SegmentationClass" / f"{name}.png"
    with Image.open(path) as pil:
        pil.resize((7, 5)).save(path)
    dataset = datasets.wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(
        tmp_path / "root", image_set="val", transforms=v2.ToImage()))
    loader = stoker.Loader(dataset, batch_size=None)
    by_itself(loader, r"^torchvision's VOCSegmentation \(wrapped for v2\) is read by its own "
                      rf"__getitem__: stoker's mask importer refuses it: \S*/SegmentationClass/"
                      rf"{name}\.png is 7x5, but its image \S*/JPEGImages/{name}\.jpg is ")
    for ours, theirs in zip(loader, DataLoader(dataset, batch_size=None), strict=True):
        same(ours, theirs)
    assert not cache.exists() or os.listdir(cache) == []
