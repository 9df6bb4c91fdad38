"""The `webdataset` library + DataLoader on WebDataset tars, as its documentation trains:
`WebDataset(shards, shardshuffle=...)`, a sample shuffle buffer, PIL decoding, torchvision's
transform, batched by DataLoader (one worker per core, the shards split between the workers;
in-process on one core). Its store: the files packed as tars of SHARD_SAMPLES samples (`KEY.jpg`
+ `KEY.cls`), in the files' order (class by class), as img2dataset packs a list; shuffling
across them is the reader's job. stoker's tar peer reads the same tars."""
import glob
import io
import os
import tarfile

import torch
import webdataset as wds

import work
from peer_torchvision_pil import train_transform

SHARD_SAMPLES = 500
SHUFFLE_BUFFER = 1000  # samples; webdataset's examples use 1000-5000


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def prepare(folder, files, store):
    os.makedirs(store, exist_ok=True)
    for shard in range(0, len(files), SHARD_SAMPLES):
        path = os.path.join(store, f"data-{shard // SHARD_SAMPLES:06d}.tar")
        with tarfile.open(path + ".part", "w", format=tarfile.USTAR_FORMAT) as tar:
            for i, (image, label) in enumerate(files[shard:shard + SHARD_SAMPLES], shard):
                with open(image, "rb") as f:
                    _add(tar, f"{i:08d}.jpg", f.read())
                _add(tar, f"{i:08d}.cls", str(label).encode())
        os.replace(path + ".part", path)


def tar_paths(store):
    return sorted(glob.glob(os.path.join(store, "data-*.tar")))


def batches(store, cores, dtype, seed):
    transform = train_transform(dtype)
    dataset = (wds.WebDataset(tar_paths(store), shardshuffle=len(tar_paths(store)), seed=seed,
                              empty_check=False)
               .shuffle(SHUFFLE_BUFFER, seed=seed)
               .decode("pil")
               .to_tuple("jpg", "cls")
               .map_tuple(transform, int))
    workers = 0 if cores == 1 else cores
    extra = {"persistent_workers": True, "prefetch_factor": 2} if workers else {}
    yield from torch.utils.data.DataLoader(dataset, batch_size=work.BATCH, num_workers=workers,
                                           **extra)
