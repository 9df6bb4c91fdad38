"""WebDataset tars read in place (stoker.WebDataset): the webdataset library's samples (keys,
labels, bytes, pixels, the other members as it decodes them), the converted dataset's pixels for
the same transforms and draws (the source contract: test_source_contract.py), the index kept
in the cache only, bad tars and fields named by tar and member under on_error."""

import io
import json
import os
import tarfile

import numpy as np
import pytest
import torch

import stoker
from batches import assert_same, epochs
from source_contract import NO_IMAGE, check_bad_sample_refused
from stoker import transforms as S
from test_image_folder_source import make_folder

PER_TAR = 5


def write_tars(folder, out, extra=lambda i: {}):
    """The image folder's samples, in torchvision's order, as tars of PER_TAR samples written
    by webdataset's TarWriter: KEY.jpg (or .png), KEY.cls and the members `extra(i)` gives."""
    datasets = pytest.importorskip("torchvision.datasets")
    wds = pytest.importorskip("webdataset")
    samples = datasets.ImageFolder(str(folder)).samples
    out.mkdir()
    for start in range(0, len(samples), PER_TAR):
        with wds.TarWriter(str(out / f"data-{start // PER_TAR:03d}.tar")) as sink:
            for i, (path, label) in enumerate(samples[start:start + PER_TAR], start):
                ext = "png" if path.endswith(".png") else "jpg"
                sink.write({"__key__": f"s/{i:04d}", ext: open(path, "rb").read(), "cls": label,
                            **extra(i)})
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


def assert_samples_are_webdatasets(tars, cache):
    """stoker's images (as stored and decoded) and labels of `tars` are webdataset's, read with
    on_error="raise"."""
    wds = pytest.importorskip("webdataset")
    from PIL import Image
    reference = list(wds.WebDataset(tars, shardshuffle=False, empty_check=False))
    def loader(image):
        return stoker.Loader(stoker.WebDataset(tars), batch_size=1, shuffle=False,
                             cache_dir=cache, batch_format="dict", transforms={"image": image},
                             on_error="raise")
    as_stored = list(loader(S.RawBytes(max_length=1 << 20)))
    decoded = list(loader(S.DecodeImage()))
    assert len(as_stored) == len(decoded) == len(reference) == 23
    for stored, pixels, sample in zip(as_stored, decoded, reference):
        image = sample.get("jpg", sample.get("png"))
        assert stored["label"].item() == int(sample["cls"])
        assert bytes(stored["image"][0].numpy()) == image
        want = np.asarray(Image.open(io.BytesIO(image)).convert("RGB"))
        np.testing.assert_array_equal(pixels["image"][0].numpy().transpose(1, 2, 0), want)


def test_samples_are_webdatasets(tars, cache):
    assert_samples_are_webdatasets(tars, cache)


def test_a_member_only_some_samples_hold_is_left_out_and_named(folder, tmp_path, cache):
    # img2dataset's optional members: one sample of 23 has a caption.
    tars = write_tars(folder, tmp_path / "tars", lambda i: {"txt": "a caption"} if i == 7 else {})
    assert_samples_are_webdatasets(tars, cache)
    loader = stoker.Loader(stoker.WebDataset(tars), batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE)
    assert "label cls, fields none; left out: txt (in 1 of 23 samples)" in loader._native.describe
    info = stoker.inspect(tmp_path / "tars", cache_dir=cache)
    assert "txt" not in [f["name"] for f in info["schema"]["fields"]]
    assert "left out: txt (in 1 of 23 samples)" in info["source"]


def test_pixels_are_the_converted_datasets(folder, tars, tmp_path, cache):
    stoker.convert("imagefolder", folder, tmp_path / "converted")
    converted = epochs(crop_loader(tmp_path / "converted", cache), 2)
    pattern = str(tmp_path / "tars" / "data-{000..004}.tar")
    for source in (stoker.WebDataset(tars), stoker.WebDataset(pattern), tmp_path / "tars",
                   pattern):  # explicit, or found out
        assert_same(epochs(crop_loader(source, cache), 2), converted)
    assert_same(epochs(crop_loader(stoker.WebDataset(tars), cache, workers=0), 2), converted)


def test_the_index_is_kept_in_the_cache_only(tars, tmp_path, cache):
    before = sorted(os.listdir(tmp_path / "tars"))
    assert len(stoker.Loader(stoker.WebDataset(tars), batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE)
               .dataset) == 23
    assert sorted(os.listdir(tmp_path / "tars")) == before
    assert len(os.listdir(os.path.join(cache, "tar-indexes"))) == len(tars)
    # A tar rewritten since is indexed again.
    with tarfile.open(tars[0], "w") as tar:
        info = tarfile.TarInfo("only.cls")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"1"))
    loader = stoker.Loader(stoker.WebDataset(tars), batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE)
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
    # Read for its label alone, it is refused all the same: no label 0 (issue 66).
    check_bad_sample_refused(stoker.WebDataset(path), cache, f"{path}: sample b: no label", count=2)


