"""stoker.convert, stoker.inspect and stoker.verify: the command line's tools from Python."""

import gzip
import io
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import stoker
from stoker import _stoker
from stored_records import read_manifest, read_records


def write_idx(path, array):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def make_idx(tmp_path, n=30):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 5, 7), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    write_idx(tmp_path / "images.gz", images)
    write_idx(tmp_path / "labels.gz", labels)
    return images, labels


def make_image_folder(root, bad=()):
    for i in range(6):
        path = Path(root) / ("a", "b")[i % 2] / f"{i}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        pixels = np.random.default_rng(i).integers(0, 256, (12, 20, 3), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG")
        path.write_bytes(buffer.getvalue())
    for name in bad:
        (Path(root) / "a" / name).write_bytes(b"not an image at all")


def flip_a_record_byte(dataset):
    shard = Path(dataset) / read_manifest(dataset)["shards"][0]["file"]
    data = bytearray(shard.read_bytes())
    schema_len = struct.unpack_from("<I", data, 12)[0]
    first_record = (16 + schema_len + 63) // 64 * 64
    data[first_record + 3] ^= 0xFF
    shard.write_bytes(bytes(data))


def test_convert_idx_then_inspect(tmp_path):
    images, labels = make_idx(tmp_path)
    result = stoker.convert("idx", (tmp_path / "images.gz", tmp_path / "labels.gz"),
                            tmp_path / "ds", shard_mb=1, class_names=[f"c{i}" for i in range(10)])
    assert result == {"datasets": [str(tmp_path / "ds")], "records": 30}
    records = read_records(tmp_path / "ds")
    np.testing.assert_array_equal(np.stack([r["image"] for r in records]), images[:, None])
    summary = stoker.inspect(tmp_path / "ds")
    assert summary["records"] == 30 and summary["shards"] == 1
    assert summary["schema"] == {"fields": [
        {"name": "image", "dtype": "uint8", "shape": [1, 5, 7]},
        {"name": "label", "dtype": "int64", "shape": []}]}
    assert summary["label_histogram"] == {int(v): int(c) for v, c in
                                          zip(*np.unique(labels, return_counts=True))}
    assert summary["label_min"] == labels.min() and summary["label_max"] == labels.max()
    assert summary["class_names"] == [f"c{i}" for i in range(10)]
    # The schema inspect gives is one DatasetWriter takes.
    with stoker.DatasetWriter(tmp_path / "copy", summary["schema"]) as writer:
        for r in records:
            writer.append(r)
    assert (tmp_path / "copy" / "shard-00000.stk").read_bytes() == (
        tmp_path / "ds" / "shard-00000.stk").read_bytes()


def test_convert_fashion_mnist_and_cifar10_make_splits(tmp_path):
    if not Path(_stoker.fashion_mnist_debian_dir).is_dir():
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    result = stoker.convert("fashion-mnist", out=tmp_path / "fm")
    assert result["datasets"] == [str(tmp_path / "fm" / "train"), str(tmp_path / "fm" / "test")]
    summary = stoker.inspect(tmp_path / "fm")
    assert summary["dir"] == str(tmp_path / "fm")
    assert [s["records"] for s in summary["datasets"]] == [10000, 60000]  # test/, train/
    cifar = tmp_path / "cifar"
    cifar.mkdir()
    rng = np.random.default_rng(3)
    for name, n in [(f"data_batch_{k}.bin", 2) for k in range(1, 6)] + [("test_batch.bin", 3)]:
        (cifar / name).write_bytes(rng.integers(0, 10, (n, 3073), dtype=np.uint8).tobytes())
    (cifar / "batches.meta.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n")
    result = stoker.convert("cifar10", cifar, tmp_path / "c10")
    assert (result["train"], result["test"]) == (10, 3)
    assert stoker.verify(tmp_path / "c10")["datasets"][1] == {
        "path": str(tmp_path / "c10" / "train"), "records": 10, "shards": 1}


