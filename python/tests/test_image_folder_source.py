"""An image folder read in place (stoker.ImageFolder): torchvision's classes and samples, the
converted dataset's pixels for the same transforms and draws, the source contract every source
keeps (order, exactly once across ranks, resume: Parquet files too), a changed folder listed
again, bad files named."""

import pytest

import stoker
from batches import assert_same, epochs
from image_sources import CLASSES, NO_IMAGE, crop_loader, make_folder, write_parquet
from loader_datasets import encode, photo


@pytest.fixture
def folder(tmp_path):
    return make_folder(tmp_path / "folder")


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


def test_classes_and_samples_are_torchvisions(folder, cache):
    datasets = pytest.importorskip("torchvision.datasets")
    reference = datasets.ImageFolder(str(folder))
    for path in (stoker.ImageFolder(folder), folder):  # explicit, or found out
        loader = stoker.Loader(path, batch_size=4, cache_dir=cache, transforms=NO_IMAGE)
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


@pytest.fixture(params=["converted", "imagefolder", "parquet"])
def source(request, folder, tmp_path, cache):
    """Every source, for the contract each keeps."""
    if request.param == "converted":
        stoker.convert("imagefolder", folder, tmp_path / "converted", keep_original=True)
        return tmp_path / "converted"
    if request.param == "parquet":
        return stoker.Parquet(write_parquet(folder, tmp_path / "train.parquet", cache))
    return stoker.ImageFolder(folder)


def checksums(loader):
    return [c for b in loader for c in b["original_checksum"].tolist()]


def test_source_contract_order_ranks_and_resume(source, cache):
    def loader(**options):
        return stoker.Loader(source, batch_size=4, seed=5, batch_format="dict", cache_dir=cache,
                             transforms=NO_IMAGE, **options)
    everything = checksums(loader(shuffle=False))
    assert len(set(everything)) == len(everything) == 23
    # Exactly once across ranks, but for the one sample that pads 23 to 3 x 8.
    dealt = sum([checksums(loader(rank=r, world_size=3, last_batch="short")) for r in range(3)],
                [])
    assert len(dealt) == 24 and set(dealt) == set(everything)
    # A shuffle window of units too.
    assert sorted(checksums(loader(shuffle_window=2))) == sorted(everything)
    # Resumed mid-epoch, it continues with the same batches.
    whole = checksums(loader())
    first = loader()
    iterator = iter(first)
    taken = [c for _ in range(2) for c in next(iterator)["original_checksum"].tolist()]
    resumed = loader(workers=1)
    resumed.load_state_dict(first.state_dict())
    assert taken + checksums(resumed) == whole


def test_a_changed_folder_is_listed_again(folder, cache):
    assert len(stoker.Loader(folder, cache_dir=cache, transforms=NO_IMAGE).dataset) == 23
    (folder / "eel" / "deeper").mkdir()
    (folder / "eel" / "deeper" / "new.jpg").write_bytes(encode(photo(99, 20, 20), "JPEG"))
    loader = stoker.Loader(folder, cache_dir=cache, transforms=NO_IMAGE)
    assert len(loader.dataset) == 24
    assert str(folder / "eel" / "deeper" / "new.jpg") in [p for p, _ in loader.dataset.samples]


def test_bad_files_are_named(folder, cache):
    bad = folder / "dog" / "10.jpg"
    bad.write_bytes(b"text, not a JPEG")
    with pytest.raises(stoker.Error, match=f"{bad}: .*JPEG"):
        epochs(crop_loader(folder, cache, shuffle=False), 1)
    kept = epochs(crop_loader(folder, cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 22


def test_a_dataset_has_no_samples(tmp_path, folder, cache):
    stoker.convert("imagefolder", folder, tmp_path / "converted")
    loader = stoker.Loader(tmp_path / "converted", cache_dir=cache, transforms=NO_IMAGE)
    assert loader.dataset.classes == list(CLASSES)
    with pytest.raises(AttributeError, match="do not name their source files"):
        loader.dataset.samples


def test_inspect_and_verify_take_an_image_folder(folder, cache):
    info = stoker.inspect(folder, cache_dir=cache)
    assert (info["records"], info["class_names"]) == (23, list(CLASSES))
    assert stoker.verify(folder, cache_dir=cache)["datasets"][0]["records"] == 23
