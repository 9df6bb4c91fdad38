"""The same photos as every source stoker reads in place (an image folder, Parquet files), for
the tests that hold each source to the converted dataset's pixels and to the source contract."""

import json

import pytest

import stoker
from loader_datasets import encode, photo
from stoker import transforms as S

CLASSES = ("cat", "dog", "eel")
NO_IMAGE = {"image": None}  # the loader's other fields, for what it says of its dataset


def make_folder(root, count=23):
    """`count` photos of several sizes over three classes (one in a sub-folder, one a PNG)."""
    for i in range(count):
        name = ("sub/" if i == 4 else "") + f"{i:02d}." + ("png" if i == 7 else "jpg")
        path = root / CLASSES[i % 3] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode(photo(i, 40 + i, 30 + 2 * i), "PNG" if i == 7 else "JPEG"))
    (root / "cat" / "notes.txt").write_text("not an image")
    return root


def write_parquet(folder, path, cache, rows_per_group=4):
    """The image folder's samples, in its order, as Hugging Face datasets writes them: an `image`
    struct of bytes and path, a `label` int64 column with its ClassLabel names in the schema's
    metadata, and another column; row groups of `rows_per_group` rows."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    samples = stoker.Loader(stoker.ImageFolder(folder), cache_dir=cache,
                            transforms=NO_IMAGE).dataset.samples
    images = [{"bytes": open(p, "rb").read(), "path": p} for p, _ in samples]
    table = pa.table({"image": images, "label": pa.array([c for _, c in samples], pa.int64()),
                      "caption": [f"a photo {i}" for i in range(len(samples))]})
    features = {"image": {"_type": "Image"}, "label": {"names": list(CLASSES),
                                                        "_type": "ClassLabel"},
                "caption": {"dtype": "string", "_type": "Value"}}
    table = table.replace_schema_metadata(
        {"huggingface": json.dumps({"info": {"features": features}})})
    pq.write_table(table, path, row_group_size=rows_per_group)
    return path


def crop_loader(path, cache, **options):
    transforms = S.Compose([S.RandomResizedCrop(24), S.RandomHorizontalFlip(), S.ToTensor()])
    return stoker.Loader(path, batch_size=5, seed=3, transforms=transforms, cache_dir=cache,
                         **options)
