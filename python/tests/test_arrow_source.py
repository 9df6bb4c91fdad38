"""Arrow IPC files read in place (stoker.Arrow): Hugging Face datasets' cache files (the stream
format) give pyarrow's labels and the converted dataset's pixels for the same transforms and
draws (the source contract: test_source_contract.py); Arrow's file format, a folder, a glob and
Spark's column names; images by path (null bytes) read from their files, a relative path in the
Arrow file's folder or in relative_to; bad files, batches and rows named in one line."""

import pytest

import stoker
from batches import assert_same, epochs
from parquet_build import needs_parquet
from source_contract import NO_IMAGE, check_bad_sample_refused
from test_image_folder_source import CLASSES, crop_loader, make_folder
from test_parquet_source import hugging_face_table, images_by_path, labels

pa = pytest.importorskip("pyarrow")
pytestmark = needs_parquet


def write_arrow(table, path, rows_per_batch=4, file_format=False):
    """`table` as an Arrow IPC stream (as Hugging Face datasets' ArrowWriter writes its cache
    files) or, with `file_format`, an Arrow IPC file, in record batches of `rows_per_batch`."""
    with pa.OSFile(str(path), "wb") as sink:
        open_writer = pa.ipc.new_file if file_format else pa.ipc.new_stream
        with open_writer(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=rows_per_batch):
                writer.write_batch(batch)
    return path


def write_hugging_face_arrow(folder, path, cache):
    """The image folder's samples as a Hugging Face datasets cache file (hugging_face_table's)."""
    return write_arrow(hugging_face_table(folder, cache), path)


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


@pytest.fixture
def table(tmp_path, cache):
    """make_folder's images, in tmp_path/folder, as hugging_face_table's rows."""
    return hugging_face_table(make_folder(tmp_path / "folder"), cache)


@pytest.fixture
def hf_file(table, tmp_path):
    return write_arrow(table, tmp_path / "data-00000-of-00001.arrow")


def test_labels_classes_and_pixels(hf_file, table, tmp_path, cache):
    loader = stoker.Loader(stoker.Arrow(hf_file), batch_size=4, shuffle=False,
                           batch_format="dict", cache_dir=cache, transforms=NO_IMAGE)
    assert len(loader.dataset) == table.num_rows == 23
    assert loader.dataset.classes == list(CLASSES)
    assert labels(loader) == table.column("label").to_pylist()
    stoker.convert("imagefolder", tmp_path / "folder", tmp_path / "converted")
    converted = epochs(crop_loader(tmp_path / "converted", cache), 2)
    assert_same(epochs(crop_loader(stoker.Arrow(hf_file), cache), 2), converted)
    # Found out from the path, and on a single thread, the same batches.
    assert_same(epochs(crop_loader(str(hf_file), cache, workers=0), 2), converted)


def test_file_format_spark_columns_folder_and_glob(table, tmp_path, cache):
    spark = pa.table({"jpg": pa.array([image["bytes"] for image in
                                       table.column("image").to_pylist()], pa.binary()),
                      "cls": table.column("label").cast(pa.int32())})
    data = tmp_path / "spark"
    data.mkdir()
    write_arrow(spark.slice(10), data / "part-1.arrow", rows_per_batch=5, file_format=True)
    write_arrow(spark.slice(0, 10), data / "part-0.arrow", rows_per_batch=3)
    listed = [data / "part-0.arrow", data / "part-1.arrow"]
    for path in (data, data / "part-*.arrow", listed):
        loader = stoker.Loader(stoker.Arrow(path, image="jpg", label="cls"), batch_size=4,
                               shuffle=False, batch_format="dict", cache_dir=cache,
                               transforms=NO_IMAGE)
        assert labels(loader) == table.column("label").to_pylist()
    with pytest.raises(ValueError, match=r"part-0.arrow: no column .image. \(its columns: "
                                           r"jpg, cls\)"):
        stoker.Loader(stoker.Arrow(data), batch_size=4, cache_dir=cache)
    with pytest.raises(ValueError, match=r"part-0.arrow: column .cls. is int32, not binary"):
        stoker.Loader(stoker.Arrow(data, image="cls", label="cls"), batch_size=4,
                      cache_dir=cache)


