"""The conversion recipes of docs/PYTHON-DATA.md, run as written there on small data each test
makes, and checked record by record against that data."""

import io
import pickle
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import stoker
from stored_records import read_manifest, read_records

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "PYTHON-DATA.md"


def recipe(name):
    """The code of the recipe `name` of the document (the python block after its marker)."""
    match = re.search(rf"<!-- recipe: {name} -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"no recipe {name} in {DOC}"
    return match.group(1)


def run_recipe(name, src, out):
    exec(compile(recipe(name), f"{DOC.name}:{name}", "exec"), {"src": str(src), "out": str(out)})


def jpeg(seed, width=24, height=16):
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG")
    return buffer.getvalue()


def check_image_dataset(out, images, labels):
    records = read_records(out)
    assert [r["image"] for r in records] == images
    assert [r["label"] for r in records] == labels
    assert all((r["width"], r["height"]) == (24, 16) for r in records)
    stoker.verify(out)


def test_npz(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (70, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, 70, dtype=np.uint8)
    np.savez(tmp_path / "data.npz", x=x, y=y)
    run_recipe("npz", tmp_path / "data.npz", tmp_path / "out")
    records = read_records(tmp_path / "out")
    np.testing.assert_array_equal(np.stack([r["image"] for r in records]), x[:, None])
    assert [r["label"] for r in records] == y.tolist()


def test_npy(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (40, 3, 32, 32), dtype=np.uint8)
    labels = rng.integers(0, 10, 40)
    (tmp_path / "src").mkdir()
    np.save(tmp_path / "src" / "images.npy", images)
    np.save(tmp_path / "src" / "labels.npy", labels)
    run_recipe("npy", tmp_path / "src", tmp_path / "out")
    records = read_records(tmp_path / "out")
    np.testing.assert_array_equal(np.stack([r["image"] for r in records]), images)
    assert [r["label"] for r in records] == labels.tolist()
    assert stoker.inspect(tmp_path / "out")["schema"]["fields"][0]["shape"] == [3, 32, 32]


def test_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, (30, 8, 6, 3), dtype=np.uint8)
    labels = rng.integers(0, 4, 30)
    with h5py.File(tmp_path / "data.h5", "w") as f:
        f["images"] = images
        f["labels"] = labels
    run_recipe("hdf5", tmp_path / "data.h5", tmp_path / "out")
    records = read_records(tmp_path / "out")
    np.testing.assert_array_equal(np.stack([r["image"] for r in records]),
                                  images.transpose(0, 3, 1, 2))
    assert [r["label"] for r in records] == labels.tolist()


def test_lmdb(tmp_path):
    lmdb = pytest.importorskip("lmdb")
    images = [jpeg(i) for i in range(12)]
    env = lmdb.open(str(tmp_path / "db"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i, data in enumerate(images):
            txn.put(f"{i:08d}".encode(), pickle.dumps((data, i % 3)))
    env.close()
    run_recipe("lmdb", tmp_path / "db", tmp_path / "out")
    check_image_dataset(tmp_path / "out", images, [i % 3 for i in range(12)])


def test_webdataset(tmp_path):
    images = [jpeg(i) for i in range(9)]
    with tarfile.open(tmp_path / "shard-000.tar", "w") as tar:
        for i, data in enumerate(images):
            for extension, payload in (("jpg", data), ("cls", str(i % 4).encode())):
                info = tarfile.TarInfo(f"train/sample{i:04d}.{extension}")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    run_recipe("webdataset", tmp_path / "shard-000.tar", tmp_path / "out")
    check_image_dataset(tmp_path / "out", images, [i % 4 for i in range(9)])


def test_torchvision_dataset(tmp_path):
    torchvision = pytest.importorskip("torchvision")
    run_recipe("torchvision", None, tmp_path / "out")
    fake = torchvision.datasets.FakeData(size=40, image_size=(3, 24, 20), num_classes=5)
    records = read_records(tmp_path / "out")
    assert len(records) == 40
    for record, (image, label) in zip(records, (fake[i] for i in range(40))):
        np.testing.assert_array_equal(record["image"], np.asarray(image).transpose(2, 0, 1))
        assert record["label"] == label
    assert "FakeData" in read_manifest(tmp_path / "out")["source"]


def test_torchvision_image_folder_is_the_importers_dataset(tmp_path):
    pytest.importorskip("torchvision")
    images = {}
    for i in range(10):
        path = tmp_path / "src" / ("cat", "dog", "eel")[i % 3] / f"{i}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg(i))
        images[path] = path.read_bytes()
    png = tmp_path / "src" / "dog" / "z.png"
    Image.fromarray(np.zeros((16, 24, 3), np.uint8)).save(png)
    run_recipe("imagefolder", tmp_path / "src", tmp_path / "out")
    stoker.convert("imagefolder", tmp_path / "src", tmp_path / "imported", keep_original=True)
    written, imported = read_records(tmp_path / "out"), read_records(tmp_path / "imported")
    assert len(written) == 11
    assert written == imported
    manifest = read_manifest(tmp_path / "out")
    assert manifest["class_names"] == ["cat", "dog", "eel"]
    assert manifest["schema"] == read_manifest(tmp_path / "imported")["schema"]


def test_the_data_guides_example(tmp_path, monkeypatch):
    """docs/DATA.md's Python example, run as written in a scratch directory holding photos/."""
    pytest.importorskip("torchvision")
    code = re.search(r"## Writing datasets from Python\n.*?```python\n(.*?)```",
                     (ROOT / "docs" / "DATA.md").read_text(), re.S).group(1)
    for i in range(3):
        path = tmp_path / "photos" / ("x", "y")[i % 2] / f"{i}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg(i, width=700, height=300))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/DATA.md", "exec"), {})
    assert len(read_records("data/fake")) == 1000
    assert len(read_records("data/points")) == 1000
    assert [r["width"] for r in read_records("data/photos")] == [512, 512, 512]
