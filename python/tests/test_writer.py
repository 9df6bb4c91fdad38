"""stoker.DatasetWriter: records as the schema says, bad values named, nothing half-written."""

import mmap
import os
import threading

import numpy as np
import pytest

import stoker
from stored_records import read_manifest, read_records

FASHION = {"image": ("uint8", (1, 28, 28)), "label": "int64"}


def fashion_samples(n, seed=0):
    rng = np.random.default_rng(seed)
    return [{"image": rng.integers(0, 256, (1, 28, 28), dtype=np.uint8),
             "label": int(rng.integers(0, 10))} for _ in range(n)]


def leftovers(directory):
    """Everything in `directory`: a failed or aborted writer leaves nothing in it."""
    return sorted(os.listdir(directory))


def test_writes_the_samples_in_order(tmp_path):
    samples = fashion_samples(50)
    with stoker.DatasetWriter(tmp_path / "ds", FASHION, source="test",
                              class_names=[f"c{i}" for i in range(10)]) as writer:
        for sample in samples:
            writer.append(sample)
        assert writer.records == 50
    stored = read_records(tmp_path / "ds")
    assert len(stored) == 50
    for got, want in zip(stored, samples):
        np.testing.assert_array_equal(got["image"], want["image"])
        assert got["label"] == want["label"]
    manifest = read_manifest(tmp_path / "ds")
    assert manifest["source"] == "test"
    assert manifest["class_names"] == [f"c{i}" for i in range(10)]
    assert manifest["schema"]["fields"] == [
        {"name": "image", "dtype": "uint8", "shape": [1, 28, 28]},
        {"name": "label", "dtype": "int64", "shape": []}]


def test_every_dtype_bytes_and_strided_arrays(tmp_path):
    schema = {"box": (np.float32, 4), "mask": ("uint8", (2, 3)), "count": np.int64,
              "score": "float32", "level": "uint8", "jpeg": bytes, "note": "bytes"}
    rng = np.random.default_rng(1)
    samples = []
    for i in range(20):
        wide = rng.integers(0, 256, (3, 2), dtype=np.uint8)
        samples.append({
            "box": rng.random(4, dtype=np.float32),
            "mask": wide.T,  # not C-contiguous: copied in C order
            "count": np.int64(-i * 10**12),
            "score": i / 3,
            "level": np.uint8(i),
            "jpeg": rng.bytes(i * 7),
            "note": bytearray(b"n" * i) if i % 2 else memoryview(b"m" * i),
        })
    with stoker.DatasetWriter(tmp_path / "ds", schema) as writer:
        for sample in samples:
            writer.append(sample)
    for got, want in zip(read_records(tmp_path / "ds"), samples):
        np.testing.assert_array_equal(got["box"], want["box"])
        np.testing.assert_array_equal(got["mask"], want["mask"])
        assert got["count"] == want["count"]
        assert got["score"] == np.float32(want["score"])
        assert got["level"] == want["level"]
        assert got["jpeg"] == want["jpeg"]
        assert got["note"] == bytes(want["note"])


def test_rolls_shards_and_takes_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    with stoker.DatasetWriter(tmp_path / "ds", {"x": ("float32", (256,)), "label": "int64"},
                              shard_mb=0.01) as writer:
        for i in range(100):
            writer.append({"x": torch.full((256,), float(i)), "label": torch.tensor(i)})
    assert len(read_manifest(tmp_path / "ds")["shards"]) > 5
    stored = read_records(tmp_path / "ds")
    assert [int(r["label"]) for r in stored] == list(range(100))
    assert all((r["x"] == i).all() for i, r in enumerate(stored))


def test_schema_of_an_existing_dataset(tmp_path):
    with stoker.DatasetWriter(tmp_path / "a", FASHION) as writer:
        writer.append(fashion_samples(1)[0])
    fields = read_manifest(tmp_path / "a")["schema"]
    with stoker.DatasetWriter(tmp_path / "b", fields) as writer:
        assert writer.schema == [("image", "uint8", (1, 28, 28)), ("label", "int64", ())]


@pytest.mark.parametrize("sample, message", [
    ({"image": np.zeros((28, 28), np.uint8), "label": 1},
     "sample 2, field 'image': uint8 array of shape (28, 28), the schema says uint8 (1, 28, 28)"),
    ({"image": np.zeros((1, 28, 28), np.float64), "label": 1},
     "sample 2, field 'image': float64 array of shape (1, 28, 28), the schema says uint8"),
    ({"image": np.zeros((1, 28, 28), np.uint8), "label": 1.5},
     "sample 2, field 'label': an int64 scalar takes an integer, got float"),
    ({"image": np.zeros((1, 28, 28), np.uint8), "label": 2**63},
     "sample 2, field 'label': 9223372036854775808 is out of int64's range"),
    ({"image": np.zeros((1, 28, 28), np.uint8)}, "sample 2 has no field 'label'"),
    ({"image": np.zeros((1, 28, 28), np.uint8), "label": 1, "lable": 2},
     "sample 2 has a field 'lable' the schema does not have (image, label)"),
    ({"image": "pixels", "label": 1}, "sample 2, field 'image': "),
    ({"image": [[1, 2]], "label": 1},
     "sample 2, field 'image': int64 array of shape (1, 2), the schema says uint8"),
])
def test_bad_values_raise_naming_sample_and_field(tmp_path, sample, message):
    with stoker.DatasetWriter(tmp_path / "ds", FASHION) as writer:
        for good in fashion_samples(2):
            writer.append(good)
        with pytest.raises(ValueError) as raised:
            writer.append(sample)
        assert message in str(raised.value)
        writer.append(fashion_samples(1)[0])  # the writer goes on; the bad sample was not written
    assert len(read_records(tmp_path / "ds")) == 3


