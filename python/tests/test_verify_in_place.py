"""stoker.verify on data read in place reads every record as the loader does (the images'
headers decoded): a non-image, a dangling link, a null Parquet image, a tar member that is a
symbolic link or a tar sample without its label is a bad record, named one line each by file and record, member or row, as the
loader names it; good data is all verified."""

import os

import pytest

import stoker
from parquet_build import needs_parquet
from test_image_folder_source import make_folder
from test_webdataset_source import write_tars


def bad_records(path, cache):
    with pytest.raises(stoker.Error, match="failed verification") as raised:
        stoker.verify(path, cache_dir=cache)
    return raised.value.errors


def test_a_non_image_and_a_dangling_link_in_an_image_folder(tmp_path):
    folder = make_folder(tmp_path / "folder")
    cache = str(tmp_path / "cache")
    assert stoker.verify(folder, cache_dir=cache)["datasets"][0]["records"] == 23
    (folder / "dog" / "01.jpg").write_bytes(b"not an image")
    os.symlink(tmp_path / "gone.jpg", folder / "cat" / "zz.jpg")
    errors = bad_records(folder, cache)
    assert len(errors) == 2, errors
    assert any(e.startswith(f"{folder}/dog/01.jpg: ") for e in errors), errors
    assert any(e.startswith(f"{folder}/cat/zz.jpg: ") for e in errors), errors


def test_a_tar_member_that_is_not_an_image(tmp_path):
    tars = write_tars(make_folder(tmp_path / "folder"), tmp_path / "tars",
                      extra=lambda i: {})
    cache = str(tmp_path / "cache")
    assert stoker.verify(tmp_path / "tars", cache_dir=cache)["datasets"][0]["records"] == 23
    wds = pytest.importorskip("webdataset")
    with wds.TarWriter(tars[1]) as sink:
        for i in range(5):
            sink.write({"__key__": f"s/{i:04d}", "jpg": b"not a jpeg" if i == 2 else
                        open(next((tmp_path / "folder").rglob("*.jpg")), "rb").read(), "cls": 0})
    errors = bad_records(tmp_path / "tars", str(tmp_path / "cache2"))
    assert len(errors) == 1 and errors[0].startswith(f"{tars[1]}: member s/0002.jpg: "), errors


@needs_parquet
def test_a_null_parquet_image(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = open(next(make_folder(tmp_path / "folder").rglob("*.jpg")), "rb").read()
    table = pa.table({"image": [image, None, image], "label": pa.array([0, 1, 0], pa.int64())})
    pq.write_table(table, tmp_path / "train.parquet")
    errors = bad_records(tmp_path / "train.parquet", str(tmp_path / "cache"))
    assert len(errors) == 1 and errors[0].startswith(f"{tmp_path}/train.parquet: row 1 "), errors


def test_a_tar_sample_without_its_label_among_no_images(tmp_path):
    # A tar of labels and texts, no images: a sample without its label is a bad record (its
    # record holds label 0), though no image header is there to fail.
    wds = pytest.importorskip("webdataset")
    path = str(tmp_path / "labels.tar")
    with wds.TarWriter(path) as sink:
        sink.write({"__key__": "a", "cls": 1, "txt": "one"})
        sink.write({"__key__": "b", "txt": "two"})
    errors = bad_records(path, str(tmp_path / "cache"))
    assert errors == [f"{path}: sample b: no label (cls) (dataset record 1)"], errors