def test_a_sample_whose_image_is_none_is_refused_when_read_for_its_label(folder, tmp_path, cache):
    (folder / "dog" / "10.jpg").write_bytes(b"text, not a JPEG")
    tars = write_tars(folder, tmp_path / "tars")
    check_bad_sample_refused(stoker.WebDataset(tars), cache,
                             r"/data-00\d\.tar: member s/00\d\d\.jpg: .*JPEG")


def test_a_missing_tar_is_one_line(tmp_path, cache):
    with pytest.raises(FileNotFoundError, match="nothing.tar: no such tar"):
        stoker.Loader(stoker.WebDataset(str(tmp_path / "nothing.tar")), batch_size=256, shuffle=True, cache_dir=cache)


def test_inspect_and_verify_take_tars(tars, tmp_path, cache):
    assert stoker.inspect(tmp_path / "tars", cache_dir=cache)["records"] == 23
    assert stoker.verify(tmp_path / "tars", cache_dir=cache)["datasets"][0]["records"] == 23


def test_a_tar_gone_after_the_open_is_one_line(tars, cache):
    loader = stoker.Loader(stoker.WebDataset(tars), batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE,
                           batch_format="dict", on_error="skip")
    os.remove(tars[2])
    with pytest.raises(FileNotFoundError, match=f"^{tars[2]}: no such file$"):
        list(loader)


def write_field_tars(out, count=6, per_tar=3, change=None):
    """`count` samples as tars of `per_tar` written by webdataset's TarWriter: KEY.jpg, .cls,
    .json, .txt, .npy (float32 (2, 3)) and .seq.npy (int64 (i % 3 + 1, 2)); `change(i, sample)`
    may alter a sample's members before it is written."""
    wds = pytest.importorskip("webdataset")
    from loader_datasets import encode, photo
    out.mkdir()
    for start in range(0, count, per_tar):
        with wds.TarWriter(str(out / f"f-{start // per_tar:03d}.tar")) as sink:
            for i in range(start, min(start + per_tar, count)):
                sample = {"__key__": f"k{i:03d}", "jpg": encode(photo(i, 24, 20), "JPEG"),
                          "cls": i % 4, "json": {"i": i, "tags": ["a"] * i}, "txt": f"sample {i}",
                          "npy": np.arange(6, dtype=np.float32).reshape(2, 3) * i,
                          "seq.npy": np.full((i % 3 + 1, 2), i, dtype=np.int64)}
                if change:
                    change(i, sample)
                sink.write(sample)
    return sorted(str(p) for p in out.glob("*.tar"))


def field_loader(tars, cache, **options):
    options.setdefault("transforms", {"image": None, "json": S.RawBytes(max_length=256),
                                      "txt": S.RawBytes(max_length=64)})
    return stoker.Loader(stoker.WebDataset(tars), batch_size=1, shuffle=False, cache_dir=cache,
                         batch_format="dict", **options)


def test_other_members_are_fields_as_webdataset_decodes_them(tmp_path, cache):
    wds = pytest.importorskip("webdataset")
    tars = write_field_tars(tmp_path / "tars")
    reference = list(wds.WebDataset(tars, shardshuffle=False, empty_check=False).decode())
    loader = field_loader(tars, cache)
    schema = {f["name"]: (f["dtype"], f["shape"]) for f in loader._native.schema}
    assert schema["npy"] == ("float32", [2, 3])
    assert schema["seq.npy"] == ("int64", ["N_seq.npy", 2])
    assert schema["json"] == schema["txt"] == ("bytes", None)
    batches = list(loader)
    assert len(batches) == len(reference) == 6
    for batch, sample in zip(batches, reference):
        assert batch["label"].item() == sample["cls"]
        assert json.loads(bytes(batch["json"][0].numpy())) == sample["json"]
        assert bytes(batch["txt"][0].numpy()).decode() == sample["txt"]
        np.testing.assert_array_equal(batch["npy"][0].numpy(), sample["npy"])
        assert batch["npy"].dtype == torch.float32
        np.testing.assert_array_equal(batch["seq.npy"][0].numpy(), sample["seq.npy"])
    # One transform, the image's: the bytes fields no transform names are left out.
    crop = S.Compose([S.RandomResizedCrop(16), S.ToTensor()])
    plain = stoker.Loader(stoker.WebDataset(tars), shuffle=True, batch_size=2, cache_dir=cache,
                          transforms=crop, batch_format="dict")
    assert sorted(next(iter(plain)).keys()) == sorted(
        ["image", "label", "height", "width", "original_size", "original_checksum", "npy",
         "seq.npy"])
    # Named in a tuple with the image cropped; the bytes fields need a transform to come.
    tuples = stoker.Loader(tmp_path / "tars", batch_size=3, shuffle=False, cache_dir=cache,
                           transforms=crop, batch_format=("image", "npy", "label"))
    image, npy, label = next(iter(tuples))
    assert image.shape == (3, 3, 16, 16) and npy.shape == (3, 2, 3)
    np.testing.assert_array_equal(npy.numpy(), np.stack([s["npy"] for s in reference[:3]]))
    with pytest.raises(ValueError, match="names the bytes field 'json': give it a transform"):
        stoker.Loader(stoker.WebDataset(tars), batch_size=256, shuffle=True, cache_dir=cache, batch_format=("label", "json"))
    info = stoker.inspect(tmp_path / "tars", cache_dir=cache)
    assert [f["name"] for f in info["schema"]["fields"]][6:] == ["json", "npy", "seq.npy", "txt"]
    assert info["max_lengths"] == {"seq.npy": 3}
    assert stoker.verify(tmp_path / "tars", cache_dir=cache)["datasets"][0]["records"] == 6


