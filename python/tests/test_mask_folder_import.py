"""stoker.convert("masks"): an image folder and a folder of PNG class masks (gray and palette)
paired by stem; every record, loaded through stoker.Loader, holds PIL's pixels of the image
and PIL's class indices of the mask (what torchvision's segmentation reference reads), in stem
order; bad pairs are one line naming the files, and nothing is written."""

import shutil

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from stoker.transforms import DecodeImage, RawBytes


def converted(mask_folders, out, **options):
    return stoker.convert("masks", mask_folders / "images", out, masks=mask_folders / "masks",
                          **options)


def test_records_are_pils_images_and_class_indices(mask_folders, tmp_path):
    summary = converted(mask_folders, tmp_path / "ds", workers=2)
    assert summary["images"] == 24
    loader = stoker.Loader(tmp_path / "ds", batch_size=5, shuffle=False, batch_format="dict",
                           variable="list", transforms={"image": DecodeImage(max_size=2048),
                                                        "mask": RawBytes(1 << 22)})
    names = sorted(p.name for p in (mask_folders / "images").iterdir())
    seen, painted = 0, 0
    for batch in loader:
        for k, image in enumerate(batch["image"]):
            name = names[seen]
            with Image.open(mask_folders / "images" / name) as pil:
                want = np.asarray(pil.convert("RGB")).transpose(2, 0, 1)
            assert torch.equal(image, torch.from_numpy(want.copy())), name
            h, w = batch["height"][k].item(), batch["width"][k].item()
            mask = stoker.decode_masks(batch["mask"][k], h, w)[0]
            with Image.open(mask_folders / "masks" / name.replace(".jpg", ".png")) as pil:
                want_mask = np.asarray(pil)
            assert np.array_equal(mask.numpy(), want_mask), name
            painted += int((want_mask > 0).any())
            seen += 1
    assert seen == 24 and painted > 12
    stoker.verify(tmp_path / "ds")


def broken(mask_folders, tmp_path, change):
    """A copy of the folders, changed by change(images, masks)."""
    shutil.copytree(mask_folders, tmp_path / "src")
    change(tmp_path / "src" / "images", tmp_path / "src" / "masks")
    return tmp_path / "src"


def first(folder):
    return sorted(folder.iterdir())[0]


def wrong_size(images, masks):
    Image.new("L", (3, 2)).save(first(masks))


def jpeg_mask(images, masks):
    Image.new("L", Image.open(first(images)).size).save(first(masks), format="JPEG")


def mask_of_mode(mode):
    """A change making the first mask a PNG of PIL's `mode` ("I;16": 16-bit gray)."""
    def change(images, masks):
        Image.new(mode, Image.open(first(images)).size).save(first(masks))
    return change


@pytest.mark.parametrize("change, message", [
    (wrong_size, r"masks/0+1\.png is 3x2, but its image .*images/0+1\.jpg is \d+x\d+$"),
    (lambda images, masks: first(masks).unlink(), r"images/0+1\.jpg has no mask .*0+1\.png$"),
    (lambda images, masks: first(images).unlink(),
     r"masks/0+1\.png has no image of stem '0+1' in "),
    (lambda images, masks: shutil.copy(first(images), images / (first(images).stem + ".png")),
     r"0+1\.(jpg|png) and .*0+1\.(jpg|png) have one stem"),
    (jpeg_mask, r"masks/0+1\.png: a mask must be a PNG, not a JPEG$"),
    (mask_of_mode("I;16"),
     r"masks/0+1\.png: a mask must be an 8-bit gray or palette PNG, not 16-bit gray$"),
    (mask_of_mode("RGB"),
     r"masks/0+1\.png: a mask must be an 8-bit gray or palette PNG, not 8-bit RGB$"),
    (mask_of_mode("1"),
     r"masks/0+1\.png: a mask must be an 8-bit gray or palette PNG, not 1-bit gray$"),
])
def test_bad_pairs_are_one_line_and_write_nothing(mask_folders, tmp_path, change, message):
    src = broken(mask_folders, tmp_path, change)
    with pytest.raises((stoker.Error, ValueError), match=message) as raised:
        converted(src, tmp_path / "out")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out").exists()


def test_convert_masks_needs_its_masks(mask_folders, tmp_path):
    with pytest.raises(ValueError, match="needs masks="):
        stoker.convert("masks", mask_folders / "images", tmp_path / "out")
