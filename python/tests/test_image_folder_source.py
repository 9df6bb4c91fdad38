"""An image folder read in place (stoker.ImageFolder): torchvision's classes and samples, the
converted dataset's pixels for the same transforms and draws, a changed folder listed again, bad
files named (the source contract: test_source_contract.py)."""

import os

import pytest

import stoker
from batches import assert_same, epochs
from loader_datasets import encode, photo
from source_contract import NO_IMAGE, check_bad_sample_refused
from stoker import transforms as S

CLASSES = ("cat", "dog", "eel")


def make_folder(root, count=23):
    """`count` photos of several sizes over three classes (one in a sub-folder, one a PNG)."""
    for i in range(count):
        name = ("sub/" if i == 4 else "") + f"{i:02d}." + ("png" if i == 7 else "jpg")
        path = root / CLASSES[i % 3] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode(photo(i, 40 + i, 30 + 2 * i), "PNG" if i == 7 else "JPEG"))
    (root / "cat" / "notes.txt").write_text("not an image")
    return root


@pytest.fixture
def folder(tmp_path):
    return make_folder(tmp_path / "folder")


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


def crop_loader(path, cache, **options):
    transforms = S.Compose([S.RandomResizedCrop(24), S.RandomHorizontalFlip(), S.ToTensor()])
    return stoker.Loader(path, batch_size=5, seed=3, transforms=transforms, cache_dir=cache,
                         **options)


def test_classes_and_samples_are_torchvisions(folder, cache):
    datasets = pytest.importorskip("torchvision.datasets")
    reference = datasets.ImageFolder(str(folder))
    for path in (stoker.ImageFolder(folder), folder):  # explicit, or found out
        loader = stoker.Loader(path, shuffle=True, batch_size=4, cache_dir=cache, transforms=NO_IMAGE)
        assert loader.dataset.classes == reference.classes
        assert loader.dataset.class_to_idx == reference.class_to_idx
        assert loader.dataset.samples == reference.samples
        assert len(loader.dataset) == len(reference)


def test_pixels_are_the_converted_datasets(folder, tmp_path, cache):
    stoker.convert("imagefolder", folder, tmp_path / "converted")
    in_place = epochs(crop_loader(stoker.ImageFolder(folder), cache), 2)
    converted = epochs(crop_loader(tmp_path / "converted", cache), 2)
    assert_same(in_place, converted)
    # A single thread gives the same batches.
    assert_same(epochs(crop_loader(folder, cache, workers=0), 2), converted)


def test_a_changed_folder_is_listed_again(folder, cache):
    assert len(stoker.Loader(folder, batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE).dataset) == 23
    (folder / "eel" / "deeper").mkdir()
    (folder / "eel" / "deeper" / "new.jpg").write_bytes(encode(photo(99, 20, 20), "JPEG"))
    loader = stoker.Loader(folder, batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE)
    assert len(loader.dataset) == 24
    assert str(folder / "eel" / "deeper" / "new.jpg") in [p for p, _ in loader.dataset.samples]


def test_bad_files_are_named(folder, cache):
    bad = folder / "dog" / "10.jpg"
    bad.write_bytes(b"text, not a JPEG")
    with pytest.raises(stoker.Error, match=f"{bad}: .*JPEG"):
        epochs(crop_loader(folder, cache, shuffle=False), 1)
    kept = epochs(crop_loader(folder, cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 22
    check_bad_sample_refused(stoker.ImageFolder(folder), cache, f"{bad}: .*JPEG")  # labels alone
    bad.unlink()
    os.symlink("nowhere.jpg", bad)  # a file that cannot be read
    check_bad_sample_refused(stoker.ImageFolder(folder), cache, f"{bad}: a dangling symbolic link")


def test_a_dataset_has_no_samples(tmp_path, folder, cache):
    stoker.convert("imagefolder", folder, tmp_path / "converted")
    loader = stoker.Loader(tmp_path / "converted", batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE)
    assert loader.dataset.classes == list(CLASSES)
    with pytest.raises(AttributeError, match="do not name their source files"):
        loader.dataset.samples


def test_inspect_and_verify_take_an_image_folder(folder, cache):
    info = stoker.inspect(folder, cache_dir=cache)
    assert (info["records"], info["class_names"]) == (23, list(CLASSES))
    assert stoker.verify(folder, cache_dir=cache)["datasets"][0]["records"] == 23