def corrupt_npy(kind):
    """change() for write_field_tars: sample 4's .npy made bad as `kind` says."""
    def change(i, sample):
        if i != 4:
            return
        good = io.BytesIO()
        np.save(good, sample["npy"])
        data = good.getvalue()
        if kind == "truncated header":
            data = data[:40]
        elif kind == "bad dtype":
            saved = io.BytesIO()
            np.save(saved, sample["npy"].astype(np.float64))
            data = saved.getvalue()
        elif kind == "huge shape":
            data = data.replace(b"(2, 3), }", b"(2, 300000000000), }")
            data = data.replace(b" " * 11 + b"\n", b"\n", 1)
        elif kind == "wrong length":
            data = data[:-4]
        del sample["npy"]
        sample["npy"] = data  # TarWriter writes bytes as they are
    return change


@pytest.mark.parametrize("kind, why", [
    ("truncated header", "field npy: not a .npy array stoker reads: cut short in its header"),
    ("bad dtype", "field npy: dtype '<f8', not float32"),
    ("huge shape", r"field npy: shape \(2, 300000000000\), not \(2, 3\)"),
    ("wrong length", "field npy: 20 bytes of data where its shape \\(2, 3\\) takes 24")])
def test_a_bad_field_is_a_record_named_by_tar_member_and_field(tmp_path, cache, kind, why):
    tars = write_field_tars(tmp_path / "tars", change=corrupt_npy(kind))
    named = f"{tars[1]}: member k004.npy: {why}"
    transforms = {"image": S.Compose([S.RandomResizedCrop(16), S.ToTensor()]), "json": None,
                  "txt": None}
    with pytest.raises(stoker.Error, match=named):
        list(field_loader(tars, cache, transforms=transforms))
    kept = list(field_loader(tars, cache, transforms=transforms, on_error="skip"))
    assert [l for b in kept for l in b["label"].tolist()] == [i % 4 for i in range(6) if i != 4]


def test_an_npy_member_one_sample_lacks_is_no_field(tmp_path, cache):
    tars = write_field_tars(tmp_path / "tars", change=lambda i, s: s.pop("npy") if i == 4 else 0)
    loader = field_loader(tars, cache, on_error="raise")
    assert "left out: npy (in 5 of 6 samples)" in loader._native.describe
    batches = list(loader)
    assert [b["label"].item() for b in batches] == [i % 4 for i in range(6)]
    assert all("npy" not in b for b in batches)


def test_one_huge_member_sizes_no_buffer_beyond_memory(tmp_path, cache):
    """A .seq.npy member of 64 MB in one sample sizes every batch slot of its field: a buffer
    beyond the bound (16 GiB; or the machine's memory, where that is less) is one line naming
    the field, before any is made."""
    def huge(i, sample):
        if i == 4:
            sample["seq.npy"] = np.zeros((4 << 20, 2), dtype=np.int64)
    tars = write_field_tars(tmp_path / "tars", change=huge)
    with pytest.raises(ValueError, match=r"field 'seq\.npy' takes 67108864 bytes a sample "
                                         r"\(its largest sample's\)") as error:
        stoker.Loader(stoker.WebDataset(tars), batch_size=4096, cache_dir=cache,
                      batch_format="dict", transforms={"image": None, "json": None, "txt": None})
    assert "\n" not in str(error.value)
    assert len(list(field_loader(tars, cache))) == 6  # a batch of one fits
