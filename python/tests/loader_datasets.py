"""Small datasets the loader's tests read, written with stoker.DatasetWriter, and the fixtures
that make them once per test session."""

import io

import numpy as np
import pytest

import stoker

RECORDS = 1003  # not a multiple of any batch size or world size the tests use
SAMPLE = (1, 4, 4)


def pixels(index):
    """The image of record `index` of the labelled dataset: a ramp starting at index % 256."""
    return ((index + np.arange(16)) % 256).astype(np.uint8).reshape(SAMPLE)


def write_labelled(path, records=RECORDS):
    """`records` records: image uint8 [1, 4, 4] = pixels(i), label int64 = i; shards of about
    4 KiB, so a dataset spans many shards."""
    with stoker.DatasetWriter(path, {"image": ("uint8", SAMPLE), "label": "int64"},
                              shard_mb=4 / 1024) as writer:
        for i in range(records):
            writer.append({"image": pixels(i), "label": i})
    return path


def photo(index, width, height):
    """A smooth RGB picture (gradients and a disc: resampling differences stay small)."""
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1) + index * 37) % 256
    g = (y * 255 // max(height - 1, 1) + index * 11) % 256
    b = np.where((x - width / 2) ** 2 + (y - height / 2) ** 2 < (min(width, height) / 3) ** 2,
                 200, 40)
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def encode(array, fmt):
    from PIL import Image

    out = io.BytesIO()
    options = {"quality": 92} if fmt == "JPEG" else {}
    Image.fromarray(array).save(out, fmt, **options)
    return out.getvalue()


IMAGE_SIZES = [(96, 64), (64, 96), (80, 80), (120, 72), (50, 70), (128, 128), (70, 90), (99, 61)]


def write_images(path):
    """JPEGs and PNGs of several sizes: image bytes, label int64 = index."""
    encoded = []
    with stoker.DatasetWriter(path, {"image": "bytes", "label": "int64"}) as writer:
        for i, (w, h) in enumerate(IMAGE_SIZES):
            data = encode(photo(i, w, h), "PNG" if i % 4 == 3 else "JPEG")
            encoded.append(data)
            writer.append({"image": data, "label": i})
    return path, encoded


def write_one_cut_image(path, records, cut):
    """`records` 40x30 JPEGs, label int64 = index, record `cut` cut to its first 50 bytes."""
    with stoker.DatasetWriter(path, {"image": "bytes", "label": "int64"}) as writer:
        for i in range(records):
            good = encode(photo(i, 40, 30), "JPEG")
            writer.append({"image": good[:50] if i == cut else good, "label": i})
    return path


@pytest.fixture(scope="session")
def labelled(tmp_path_factory):
    """The path of the labelled dataset (read-only: tests must not change it)."""
    return write_labelled(tmp_path_factory.mktemp("labelled") / "ds")


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    """(path, [encoded image bytes by record]) of the image dataset."""
    return write_images(tmp_path_factory.mktemp("images") / "ds")


def write_classes(path, records=203, offset=0):
    """The frameworks' dataset: image uint8 [1, 8, 8] (a ramp from (i + offset) % 256), label
    int64 i % 10 (ten classes, as the examples' classifier has), id int64 i."""
    with stoker.DatasetWriter(path, {"image": ("uint8", (1, 8, 8)), "label": "int64",
                                     "id": "int64"}) as writer:
        for i in range(records):
            image = ((i + offset + np.arange(64)) % 256).astype(np.uint8).reshape(1, 8, 8)
            writer.append({"image": image, "label": i % 10, "id": i})
    return path


@pytest.fixture(scope="session")
def classes(tmp_path_factory):
    """The path of write_classes' dataset (read-only)."""
    return write_classes(tmp_path_factory.mktemp("classes") / "ds")