def test_bad_bytes_and_scalars(tmp_path):
    schema = {"jpeg": "bytes", "level": "uint8", "score": "float32"}
    good = {"jpeg": b"x", "level": 1, "score": 1.0}
    with stoker.DatasetWriter(tmp_path / "ds", schema) as writer:
        for field, value, message in [
                ("jpeg", "text", "a bytes field takes bytes, got str"),
                ("jpeg", 3, "a bytes field takes bytes, got int"),
                ("jpeg", np.zeros(3, np.int32), "got a int32 array of shape (3,)"),
                ("level", 256, "256 is out of uint8's range"),
                ("level", -1, "-1 is out of uint8's range"),
                ("score", "1.0", "a float32 scalar takes a number, got str")]:
            with pytest.raises(ValueError, match=f"sample 0, field '{field}': .*"):
                writer.append({**good, field: value})
            with pytest.raises(ValueError) as raised:
                writer.append({**good, field: value})
            assert message in str(raised.value)
        # 4 GiB of address space, no memory: refused before a byte is read.
        huge = mmap.mmap(-1, 1 << 32)
        with pytest.raises(ValueError, match="sample 0, field 'jpeg': 4294967296 bytes, more "
                                             "than a bytes field holds"):
            writer.append({**good, "jpeg": memoryview(huge)})
        huge.close()
        with pytest.raises(TypeError, match="sample 0 is a tuple, not a dict"):
            writer.append((b"x", 1, 1.0))
        assert writer.records == 0


@pytest.mark.parametrize("schema, message", [
    ({"image": ("uint16", (2,))}, "schema field 'image': dtype 'uint16' is not one of"),
    ({"image": ("uint8", (0, 2))}, "schema field 'image': dimension out of range (0; each is 1 "
                                   "to 2^31)"),
    ({"jpeg": ("bytes", (3,))}, "schema field 'jpeg': bytes fields have no shape"),
    ({}, "schema has no fields"),
    ({"image": ("uint8", "big")}, "schema field 'image': shape 'big' is not a tuple"),
    ("image", "a schema is a dict"),
])
def test_bad_schemas(tmp_path, schema, message):
    with pytest.raises(ValueError) as raised:
        stoker.DatasetWriter(tmp_path / "ds", schema)
    assert message in str(raised.value)
    assert leftovers(tmp_path) == []


def test_an_exception_leaves_nothing(tmp_path):
    with pytest.raises(KeyError):
        with stoker.DatasetWriter(tmp_path / "ds", FASHION) as writer:
            for sample in fashion_samples(10):
                writer.append(sample)
            assert any(name.startswith("ds.partial-") for name in leftovers(tmp_path))
            raise KeyError("stop")
    assert leftovers(tmp_path) == []


def test_abort_and_garbage_collection_leave_nothing(tmp_path):
    writer = stoker.DatasetWriter(tmp_path / "a", FASHION)
    writer.append(fashion_samples(1)[0])
    writer.abort()
    with pytest.raises(ValueError, match="aborted"):
        writer.append(fashion_samples(1)[0])
    writer = stoker.DatasetWriter(tmp_path / "b", FASHION)
    writer.append(fashion_samples(1)[0])
    del writer
    assert leftovers(tmp_path) == []


def test_finish_then_append_raises_and_abort_keeps_the_dataset(tmp_path):
    writer = stoker.DatasetWriter(tmp_path / "ds", FASHION)
    writer.append(fashion_samples(1)[0])
    assert writer.finish() == str(tmp_path / "ds")
    with pytest.raises(ValueError, match="finished"):
        writer.append(fashion_samples(1)[0])
    writer.abort()
    assert len(read_records(tmp_path / "ds")) == 1


def test_existing_output_is_file_exists_error(tmp_path):
    (tmp_path / "ds").mkdir()
    with pytest.raises(FileExistsError, match="output directory exists"):
        stoker.DatasetWriter(tmp_path / "ds", FASHION)
    assert leftovers(tmp_path) == ["ds"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_parent_is_an_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(stoker.Error, match="cannot create"):
        stoker.DatasetWriter(locked / "ds", FASHION)


def test_unwritable_parent_as_root_too(tmp_path):
    """A parent that is a file cannot hold a dataset, whoever runs the test."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(stoker.Error, match="cannot create"):
        stoker.DatasetWriter(tmp_path / "file" / "ds", FASHION)


def test_concurrent_use_raises_instead_of_racing(tmp_path):
    """Large records are written with the GIL released: a second thread calling then finds the
    writer busy and raises, and every append that returned wrote its record."""
    blob = np.zeros(1 << 20, np.uint8)
    stop = threading.Event()
    written, errors = [0, 0], []

    def append_until_stopped(worker):
        for _ in range(2000):
            if stop.is_set():
                return
            try:
                writer.append({"blob": blob})
                written[worker] += 1
            except RuntimeError as e:
                errors.append(str(e))
                stop.set()

    with stoker.DatasetWriter(tmp_path / "ds", {"blob": ("uint8", (1 << 20,))}) as writer:
        threads = [threading.Thread(target=append_until_stopped, args=(w,)) for w in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors and "in use by another thread" in errors[0]
    assert read_manifest(tmp_path / "ds")["records"] == sum(written)
