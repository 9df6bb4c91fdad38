#!/usr/bin/env python3
"""Makes, in FOLDER, every input the README's and the guides' code blocks read, so each runs as
written there (the test suite runs them so: python/tests/test_docs_blocks.py):

    .venv/bin/python examples/doc_inputs.py FOLDER

data/fake-train, photos/ (cat and dog JPEGs), tars/ (the photos as WebDataset tars), parquet/
(as Hugging Face's datasets writes them), data/detection, videos/ (class folders of mp4
clips, bench/make_kinetics_set.py's) and pairs/ (image-text tars, make_image_text_set.py's).
Then, in FOLDER, link the built command: mkdir build && ln -s ../../build/stoker build/stoker
(from the checkout)."""

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

import stoker


def make_inputs(folder: Path) -> None:
    """data/fake-train (3x32x32 uint8 images, 10 classes), photos/ (an ImageFolder of 12
    JPEGs), the same photos as WebDataset tars and as Parquet (write_photos_in_place_formats),
    data/detection (boxes and labels, 0 to 3 per image), videos/ (4 clips of 2 s, 2 classes),
    pairs/ (64 image-text pairs in 4 tars)."""
    rng = np.random.default_rng(0)
    classes = [f"class{i}" for i in range(10)]
    with stoker.DatasetWriter(folder / "data" / "fake-train",
                              {"image": ("uint8", (3, 32, 32)), "label": "int64"},
                              class_names=classes) as writer:
        for i in range(96):
            writer.append({"image": rng.integers(0, 256, (3, 32, 32), dtype=np.uint8),
                           "label": i % 10})
    for i in range(12):
        path = folder / "photos" / ("cat", "dog")[i % 2] / f"{i}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 256, (72 + i, 96, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path, quality=90)
    write_photos_in_place_formats(folder)
    schema = {"image": ("uint8", (3, 64, 64)), "boxes": ("float32", ("N", 4)),
              "labels": ("int64", ("N",))}
    with stoker.DatasetWriter(folder / "data" / "detection", schema) as writer:
        for i in range(32):
            objects = i % 4
            writer.append({"image": rng.integers(0, 256, (3, 64, 64), dtype=np.uint8),
                           "boxes": rng.random((objects, 4), dtype=np.float32) * 64,
                           "labels": rng.integers(0, 10, objects)})
    bench = Path(__file__).resolve().parents[1] / "bench"
    subprocess.run([sys.executable, bench / "make_kinetics_set.py", folder / "videos", "--clips",
                    "4", "--classes", "2", "--seconds", "2"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, bench / "make_image_text_set.py", folder / "pairs",
                    "--samples", "64", "--per-tar", "16"], check=True, stderr=subprocess.DEVNULL)


def write_photos_in_place_formats(folder: Path) -> None:
    """photos/'s JPEGs as two WebDataset tars (tars/photos-000000.tar, -000001.tar: KEY.jpg,
    KEY.cls, KEY.json and KEY.npy, a float32 (4,)) and as one Parquet file laid out as Hugging
    Face's datasets writes it
    (parquet/train-00000-of-00001.parquet: an `image` struct of bytes and path, a `label`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    photos = sorted((folder / "photos").glob("*/*.jpg"), key=lambda p: int(p.stem))
    labels = [("cat", "dog").index(p.parent.name) for p in photos]
    (folder / "tars").mkdir()
    for shard in range(2):
        with tarfile.open(folder / "tars" / f"photos-{shard:06d}.tar", "w") as tar:
            for path, label in list(zip(photos, labels))[shard::2]:
                tar.add(path, arcname=f"{path.stem}.jpg")
                features = io.BytesIO()
                np.save(features, np.full(4, int(path.stem), dtype=np.float32))
                members = {"cls": str(label).encode(), "npy": features.getvalue(),
                           "json": json.dumps({"file": path.name}).encode()}
                for extension, data in members.items():
                    info = tarfile.TarInfo(f"{path.stem}.{extension}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    (folder / "parquet").mkdir()
    images = [{"bytes": p.read_bytes(), "path": p.name} for p in photos]
    pq.write_table(pa.table({"image": images, "label": labels}),
                   folder / "parquet" / "train-00000-of-00001.parquet")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: doc_inputs.py FOLDER")
    make_inputs(Path(sys.argv[1]))
