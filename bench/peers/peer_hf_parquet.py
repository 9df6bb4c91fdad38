"""Hugging Face `datasets` + DataLoader on Parquet, as its documentation trains an image model:
`load_dataset("parquet", data_files=...)` (an `image` feature of bytes + path, a `label` class
column), `set_transform` applying torchvision's transform to the decoded PIL images, a shuffling
DataLoader (one worker process per core; in-process on one core). Its store: the files written
by `datasets` itself (`Dataset.to_parquet`, its own row groups) as FILES Parquet files, in the
files' order; stoker's Parquet peer reads the same files."""
import glob
import os

import datasets

import work
from peer_torchvision_pil import data_loader, train_transform

FILES = 5


def prepare(folder, files, store):
    os.makedirs(store, exist_ok=True)
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=classes)})

    def rows():
        for path, label in files:
            with open(path, "rb") as f:
                yield {"image": {"bytes": f.read(), "path": os.path.basename(path)},
                       "label": label}
    table = datasets.Dataset.from_generator(rows, features=features,
                                            cache_dir=_cache(store))
    for i in range(FILES):
        table.shard(FILES, i, contiguous=True).to_parquet(
            os.path.join(store, f"train-{i:05d}-of-{FILES:05d}.parquet"))


def _cache(store):
    """datasets' own cache (Arrow copies), beside the store: not counted as its size."""
    return store + "-hf-cache"


def parquet_paths(store):
    return sorted(glob.glob(os.path.join(store, "*.parquet")))


def batches(store, cores, dtype, seed):
    transform = train_transform(dtype)
    table = datasets.load_dataset("parquet", data_files=parquet_paths(store), split="train",
                                  cache_dir=_cache(store))

    def apply(batch):
        return {"image": [transform(image.convert("RGB")) for image in batch["image"]],
                "label": batch["label"]}
    table.set_transform(apply)
    for batch in data_loader(table, cores, seed):
        yield batch["image"], batch["label"]
