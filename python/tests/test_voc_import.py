"""stoker.convert("voc") on bench/make_voc_set.py's set: every record, loaded through
stoker.Loader, equals torchvision's VOCDetection (its parsed XML: boxes, class names,
difficult flags; PIL's pixels) in its order; bad annotations are one line naming the file and
the object, and nothing is written. Its SegmentationClass converts with stoker.convert("masks")."""

import shutil

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from stoker.transforms import DecodeImage, RawBytes

CLASSES = ["__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car",
           "cat", "chair", "cow", "diningtable", "dog", "horse", "motorbike", "person",
           "pottedplant", "sheep", "sofa", "train", "tvmonitor"]


@pytest.mark.parametrize("split", ["train", "val"])
def test_records_equal_torchvision_voc_detection(voc_set, tmp_path, split):
    from torchvision.datasets import VOCDetection
    reference = VOCDetection(voc_set.parents[1], year="2012", image_set=split)
    stoker.convert("voc", voc_set, tmp_path / "ds", split=split, workers=2)
    assert stoker.inspect(tmp_path / "ds")["class_names"] == CLASSES
    loader = stoker.Loader(tmp_path / "ds", batch_size=4, shuffle=False, batch_format="dict",
                           variable="list", transforms={"image": DecodeImage(max_size=2048)})
    seen, objects, parts = 0, 0, 0
    for batch in loader:
        for k, image in enumerate(batch["image"]):
            pil, target = reference[seen]
            want = torch.from_numpy(np.asarray(pil.convert("RGB")).transpose(2, 0, 1).copy())
            assert torch.equal(image, want)
            found = target["annotation"].get("object", [])
            boxes = torch.tensor([[float(o["bndbox"][c]) for c in ("xmin", "ymin", "xmax",
                                                                   "ymax")] for o in found],
                                 dtype=torch.float32).reshape(-1, 4)
            assert torch.equal(batch["boxes"][k], boxes)
            assert [CLASSES[i] for i in batch["labels"][k].tolist()] == [o["name"] for o in found]
            assert batch["difficult"][k].tolist() == [int(o["difficult"]) for o in found]
            objects += len(found)
            parts += sum("part" in o for o in found)
            seen += 1
    assert seen == len(reference) and objects > 20
    assert parts > 0 or split == "train"  # the generated set's persons with parts are in val


def broken(voc_set, tmp_path, change):
    """A copy of the set whose first training image with objects has its annotation
    change(xml text)."""
    src = tmp_path / "VOC2012"
    shutil.copytree(voc_set, src)
    xml = next(src / "Annotations" / (name + ".xml")
               for name in (src / "ImageSets/Main/train.txt").read_text().split()
               if "<object>" in (src / "Annotations" / (name + ".xml")).read_text())
    xml.write_text(change(xml.read_text()))
    return src


def first_object_name(xml):
    start = xml.index("<name>", xml.index("<object>")) + len("<name>")
    return start, xml.index("</name>", start)


@pytest.mark.parametrize("change, message", [
    (lambda x: x.replace(x[slice(*first_object_name(x))], "unicorn", 1),
     r"\.xml: object 1: class 'unicorn' is not one of VOC's 20$"),
    (lambda x: x.replace("<xmax>", "<xmax>9999", 1),
     r"\.xml: object 1: box \[.*\] is not inside the \d+x\d+ image$"),
    (lambda x: x.replace("</annotation>", ""), r"\.xml: not XML: .* at line \d+$"),
    (lambda x: '<!DOCTYPE a [<!ENTITY e "x">]>' + x, r"\.xml: has a DTD, which annotations"),
    (lambda x: x.replace("<ymin>", "<ymin>a", 1),
     r"\.xml: object 1: ymin 'a\d*' is not a number$"),
    (lambda x: x.replace("<xmin>", "<xmin>0x", 1),
     r"\.xml: object 1: xmin '0x\d*' is not a number$"),
    (lambda x: x.replace("<width>", "<width>1", 1),
     r"JPEGImages/.*\.jpg: the image is \d+x\d+, but .*\.xml says 1\d+x\d+$"),
])
def test_bad_annotations_are_one_line_and_write_nothing(voc_set, tmp_path, change, message):
    src = broken(voc_set, tmp_path, change)
    with pytest.raises((stoker.Error, ValueError), match=message) as raised:
        stoker.convert("voc", src, tmp_path / "out")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out").exists()


def test_a_split_naming_a_path_outside_is_refused(voc_set, tmp_path):
    src = tmp_path / "VOC2012"
    shutil.copytree(voc_set, src)
    (src / "ImageSets/Main/evil.txt").write_text("../../etc/passwd\n")
    with pytest.raises(ValueError, match=r"evil.txt: line 1: '../../etc/passwd' is not a file "
                                         r"stem$"):
        stoker.convert("voc", src, tmp_path / "out", split="evil")


def test_voc_segmentation_class_masks_convert_as_a_mask_folder(voc_set, tmp_path):
    stoker.convert("masks", voc_set / "JPEGImages", tmp_path / "seg",
                   masks=voc_set / "SegmentationClass")
    loader = stoker.Loader(tmp_path / "seg", batch_size=8, shuffle=False, batch_format="dict",
                           variable="list", transforms={"image": None,
                                                        "mask": RawBytes(1 << 22)})
    names = sorted(p.stem for p in (voc_set / "SegmentationClass").iterdir())
    seen = 0
    for batch in loader:
        for k, png in enumerate(batch["mask"]):
            h, w = batch["height"][k].item(), batch["width"][k].item()
            mask = stoker.decode_masks(png, h, w)[0]
            with Image.open(voc_set / "SegmentationClass" / (names[seen] + ".png")) as pil:
                want = np.asarray(pil)  # class indices, as VOCSegmentation's target reads
            assert np.array_equal(mask.numpy(), want)
            seen += 1
    assert seen == len(names)
