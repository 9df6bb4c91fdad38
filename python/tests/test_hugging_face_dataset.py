"""A Hugging Face datasets.Dataset read natively (stoker/_hugging_face.py): over its Arrow files
(load_from_disk's, load_dataset's cache files from Parquet and from an image folder) in no
format, "torch" and "numpy", every sample is what DataLoader gives over the same dataset (the
same dict, the same pixels and types), and loader.plan says it is read natively; a select's
indices too. What stoker cannot give exactly (a transform, another column, a table in memory,
undecoded or grey images) is read by its own __getitem__, the same samples; an image PIL would
turn (EXIF) or give grey is a bad record named by file and row."""

import io

import numpy as np
import pytest
import torch

import stoker
from stoker import _stoker
from loader_datasets import encode, photo
from test_image_folder_source import CLASSES, make_folder

datasets = pytest.importorskip("datasets")
Image = pytest.importorskip("PIL.Image")

FORMATS = (None, "torch", "numpy")
BATCHINGS = ({"batch_size": None}, {"batch_size": 4, "collate_fn": list})


def same(got, want) -> bool:
    """Whether `got` is `want`: the same structure, types, values and pixels."""
    if isinstance(want, dict):
        return type(got) is dict and list(got) == list(want) and \
            all(same(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        return type(got) is type(want) and len(got) == len(want) and \
            all(same(g, w) for g, w in zip(got, want))
    if isinstance(want, Image.Image):
        return isinstance(got, Image.Image) and got.mode == want.mode and \
            np.array_equal(np.asarray(got), np.asarray(want))
    if isinstance(want, torch.Tensor):
        return isinstance(got, torch.Tensor) and got.dtype == want.dtype and \
            torch.equal(got, want)
    if isinstance(want, np.ndarray):
        return isinstance(got, np.ndarray) and got.dtype == want.dtype and \
            np.array_equal(got, want)
    return type(got) is type(want) and got == want


def check(dataset, cache, native=True, formats=FORMATS, **options):
    """stoker.Loader over `dataset` gives DataLoader's samples, batched and not, in each of
    `formats` (None: the dataset as it is); `native`: whether its plan says it reads it
    natively."""
    for kind in formats:
        formatted = dataset.with_format(kind) if kind else dataset
        for batching in BATCHINGS:
            loader = stoker.Loader(formatted, shuffle=False, cache_dir=cache, **batching,
                                   **options)
            notes = loader.plan.get("notes", {}).get("dataset", [])
            # A build without Parquet reads no Arrow file: the dataset's own __getitem__.
            natively = native and _stoker.with_parquet
            assert any("read natively as stoker.Arrow" in n for n in notes) == natively, notes
            want = list(torch.utils.data.DataLoader(formatted, shuffle=False, **batching))
            assert same(list(loader), want), (kind, batching)


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


@pytest.fixture(autouse=True)
def arrays_cache(tmp_path, monkeypatch):
    """The arrays cache (where a dataset's largest image side is kept), in tmp_path."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "stoker"))
    return tmp_path / "stoker" / "arrays"


@pytest.fixture
def saved(tmp_path):
    """make_folder's images as a Dataset of their paths cast to Image (bytes null), saved and
    loaded back: its Arrow file on disk."""
    folder = make_folder(tmp_path / "folder")
    paths = sorted(str(p) for p in folder.rglob("*") if p.suffix in (".jpg", ".png"))
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=list(CLASSES))})
    labels = [CLASSES.index(p.split("/folder/")[1].split("/")[0]) for p in paths]
    dataset = datasets.Dataset.from_dict({"image": paths, "label": labels}, features=features)
    dataset.save_to_disk(str(tmp_path / "saved"))
    return datasets.load_from_disk(str(tmp_path / "saved"))


def test_a_saved_dataset_and_its_selection(saved, cache, arrays_cache):
    check(saved, cache)
    check(saved, cache, num_workers=2)
    check(saved.select([5, 3, 9, 9, 1]), cache)
    check(torch.utils.data.Subset(saved.with_format("torch"), [4, 0, 2]), cache, formats=(None,))
    # The largest image side is read once, then kept: a later loader sizes its decode by it.
    kept, = arrays_cache.glob("hf-largest-side-*")
    assert int(kept.read_text()) == max(max(image.size) for image in saved["image"])
    kept.write_text("8")
    with pytest.raises(ValueError, match=r"row 0 \(record batch 0\): .* larger than max_size 8"):
        list(stoker.Loader(saved, batch_size=None, cache_dir=cache))


def test_load_dataset_from_parquet_and_from_an_image_folder(saved, tmp_path, cache):
    path = tmp_path / "train.parquet"
    saved.to_parquet(str(path))
    from_parquet = datasets.load_dataset("parquet", data_files=str(path), split="train",
                                         cache_dir=str(tmp_path / "hf"))
    check(from_parquet, cache)
    # A folder per class, every image one level down: its labels are the folders'.
    folder = tmp_path / "folder"
    (folder / "dog" / "sub" / "04.jpg").rename(folder / "dog" / "04.jpg")
    from_folder = datasets.load_dataset("imagefolder", data_dir=str(folder), split="train",
                                        cache_dir=str(tmp_path / "hf"))
    assert from_folder.features["label"].names == list(CLASSES)
    check(from_folder, cache)


def test_relative_paths_are_the_working_directorys(tmp_path, cache, monkeypatch):
    folder = make_folder(tmp_path / "folder")
    monkeypatch.chdir(folder)
    paths = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.jpg"))
    dataset = datasets.Dataset.from_dict({"image": paths, "label": list(range(len(paths)))})
    dataset.cast_column("image", datasets.Image()).save_to_disk(str(tmp_path / "saved"))
    check(datasets.load_from_disk(str(tmp_path / "saved")), cache)


def test_a_build_without_parquet_reads_it_by_its_own_getitem(saved, cache, monkeypatch):
    # As where the extension was built without Parquet and Arrow (STOKER_WITH_PARQUET off):
    # DataLoader's samples, by the dataset's own __getitem__, the plan saying why.
    monkeypatch.setattr(_stoker, "with_parquet", False)
    check(saved, cache)
    notes = stoker.Loader(saved, batch_size=None, cache_dir=cache).plan["notes"]["dataset"]
    assert any("stoker was built without (STOKER_WITH_PARQUET)" in n for n in notes), notes


def test_what_stoker_cannot_give_exactly_runs_in_python(saved, cache):
    transformed = saved.with_transform(lambda batch: {"label": [x + 1 for x in batch["label"]]})
    check(transformed, cache, native=False, formats=(None,))  # a format would replace it
    captioned = saved.map(lambda row: {"caption": f"a photo of {row['label']}"})
    check(captioned, cache, native=False)
    for dataset, why in ((transformed, "this one's format ('custom') or transform is not"),
                         (captioned, "this one's columns are not")):
        notes = stoker.Loader(dataset, cache_dir=cache).plan["notes"]["dataset"]
        assert why in notes[0] and \
            notes[1].startswith("stoker does not read a Dataset natively"), notes
    check(saved.cast_column("image", datasets.Image(mode="L")), cache, native=False)
    check(saved.cast_column("image", datasets.Image(decode=False)), cache, native=False)
    in_memory = datasets.Dataset.from_dict({"image": saved["image"][:5], "label": [0] * 5})
    check(in_memory.cast_column("image", datasets.Image()), cache, native=False)


def image_dataset(tmp_path, images, feature):
    """A saved Dataset of `images` (encoded bytes) with `feature` for its image column."""
    features = datasets.Features({"image": feature, "label": datasets.Value("int64")})
    rows = {"image": [{"bytes": b, "path": None} for b in images],
            "label": list(range(len(images)))}
    datasets.Dataset.from_dict(rows, features=features).save_to_disk(str(tmp_path / "images"))
    return datasets.load_from_disk(str(tmp_path / "images"))


def test_images_pil_gives_otherwise_are_named_or_converted(tmp_path, cache):
    colour = encode(photo(0, 32, 24), "JPEG")
    grey = encode(photo(1, 20, 30)[:, :, 0], "JPEG")
    exif = Image.Exif()
    exif[0x0112] = 6  # turned 90 degrees: PIL's exif_transpose turns it back
    turned = {}
    for kind in ("JPEG", "PNG"):
        out = io.BytesIO()
        Image.fromarray(photo(2, 16, 12)).save(out, kind, exif=exif.tobytes())
        turned[kind] = out.getvalue()
    # Image(): a grey JPEG stays grey in PIL, stoker's RGB would not: named, not given.
    own = image_dataset(tmp_path / "own", [colour, grey], datasets.Image())
    file = own.cache_files[0]["filename"]
    with pytest.raises(stoker.Error, match=rf"^{file}: row 1 \(record batch 0\): its image has "
                                           r"1 samples a pixel"):
        list(stoker.Loader(own, batch_size=None, cache_dir=cache))
    # Image(mode="RGB"): converted as stoker decodes it, at any size up to 4,096 px a side (the
    # decode's buffers are sized for the largest); an EXIF orientation is named.
    wide = encode(photo(3, 1100, 16), "JPEG")
    rgb = image_dataset(tmp_path / "rgb", [colour, grey, wide], datasets.Image(mode="RGB"))
    check(rgb, cache)
    # Images of one size: DataLoader's default_collate stacks them, and so does stoker's.
    same_size = image_dataset(tmp_path / "same", [colour, encode(photo(5, 32, 24), "JPEG")],
                              datasets.Image()).with_format("torch")
    assert same(list(stoker.Loader(same_size, batch_size=2, cache_dir=cache)),
                list(torch.utils.data.DataLoader(same_size, batch_size=2)))
    wider = encode(photo(4, 4100, 8), "JPEG")
    check(image_dataset(tmp_path / "wider", [colour, wider], datasets.Image(mode="RGB")), cache,
          native=False)
    for kind, image in turned.items():
        rgb = image_dataset(tmp_path / kind, [colour, image], datasets.Image(mode="RGB"))
        assert rgb[1]["image"].size == (12, 16)  # turned by datasets
        file = rgb.cache_files[0]["filename"]
        with pytest.raises(stoker.Error, match=rf"^{file}: row 1 \(record batch 0\): its EXIF "
                                               r"orientation is 6"):
            list(stoker.Loader(rgb, batch_size=None, cache_dir=cache))