def test_convert_imagefolder_with_bad_files(tmp_path):
    make_image_folder(tmp_path / "src", bad=["bad.jpg"])
    with pytest.raises(stoker.Error, match="1 bad file of 7 .* nothing written") as raised:
        stoker.convert("imagefolder", tmp_path / "src", tmp_path / "out", workers=2)
    assert raised.value.bad_files == [(str(tmp_path / "src" / "a" / "bad.jpg"),
                                       raised.value.bad_files[0][1])]
    assert "not a JPEG or PNG" in raised.value.bad_files[0][1]
    assert not (tmp_path / "out").exists()
    result = stoker.convert("imagefolder", tmp_path / "src", tmp_path / "out", skip_bad=True,
                            max_side=10, workers=1, progress=False)
    assert (result["images"], result["classes"], result["skipped"]) == (6, 2, 1)
    assert len(result["bad_files"]) == 1 and Path(result["skipped_list"]).is_file()
    records = read_records(tmp_path / "out")
    assert all(max(r["width"], r["height"]) == 10 for r in records)


def test_convert_bad_arguments(tmp_path):
    make_idx(tmp_path)
    pair = (tmp_path / "images.gz", tmp_path / "labels.gz")
    with pytest.raises(ValueError, match="unknown kind 'mnist'"):
        stoker.convert("mnist", tmp_path, tmp_path / "x")
    with pytest.raises(TypeError, match="convert 'idx' has no option max_side"):
        stoker.convert("idx", pair, tmp_path / "x", max_side=3)
    with pytest.raises(ValueError, match="takes src=\\(images, labels\\)"):
        stoker.convert("idx", tmp_path / "images.gz", tmp_path / "x")
    with pytest.raises(ValueError, match="shard_mb must be"):
        stoker.convert("idx", pair, tmp_path / "x", shard_mb=0)
    with pytest.raises(FileNotFoundError, match="missing.gz"):
        stoker.convert("idx", (tmp_path / "missing.gz", pair[1]), tmp_path / "x")
    with pytest.raises(ValueError, match="max side -1 is not within"):
        stoker.convert("imagefolder", tmp_path, tmp_path / "x", max_side=-1)
    with pytest.raises(FileNotFoundError):
        stoker.convert("cifar10", tmp_path / "nowhere", tmp_path / "x")
    (tmp_path / "x").mkdir()
    with pytest.raises(FileExistsError):
        stoker.convert("idx", pair, tmp_path / "x")
    assert sorted(os.listdir(tmp_path)) == ["images.gz", "labels.gz", "x"]


def test_a_raising_progress_callable_stops_the_import_with_nothing_written(tmp_path):
    """What Ctrl-C does: the exception raised while the import polls Python ends it."""
    make_image_folder(tmp_path / "src")
    calls = []

    def progress(done, total):
        calls.append((done, total))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _stoker.import_image_folder(str(tmp_path / "src"), str(tmp_path / "out"),
                                    keep_original=False, max_side=0, skip_bad=False, workers=1,
                                    shard_bytes=1 << 20, shuffled=False, seed=0,
                                    progress=progress, on_bad=None)
    assert calls and calls[0][1] == 6
    assert os.listdir(tmp_path) == ["src"]


def test_verify_names_the_bad_records(tmp_path):
    make_idx(tmp_path)
    stoker.convert("idx", (tmp_path / "images.gz", tmp_path / "labels.gz"), tmp_path / "ds")
    assert stoker.verify(tmp_path / "ds") == {
        "datasets": [{"path": str(tmp_path / "ds"), "records": 30, "shards": 1}]}
    flip_a_record_byte(tmp_path / "ds")
    with pytest.raises(stoker.Error) as raised:
        stoker.verify(tmp_path / "ds")
    assert str(raised.value) == f"{tmp_path / 'ds'}: 1 of 30 records failed verification"
    assert len(raised.value.errors) == 1 and "checksum" in raised.value.errors[0]
    # What Ctrl-C does: the exception raised while verify polls Python ends it.
    stoker.write_dataset(tmp_path / "big", [{"x": i} for i in range(5000)], workers=0)
    calls = []

    def interrupt(done, total):
        calls.append((done, total))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _stoker.verify_datasets(str(tmp_path / "big"), progress=interrupt)
    assert calls == [(1024, 5000)]


def test_inspect_and_verify_bad_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        stoker.inspect(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError):
        stoker.verify(tmp_path / "nothing")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "manifest.json").write_text("{not json")
    with pytest.raises(stoker.Error, match="manifest"):
        stoker.inspect(tmp_path / "ds")
