"""stoker.convert("coco") on bench/make_coco_set.py's set: every record, loaded through
stoker.Loader, equals torchvision's CocoDetection wrapped for transforms v2 (pycocotools' masks)
in its order; bad annotations and images are one stoker.Error line naming the file and the
annotation, and nothing is written."""

import json
import os
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from stoker.transforms import DecodeImage, RawBytes

from coco_sets import annotations_of

MASKS_MAX = 1 << 20


def torchvision_samples(coco_set):
    from torchvision.datasets import CocoDetection, wrap_dataset_for_transforms_v2
    dataset = CocoDetection(os.fspath(coco_set / "images"), annotations_of(coco_set))
    keys = {"image_id", "boxes", "labels", "masks", "area", "iscrowd"}
    return wrap_dataset_for_transforms_v2(dataset, target_keys=keys)


def test_records_equal_torchvision_coco_detection(coco_set, coco_dataset):
    reference = torchvision_samples(coco_set)
    loader = stoker.Loader(coco_dataset, batch_size=5, shuffle=False, batch_format="dict",
                           variable="list", transforms={"image": DecodeImage(max_size=2048),
                                                        "masks": RawBytes(MASKS_MAX)})
    seen, objects, crowds = 0, 0, 0
    for batch in loader:
        for k in range(len(batch["image_id"])):
            image, target = reference[seen]
            assert batch["image_id"][k].item() == target["image_id"]
            want = torch.from_numpy(np.asarray(image.convert("RGB")).transpose(2, 0, 1).copy())
            assert torch.equal(batch["image"][k], want)
            h, w = batch["height"][k].item(), batch["width"][k].item()
            assert (h, w) == (image.height, image.width)
            boxes, labels = batch["boxes"][k], batch["labels"][k]
            masks = stoker.decode_masks(batch["masks"][k], h, w)
            if "boxes" not in target:  # an image without objects
                assert boxes.shape == (0, 4) and labels.shape == (0,) and masks.shape[0] == 0
            else:
                assert torch.equal(boxes, target["boxes"].as_subclass(torch.Tensor))
                assert torch.equal(labels, target["labels"])
                assert torch.equal(masks, target["masks"].as_subclass(torch.Tensor))
                assert torch.equal(batch["area"][k],
                                   torch.tensor(target["area"], dtype=torch.float32))
                assert batch["iscrowd"][k].tolist() == target["iscrowd"]
                objects += len(labels)
                crowds += sum(target["iscrowd"])
            seen += 1
    assert seen == len(reference) == 24
    assert objects > 100 and crowds > 0  # the set has crowds (run-length masks) too


def test_the_dataset_verifies_and_names_its_categories(coco_set, coco_dataset):
    assert stoker.verify(coco_dataset)["datasets"][0]["records"] == 24  # raises if bad
    summary = stoker.inspect(coco_dataset)
    names = summary["class_names"]
    categories = json.load(open(annotations_of(coco_set)))["categories"]
    assert names[0] == "__background__" and names[12] == "N/A"
    assert all(names[c["id"]] == c["name"] for c in categories)


def test_the_same_dataset_for_any_worker_count(coco_set, coco_dataset, tmp_path):
    stoker.convert("coco", coco_set / "images", tmp_path / "one", workers=0,
                   annotations=annotations_of(coco_set))
    shards = sorted(p.name for p in coco_dataset.iterdir() if p.suffix == ".stk")
    for name in shards:
        assert (tmp_path / "one" / name).read_bytes() == (coco_dataset / name).read_bytes()


def broken_copy(coco_set, tmp_path, change):
    """A copy of the set's annotations changed by change(json); the images shared."""
    data = json.load(open(annotations_of(coco_set)))
    change(data)
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(data))
    return path


def first_object(data):
    return next(a for a in data["annotations"] if not a["iscrowd"])


def category_renumbered(new_id):
    """A change giving the first category (and its objects) the id `new_id`."""
    def change(data):
        old_id = data["categories"][0]["id"]
        data["categories"][0]["id"] = new_id
        for annotation in data["annotations"]:
            if annotation["category_id"] == old_id:
                annotation["category_id"] = new_id
    return change


