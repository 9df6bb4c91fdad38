"""Variable-length fields from Python: boxes [N, 4] and labels [N] sharing N, tokens [T]; any N,
0 included, from numpy arrays or torch tensors; bad values named by sample and field."""

import numpy as np
import pytest
import torch

import stoker
from stored_records import read_manifest, read_records

DETECTION = {"image": "bytes", "boxes": ("float32", ("N", 4)), "labels": ("int64", ("N",)),
             "tokens": ("int64", ["T"]), "id": "int64"}


def detection_samples(n, seed=0):
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        boxes = rng.random((int(rng.integers(0, 5)), 4), dtype=np.float32)
        samples.append({"image": bytes(rng.integers(0, 256, int(rng.integers(0, 9)),
                                                    dtype=np.uint8)),
                        "boxes": boxes if i % 2 else torch.from_numpy(boxes),
                        "labels": rng.integers(0, 90, len(boxes)),
                        "tokens": rng.integers(-5, 5, int(rng.integers(0, 7))), "id": i})
    return samples


def test_rows_of_any_count_round_trip(tmp_path):
    samples = detection_samples(40)
    with stoker.DatasetWriter(tmp_path / "ds", DETECTION, shard_mb=0.001) as writer:
        for sample in samples:
            writer.append(sample)
        assert writer.schema[1] == ("boxes", "float32", ("N", 4))
    stored = read_records(tmp_path / "ds")
    for got, want in zip(stored, samples):
        np.testing.assert_array_equal(got["boxes"], np.asarray(want["boxes"]))
        assert got["boxes"].shape == (len(want["labels"]), 4)
        np.testing.assert_array_equal(got["labels"], want["labels"])
        np.testing.assert_array_equal(got["tokens"], want["tokens"])
        assert got["image"] == want["image"] and got["id"] == want["id"]
    manifest = read_manifest(tmp_path / "ds")
    assert manifest["format_version"] == 2
    assert len(manifest["shards"]) > 1
    assert manifest["max_lengths"] == {
        "boxes": max(len(s["labels"]) for s in samples),
        "labels": max(len(s["labels"]) for s in samples),
        "tokens": max(len(s["tokens"]) for s in samples)}
    assert stoker.verify(tmp_path / "ds")["datasets"][0]["records"] == 40
    summary = stoker.inspect(tmp_path / "ds")
    assert summary["max_lengths"] == manifest["max_lengths"]
    schema = summary["schema"]
    assert schema["fields"][1]["shape"] == ["N", 4]
    # The JSON form of a dataset's schema writes another dataset.
    with stoker.DatasetWriter(tmp_path / "again", schema) as writer:
        writer.append(samples[0])


def test_write_dataset_takes_variable_length_fields(tmp_path):
    samples = detection_samples(10, seed=1)
    stoker.write_dataset(tmp_path / "ds", samples, schema=DETECTION, workers=0)
    stored = read_records(tmp_path / "ds")
    for got, want in zip(stored, samples):
        np.testing.assert_array_equal(got["labels"], want["labels"])


@pytest.mark.parametrize("change, message", [
    ({"boxes": np.zeros((3,), np.float32)},
     "sample 0, field 'boxes': float32 array of shape (3,), the schema says float32 (N, 4)"),
    ({"boxes": np.zeros((2, 5), np.float32)},
     "sample 0, field 'boxes': float32 array of shape (2, 5), the schema says float32 (N, 4)"),
    ({"boxes": np.zeros((2, 4), np.float64)},
     "sample 0, field 'boxes': float64 array of shape (2, 4), the schema says float32 (N, 4)"),
    ({"labels": np.zeros((2, 1), np.int64)},
     "sample 0, field 'labels': int64 array of shape (2, 1), the schema says int64 (N,)"),
    ({"labels": np.zeros(3, np.int64)},
     "sample 0, field 'labels': 3 rows, but field 'boxes', which shares dimension 'N', has 2"),
])
def test_bad_values_raise_naming_sample_and_field(tmp_path, change, message):
    sample = {"image": b"", "boxes": np.zeros((2, 4), np.float32),
              "labels": np.zeros(2, np.int64), "tokens": np.zeros(0, np.int64), "id": 0}
    with stoker.DatasetWriter(tmp_path / "ds", DETECTION) as writer:
        with pytest.raises(ValueError) as error:
            writer.append({**sample, **change})
        assert str(error.value) == message
        writer.append(sample)  # the writer stays usable
        assert writer.records == 1


@pytest.mark.parametrize("schema, message", [
    ({"a": ("uint8", (4, "N"))}, "shape (4, 'N') is not a tuple of integers"),
    ({"a": ("bytes", ("N",))}, "bytes fields have no shape"),
    ({"a": ("uint8", ("N", 0))}, "dimension out of range"),
    ({"a": ("uint8", ("",))}, "empty dimension name"),
])
def test_bad_variable_length_schemas(tmp_path, schema, message):
    with pytest.raises((ValueError, stoker.Error)) as error:
        stoker.DatasetWriter(tmp_path / "ds", schema)
    assert message in str(error.value)
    assert not (tmp_path / "ds").exists()


def test_datasets_without_them_stay_version_one(tmp_path):
    with stoker.DatasetWriter(tmp_path / "ds", {"label": "int64"}) as writer:
        writer.append({"label": 3})
    manifest = read_manifest(tmp_path / "ds")
    assert manifest["format_version"] == 1 and "max_lengths" not in manifest
