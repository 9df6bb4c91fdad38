"""Parquet files read in place (stoker.Parquet): Hugging Face's layout gives pyarrow's labels and
the converted dataset's pixels for the same transforms and draws (the source contract:
test_source_contract.py); Spark's layout with its column names, a folder and a
glob; found out from a plain path; bad files and rows named; images by path (null bytes) read
from their files, a relative path in the Parquet file's folder, a missing one named."""

import json

import pytest

import stoker
from batches import assert_same, epochs
from parquet_build import needs_parquet
from source_contract import NO_IMAGE, check_bad_sample_refused
from test_image_folder_source import CLASSES, crop_loader, make_folder

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = needs_parquet


def hugging_face_table(folder, cache):
    """The image folder's samples, in its order, as Hugging Face datasets holds them: an `image`
    struct of bytes and path, a `label` int64 column with its ClassLabel names in the schema's
    metadata, and another column."""
    samples = stoker.Loader(stoker.ImageFolder(folder), batch_size=256, shuffle=True, cache_dir=cache,
                            transforms=NO_IMAGE).dataset.samples
    images = [{"bytes": open(p, "rb").read(), "path": p} for p, _ in samples]
    table = pa.table({"image": images, "label": pa.array([c for _, c in samples], pa.int64()),
                      "caption": [f"a photo {i}" for i in range(len(samples))]})
    features = {"image": {"_type": "Image"}, "label": {"names": list(CLASSES),
                                                        "_type": "ClassLabel"},
                "caption": {"dtype": "string", "_type": "Value"}}
    return table.replace_schema_metadata(
        {"huggingface": json.dumps({"info": {"features": features}})})


def write_parquet(folder, path, cache, rows_per_group=4):
    """hugging_face_table's rows as Hugging Face datasets writes them to Parquet: row groups of
    `rows_per_group` rows."""
    pq.write_table(hugging_face_table(folder, cache), path, row_group_size=rows_per_group)
    return path


@pytest.fixture
def folder(tmp_path):
    return make_folder(tmp_path / "folder")


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


@pytest.fixture
def hf_file(folder, tmp_path, cache):
    return write_parquet(folder, tmp_path / "train.parquet", cache)


def labels(loader):
    return [label for batch in loader for label in batch["label"].tolist()]


def test_labels_and_classes_are_pyarrows(hf_file, cache):
    loader = stoker.Loader(stoker.Parquet(hf_file), batch_size=4, shuffle=False,
                           batch_format="dict", cache_dir=cache, transforms=NO_IMAGE)
    table = pq.read_table(hf_file)
    assert len(loader.dataset) == table.num_rows == 23
    assert loader.dataset.classes == list(CLASSES)
    assert labels(loader) == table.column("label").to_pylist()


def test_pixels_are_the_converted_datasets(folder, hf_file, tmp_path, cache):
    stoker.convert("imagefolder", folder, tmp_path / "converted")
    converted = epochs(crop_loader(tmp_path / "converted", cache), 2)
    assert_same(epochs(crop_loader(stoker.Parquet(hf_file), cache), 2), converted)
    # Found out from the path, and on a single thread, the same batches.
    assert_same(epochs(crop_loader(str(hf_file), cache, workers=0), 2), converted)


def test_spark_layout_in_a_folder_and_by_glob(hf_file, tmp_path, cache):
    table = pq.read_table(hf_file)
    jpg = pa.array([image["bytes"] for image in table.column("image").to_pylist()], pa.binary())
    cls = table.column("label").cast(pa.int32())
    data = tmp_path / "spark"
    data.mkdir()
    pq.write_table(pa.table({"jpg": jpg[10:], "cls": cls[10:]}), data / "part-1.parquet",
                   row_group_size=5)
    pq.write_table(pa.table({"jpg": jpg[:10], "cls": cls[:10]}), data / "part-0.parquet",
                   row_group_size=5)
    (data / "_SUCCESS").write_text("")
    want = labels(stoker.Loader(hf_file, batch_size=4, shuffle=False, batch_format="dict",
                                cache_dir=cache, transforms=NO_IMAGE))
    listed = [data / "part-0.parquet", data / "part-1.parquet"]
    for path in (data, data / "part-*.parquet", listed):
        loader = stoker.Loader(stoker.Parquet(path, image="jpg", label="cls"), batch_size=4,
                               shuffle=False, batch_format="dict", cache_dir=cache,
                               transforms=NO_IMAGE)
        assert labels(loader) == want
        with pytest.raises(AttributeError, match="has no class names"):
            loader.dataset.classes
    with pytest.raises(ValueError, match=r"part-0.parquet: no column .image. \(its columns: "
                                           r"jpg, cls\)"):
        stoker.Loader(data, batch_size=256, shuffle=True, cache_dir=cache)
    # inspect and verify take the source object, its columns with it (issue 66: a TypeError).
    spark = stoker.Parquet(data, image="jpg", label="cls")
    assert stoker.inspect(spark, cache_dir=cache)["records"] == len(want)
    assert stoker.verify(spark, cache_dir=cache)["datasets"][0]["records"] == len(want)
    with pytest.raises(ValueError, match="one source, not a stoker.Mixture"):
        stoker.inspect(stoker.Mixture([spark, hf_file]))


