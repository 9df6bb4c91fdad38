"""WebDataset tars read in place (stoker.WebDataset): the webdataset library's samples (keys,
labels, bytes, pixels), the converted dataset's pixels for the same transforms and draws, the
source contract (order, exactly once across ranks, resume), the index kept in the cache only,
bad tars named by tar and member under on_error."""

import io
import os
import tarfile

import numpy as np
import pytest

import stoker
from batches import assert_same, epochs
from source_contract import NO_IMAGE, check_source_contract
from stoker import transforms as S
from test_image_folder_source import make_folder

PER_TAR = 5


def write_tars(folder, out):
    """The image folder's samples, in torchvision's order, as tars of PER_TAR samples written
    by webdataset's TarWriter: KEY.jpg (or .png) and KEY.cls."""
    datasets = pytest.importorskip("torchvision.datasets")
    wds = pytest.importorskip("webdataset")
    samples = datasets.ImageFolder(str(folder)).samples
    out.mkdir()
    for start in range(0, len(samples), PER_TAR):
        with wds.TarWriter(str(out / f"data-{start // PER_TAR:03d}.tar")) as sink:
            for i, (path, label) in enumerate(samples[start:start + PER_TAR], start):
                ext = "png" if path.endswith(".png") else "jpg"
                sink.write({"__key__": f"s/{i:04d}", ext: open(path, "rb").read(), "cls": label})
    return sorted(str(p) for p in out.glob("*.tar"))


@pytest.fixture
def folder(tmp_path):
    return make_folder(tmp_path / "folder")


@pytest.fixture
def tars(folder, tmp_path):
    return write_tars(folder, tmp_path / "tars")


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


def crop_loader(path, cache, **options):
    transforms = S.Compose([S.RandomResizedCrop(24), S.RandomHorizontalFlip(), S.ToTensor()])
    return stoker.Loader(path, batch_size=5, seed=3, transforms=transforms, cache_dir=cache,
                         **options)


def test_samples_are_webdatasets(tars, cache):
    wds = pytest.importorskip("webdataset")
    from PIL import Image
    reference = list(wds.WebDataset(tars, shardshuffle=False, empty_check=False))
    def loader(image):
        return stoker.Loader(stoker.WebDataset(tars), batch_size=1, shuffle=False,
                             cache_dir=cache, batch_format="dict", transforms={"image": image})
    as_stored = list(loader(S.RawBytes(max_length=1 << 20)))
    decoded = list(loader(S.DecodeImage()))
    assert len(as_stored) == len(decoded) == len(reference) == 23
    for stored, pixels, sample in zip(as_stored, decoded, reference):
        image = sample.get("jpg", sample.get("png"))
        assert stored["label"].item() == int(sample["cls"])
        assert bytes(stored["image"][0].numpy()) == image
        want = np.asarray(Image.open(io.BytesIO(image)).convert("RGB"))
        np.testing.assert_array_equal(pixels["image"][0].numpy().transpose(1, 2, 0), want)


def test_pixels_are_the_converted_datasets(folder, tars, tmp_path, cache):
    stoker.convert("imagefolder", folder, tmp_path / "converted")
    converted = epochs(crop_loader(tmp_path / "converted", cache), 2)
    pattern = str(tmp_path / "tars" / "data-{000..004}.tar")
    for source in (stoker.WebDataset(tars), stoker.WebDataset(pattern), tmp_path / "tars",
                   pattern):  # explicit, or found out
        assert_same(epochs(crop_loader(source, cache), 2), converted)
    assert_same(epochs(crop_loader(stoker.WebDataset(tars), cache, workers=0), 2), converted)


def test_source_contract_order_ranks_and_resume(tars, cache):
    check_source_contract(stoker.WebDataset(tars), cache)


def test_the_index_is_kept_in_the_cache_only(tars, tmp_path, cache):
    before = sorted(os.listdir(tmp_path / "tars"))
    assert len(stoker.Loader(stoker.WebDataset(tars), cache_dir=cache, transforms=NO_IMAGE)
               .dataset) == 23
    assert sorted(os.listdir(tmp_path / "tars")) == before
    assert len(os.listdir(os.path.join(cache, "tar-indexes"))) == len(tars)
    # A tar rewritten since is indexed again.
    with tarfile.open(tars[0], "w") as tar:
        info = tarfile.TarInfo("only.cls")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    loader = stoker.Loader(stoker.WebDataset(tars), cache_dir=cache, transforms=NO_IMAGE)
    assert len(loader.dataset) == 23 - PER_TAR + 1


def truncate(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def test_bad_tars_are_named_by_tar_and_member(tars, cache):
    with tarfile.open(tars[1]) as tar:
        image = tar.getmember("s/0005.jpg").offset_data
    truncate(tars[1], image + 100)  # inside the first sample's image
    with pytest.raises(stoker.Error, match=f"{tars[1]}: member s/0005.jpg: cut short"):
        epochs(crop_loader(stoker.WebDataset(tars), cache, shuffle=False), 1)
    kept = epochs(crop_loader(stoker.WebDataset(tars), cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 23 - PER_TAR
    with open(tars[2], "wb") as f:
        f.write(b"not a tar" * 100)
    with pytest.raises(stoker.Error, match=f"{tars[2]}: not a tar"):
        epochs(crop_loader(stoker.WebDataset(tars[2:]), cache, shuffle=False), 1)


def test_a_sample_missing_its_label_is_named(tmp_path, cache):
    wds = pytest.importorskip("webdataset")
    from loader_datasets import encode, photo
    path = str(tmp_path / "one.tar")
    with wds.TarWriter(path) as sink:
        sink.write({"__key__": "a", "jpg": encode(photo(1, 30, 20), "JPEG"), "cls": 1})
        sink.write({"__key__": "b", "jpg": encode(photo(2, 30, 20), "JPEG")})
    with pytest.raises(stoker.Error, match=f"{path}: sample b: no label"):
        epochs(crop_loader(stoker.WebDataset(path), cache, shuffle=False), 1)


def test_a_missing_tar_is_one_line(tmp_path, cache):
    with pytest.raises(FileNotFoundError, match="nothing.tar: no such tar"):
        stoker.Loader(stoker.WebDataset(str(tmp_path / "nothing.tar")), cache_dir=cache)


def test_inspect_and_verify_take_tars(tars, tmp_path, cache):
    assert stoker.inspect(tmp_path / "tars", cache_dir=cache)["records"] == 23
    assert stoker.verify(tmp_path / "tars", cache_dir=cache)["datasets"][0]["records"] == 23


def test_a_tar_gone_after_the_open_is_one_line(tars, cache):
    loader = stoker.Loader(stoker.WebDataset(tars), cache_dir=cache, transforms=NO_IMAGE,
                           batch_format="dict", on_error="skip")
    os.remove(tars[2])
    with pytest.raises(FileNotFoundError, match=f"^{tars[2]}: no such file$"):
        list(loader)