def with_images(table, images):
    return table.set_column(0, "image", pa.array(images, table.schema.field(0).type))


def test_images_by_path_relative_to_the_file_or_a_folder(table, hf_file, tmp_path, cache,
                                                         monkeypatch):
    data = tmp_path / "data"
    paths_file = write_arrow(with_images(table, images_by_path(table, data)), data / "train.arrow")
    want = epochs(crop_loader(stoker.Arrow(hf_file), cache), 2)
    monkeypatch.chdir(data / "img")  # relative paths are the Arrow file's folder's
    assert_same(epochs(crop_loader(stoker.Arrow(paths_file), cache), 2), want)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    moved_file = moved / "train.arrow"
    paths_file.rename(moved_file)
    assert_same(epochs(crop_loader(stoker.Arrow(moved_file, relative_to=data), cache), 2), want)
    (data / "img" / "6.jpg").unlink()
    with pytest.raises(stoker.Error) as error:
        epochs(crop_loader(stoker.Arrow(moved_file, relative_to=data), cache, shuffle=False), 1)
    message = str(error.value)
    assert message.startswith(f"{moved_file}: row 6 (record batch 1): its image's path "
                              f"'img/6.jpg': {data / 'img' / '6.jpg'}: "), message
    assert "\n" not in message


def test_bad_files_batches_and_rows_are_named(table, hf_file, tmp_path, cache):
    images = table.column("image").to_pylist()
    images[9] = {"bytes": b"text, not a JPEG", "path": "bad.jpg"}
    bad_rows = write_arrow(with_images(table, images), tmp_path / "rows.arrow")
    named = rf"^{bad_rows}: row 9 \(record batch 2\): .*JPEG"
    with pytest.raises(stoker.Error, match=named):
        epochs(crop_loader(stoker.Arrow(bad_rows), cache, shuffle=False), 1)
    kept = epochs(crop_loader(stoker.Arrow(bad_rows), cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 22
    check_bad_sample_refused(stoker.Arrow(bad_rows), cache, named)  # read for its label alone
    images[9] = None  # a null image, no path
    null_image = write_arrow(with_images(table, images), tmp_path / "null.arrow")
    with pytest.raises(stoker.Error, match=rf"^{null_image}: row 9 \(record batch 2\): its image "
                                           r"is null"):
        epochs(crop_loader(stoker.Arrow(null_image), cache, shuffle=False), 1)
    data = hf_file.read_bytes()
    truncated = tmp_path / "truncated.arrow"
    truncated.write_bytes(data[:len(data) // 2])
    with pytest.raises(stoker.Error, match=rf"^{truncated}: not an Arrow file stoker reads: at "
                                           r"byte \d+: "):
        stoker.Loader(stoker.Arrow(truncated), batch_size=4, cache_dir=cache)
    not_arrow = tmp_path / "notes.arrow"
    not_arrow.write_text("not Arrow, but long enough to be read as a message length")
    with pytest.raises(stoker.Error, match=rf"^{not_arrow}: not an Arrow file stoker reads"):
        stoker.Loader(stoker.Arrow(not_arrow), batch_size=4, cache_dir=cache)
    # A batch whose body is damaged (its image offsets): its rows, named when read.
    corrupt = tmp_path / "corrupt.arrow"
    start = data.index(table.column("image")[4]["bytes"].as_py())  # batch 1's first image
    corrupt.write_bytes(data[:start - 24] + b"\xff" * 24 + data[start:])
    with pytest.raises(stoker.Error) as error:
        epochs(crop_loader(stoker.Arrow(corrupt), cache, shuffle=False), 1)
    assert str(error.value).startswith(f"{corrupt}: row 4 (record batch 1): cannot read it: ")
    assert "\n" not in str(error.value)