@pytest.mark.parametrize("change, message", [
    (category_renumbered(-1), r"instances.json: category -1: id is negative$"),
    (category_renumbered(2 ** 62),
     r"instances.json: category 4611686018427387904: id is over 65535: class names are indexed "
     r"by id, at most 65536 of them$"),
    (lambda d: d.update(images=[], annotations=[]),
     r"instances.json: \"images\" is empty: no records to convert$"),
    (lambda d: first_object(d).update(category_id=999),
     r"instances.json: annotation \d+ \(image \d+\): category 999 is not in categories$"),
    (lambda d: first_object(d).update(bbox=[10, 10, 5000, 5]),
     r"instances.json: annotation \d+ \(image \d+\): box \[10, 10, 5000, 5\] is not inside"),
    (lambda d: first_object(d).update(segmentation={"counts": "0", "size": [1, 1]}),
     r"instances.json: annotation \d+ \(image \d+\): segmentation size \[1,1\] is not the "
     r"image's"),
    (lambda d: first_object(d).update(segmentation=[[1, 2, 3, 4]]),
     r"instances.json: annotation \d+ \(image \d+\): segmentation: .*polygon"),
    (lambda d: d["images"][0].update(width=d["images"][0]["width"] + 1),
     r"images/0+1\.jpg \(image 1\): the image is \d+x\d+, but .*instances.json says"),
    (lambda d: d["images"][0].update(file_name="missing.jpg"),
     r"images/missing.jpg \(image 1\): "),
    (lambda d: d["annotations"].extend(
        {"id": 10 ** 6 + k, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}
        for k in range((1 << 30) // (d["images"][0]["width"] * d["images"][0]["height"]) + 1)),
     r"images/0+1\.jpg \(image 1\): \d+ objects' \d+x\d+ masks are over 1 GiB$"),
])
def test_bad_annotations_are_one_line_and_write_nothing(coco_set, tmp_path, change, message):
    annotations = broken_copy(coco_set, tmp_path, change)
    with pytest.raises((stoker.Error, ValueError), match=message) as raised:
        stoker.convert("coco", coco_set / "images", tmp_path / "out", annotations=annotations)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["instances.json"]


def test_a_corrupt_image_names_its_file(coco_set, tmp_path):
    images = tmp_path / "images"
    shutil.copytree(coco_set / "images", images)
    first = sorted(images.iterdir())[0]
    first.write_bytes(first.read_bytes()[:2000])
    with pytest.raises((stoker.Error, ValueError), match=rf"{first.name} \(image 1\): "):
        stoker.convert("coco", images, tmp_path / "out", annotations=annotations_of(coco_set))
    assert not (tmp_path / "out").exists()


def test_convert_coco_needs_its_annotations(coco_set, tmp_path):
    with pytest.raises(ValueError, match="needs annotations="):
        stoker.convert("coco", coco_set / "images", tmp_path / "out")


def test_decode_masks_refuses_a_png_of_another_size():
    import io
    png = io.BytesIO()
    Image.fromarray(np.zeros((7, 5), np.uint8)).save(png, format="PNG")
    with pytest.raises(ValueError, match="a 5x7 PNG is not a stack of 5x3 masks"):
        stoker.decode_masks(png.getvalue(), 3, 5)
    assert stoker.decode_masks(b"", 3, 5).shape == (0, 3, 5)


def reference_training_ids(annotations):
    """The image ids the detection reference keeps for training (its rule, written here): an
    image with an object whose [x, y, w, h] box has w > 1 and h > 1, crowds included."""
    from pycocotools.coco import COCO
    coco = COCO(annotations)
    return [i for i in sorted(coco.imgs) if any(
        all(side > 1 for side in a["bbox"][2:])
        for a in coco.loadAnns(coco.getAnnIds(imgIds=i, iscrowd=None)))]


def test_drop_empty_keeps_the_references_training_images(coco_set, coco_dataset, tmp_path):
    """convert(drop_empty=True) keeps the images the reference keeps for training, each record
    the full conversion's; the set gets images whose every box is 1 pixel wide or tall, and
    images without objects."""
    def degenerate(data):
        by_image = {}
        for annotation in data["annotations"]:
            by_image.setdefault(annotation["image_id"], []).append(annotation)
        for n, image_id in enumerate(sorted(by_image)[:6]):
            for annotation in by_image[image_id]:
                annotation["bbox"][2 + n % 2] = 1.0 if n < 4 else 0.5
        data["annotations"] = [a for a in data["annotations"]
                               if a["image_id"] not in sorted(by_image)[6:9]]
    annotations = broken_copy(coco_set, tmp_path, degenerate)
    kept = reference_training_ids(annotations)
    every = len(json.load(open(annotations))["images"])
    assert 0 < len(kept) <= every - 9
    summary = stoker.convert("coco", coco_set / "images", tmp_path / "train",
                             annotations=annotations, drop_empty=True)
    assert (summary["images"], summary["dropped"]) == (len(kept), every - len(kept))
    full = stoker.convert("coco", coco_set / "images", tmp_path / "all", annotations=annotations)
    assert full["dropped"] == 0

    def records(path):
        loader = stoker.Loader(path, batch_size=4, shuffle=False, batch_format="dict",
                               variable="list", transforms={"image": RawBytes(1 << 24),
                                                            "masks": RawBytes(MASKS_MAX)})
        return {batch["image_id"][k].item(): {name: batch[name][k] for name in batch}
                for batch in loader for k in range(len(batch["image_id"]))}
    train, everything = records(tmp_path / "train"), records(tmp_path / "all")
    assert list(train) == kept
    for image_id, record in train.items():
        assert all(torch.equal(value, everything[image_id][name])
                   for name, value in record.items())
