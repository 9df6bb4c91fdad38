"""transcode_cache=True: data read in place (an image folder, WebDataset tars, Parquet) gives the same
batches as without it, epoch after epoch and run after run, from units transcoded once into the
cache folder's transcoded/; a damaged cached unit is named in one warning and rebuilt."""

import io
import os
import warnings

import pytest
from PIL import Image

import stoker
from batches import assert_same, epochs
from parquet_build import needs_parquet
from test_image_folder_source import crop_loader, make_folder
from test_webdataset_source import write_tars


def add_jpegs_of_every_kind(folder):
    """A progressive, a grey and a CMYK JPEG beside make_folder's baseline ones."""
    base = Image.open(next(folder.glob("cat/*.jpg"))).convert("RGB").resize((53, 37))
    kinds = {"progressive": (base, {"progressive": True}), "grey": (base.convert("L"), {}),
             "cmyk": (base.convert("CMYK"), {})}
    for name, (image, options) in kinds.items():
        out = io.BytesIO()
        image.save(out, "JPEG", quality=85, **options)
        (folder / "dog" / f"{name}.jpg").write_bytes(out.getvalue())
    return folder


@pytest.fixture
def folder(tmp_path):
    return add_jpegs_of_every_kind(make_folder(tmp_path / "folder"))


@pytest.fixture(params=["imagefolder", "webdataset", pytest.param("parquet", marks=needs_parquet)])
def data(request, folder, tmp_path):
    if request.param == "imagefolder":
        return folder
    if request.param == "parquet":
        from test_parquet_source import write_parquet
        return stoker.Parquet(write_parquet(folder, tmp_path / "train.parquet",
                                            str(tmp_path / "listing")))
    return stoker.WebDataset(write_tars(folder, tmp_path / "tars"))


def cached_units(cache):
    return sorted((cache / "transcoded").glob("*.shard"))


def test_batches_are_the_same_with_and_without(data, tmp_path):
    want = epochs(crop_loader(data, str(tmp_path / "plain")), 2)
    cache = tmp_path / "cache"
    assert_same(epochs(crop_loader(data, str(cache), transcode_cache=True), 2), want)
    units = cached_units(cache)
    assert units
    written = {u: os.stat(u).st_ino for u in units}
    # A later run reads the kept units as they are (not written again).
    assert_same(epochs(crop_loader(data, str(cache), transcode_cache=True), 2), want)
    assert {u: os.stat(u).st_ino for u in cached_units(cache)} == written


def test_a_damaged_unit_is_named_in_one_warning_and_rebuilt(data, tmp_path, capfd):
    want = epochs(crop_loader(data, str(tmp_path / "plain")), 2)
    cache = tmp_path / "cache"
    epochs(crop_loader(data, str(cache), transcode_cache=True), 1)
    damaged = cached_units(cache)[0]
    size = damaged.stat().st_size
    with open(damaged, "r+b") as f:
        f.truncate(size - 100)
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # each warning the loader gives, repeats included
        assert_same(epochs(crop_loader(data, str(cache), transcode_cache=True), 2), want)
    told = [str(w.message) for w in caught if "transcode cache" in str(w.message)]
    assert len(told) == 1 and told[0].startswith(f"transcode cache: {damaged} (of "), told
    assert "damaged, rebuilt" in told[0]
    assert all(w.category is UserWarning for w in caught if str(w.message) in told)
    assert "transcode cache" not in capfd.readouterr().err  # the library prints nothing
    assert damaged.stat().st_size == size


def test_transcode_cache_is_a_bool(folder, tmp_path):
    with pytest.raises(TypeError, match="transcode_cache must be True or False"):
        crop_loader(folder, str(tmp_path / "cache"), transcode_cache="yes")