def test_bad_files_and_rows_are_named(hf_file, tmp_path, cache):
    table = pq.read_table(hf_file)
    images = table.column("image").to_pylist()
    images[9] = {"bytes": b"text, not a JPEG", "path": "bad.jpg"}
    bad_file = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(0, "image", pa.array(images, table.schema.field(0).type)),
                   bad_file, row_group_size=4)
    named = rf"{bad_file}: row 9 \(row group 2\): .*JPEG"
    with pytest.raises(stoker.Error, match=named):
        epochs(crop_loader(stoker.Parquet(bad_file), cache, shuffle=False), 1)
    kept = epochs(crop_loader(stoker.Parquet(bad_file), cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 22
    check_bad_sample_refused(stoker.Parquet(bad_file), cache, named)  # read for its label alone
    not_parquet = tmp_path / "notes.parquet"
    not_parquet.write_text("not Parquet")
    with pytest.raises(stoker.Error, match=rf"^{not_parquet}: not a Parquet file"):
        stoker.Loader(stoker.Parquet(not_parquet), batch_size=256, shuffle=True, cache_dir=cache)
    with pytest.raises(ValueError, match=rf"{hf_file}: no column .picture."):
        stoker.Loader(stoker.Parquet(hf_file, image="picture"), batch_size=256, shuffle=True, cache_dir=cache)


def test_inspect_and_verify_take_parquet_files(hf_file, cache):
    info = stoker.inspect(hf_file, cache_dir=cache)
    assert (info["records"], info["class_names"]) == (23, list(CLASSES))
    assert stoker.verify(hf_file, cache_dir=cache)["datasets"][0]["records"] == 23


def images_by_path(table, data):
    """`table`'s images as Hugging Face datasets holds an Image column cast from image files: the
    struct's bytes null and its path set. Even rows name a copy under data/img by a path relative
    to data, odd rows the image folder's file by its absolute path."""
    (data / "img").mkdir(parents=True)
    images = []
    for i, image in enumerate(table.column("image").to_pylist()):
        path = image["path"]
        if i % 2 == 0:
            path = f"img/{i}.jpg"
            (data / path).write_bytes(image["bytes"])
        images.append({"bytes": None, "path": path})
    return images


def write_paths_parquet(hf_file, data):
    """hf_file's rows, their images by path (images_by_path), as data/train.parquet."""
    table = pq.read_table(hf_file)
    images = images_by_path(table, data)
    path = data / "train.parquet"
    pq.write_table(table.set_column(0, "image", pa.array(images, table.schema.field(0).type)),
                   path, row_group_size=4)
    return path


def test_images_by_path_are_read_from_their_files(hf_file, tmp_path, cache, monkeypatch):
    paths_file = write_paths_parquet(hf_file, tmp_path / "data")
    want = epochs(crop_loader(stoker.Parquet(hf_file), cache), 2)
    monkeypatch.chdir(tmp_path / "data" / "img")  # relative paths are the Parquet file's folder's
    assert_same(epochs(crop_loader(stoker.Parquet(paths_file), cache), 2), want)
    loader = stoker.Loader(stoker.Parquet(paths_file), batch_size=4, shuffle=False,
                           batch_format="dict", cache_dir=cache, transforms=NO_IMAGE)
    assert labels(loader) == pq.read_table(hf_file).column("label").to_pylist()


def test_a_missing_image_file_is_named_by_row_and_path(hf_file, tmp_path, cache):
    paths_file = write_paths_parquet(hf_file, tmp_path / "data")
    (tmp_path / "data" / "img" / "6.jpg").unlink()
    with pytest.raises(stoker.Error) as error:
        epochs(crop_loader(stoker.Parquet(paths_file), cache, shuffle=False), 1)
    message = str(error.value)
    assert message.startswith(f"{paths_file}: row 6 (row group 1): its image's path 'img/6.jpg': "
                              f"{tmp_path / 'data' / 'img' / '6.jpg'}: "), message
    assert "\n" not in message
    kept = epochs(crop_loader(stoker.Parquet(paths_file), cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 22


def test_a_decompression_bomb_is_refused_naming_its_row(tmp_path, cache):
    """A file of a few KB whose 10,000 rows repeat one 20 MB image through a dictionary
    (200 GB decoded): the rows past what a unit may hold (1 GiB) are bad records named by file,
    row and row group, not an abort (issue 66, H2)."""
    import io

    import numpy as np
    from PIL import Image
    png = io.BytesIO()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(png, "PNG")
    image = png.getvalue() + bytes(20 << 20)  # a PNG, then 20 MB after its end
    repeated = pa.DictionaryArray.from_arrays(pa.array([0] * 10_000, pa.int32()),
                                              pa.array([image], pa.binary()))
    table = pa.table({"jpg": repeated, "cls": pa.array([1] * 10_000, pa.int64())})
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(table, bomb, row_group_size=10_000, compression="zstd",
                   dictionary_pagesize_limit=64 << 20)
    assert bomb.stat().st_size < 100_000
    loader = stoker.Loader(stoker.Parquet(bomb, image="jpg", label="cls"), batch_size=64,
                           shuffle=False, batch_format="dict", cache_dir=cache)
    with pytest.raises(stoker.Error, match=rf"^{bomb}: row (5[01]) \(row group 0\): its unit's "
                                           r"rows decode to more than 1 GiB from here") as error:
        list(loader)
    assert "\n" not in str(error.value)


def test_column_names_in_an_error_are_one_line(tmp_path, cache):
    """A file's column names are data: a line break in one is escaped, and a file of many
    columns names 32 of them, so the error stays one line (as token columns', issue 66)."""
    path = tmp_path / "odd.parquet"
    columns = {"jpg\nlabel": [b"x"]} | {f"c{i}": [i] for i in range(40)}
    pq.write_table(pa.table(columns), path)
    with pytest.raises(ValueError) as refused:
        stoker.Loader(stoker.Parquet(path, image="image", label="label"), batch_size=1,
                      cache_dir=cache)
    message = str(refused.value)
    assert "\n" not in message, message
    assert "its columns: jpg\\x0alabel, c0, c1" in message, message
    assert message.endswith("c30 and 9 more)"), message
