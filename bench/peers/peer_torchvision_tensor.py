"""torchvision's tensor path: torchvision.io.decode_image (libjpeg-turbo / libpng into uint8
tensors) + transforms.v2 on the tensors, batched by DataLoader."""
import torch
from torchvision.io import ImageReadMode, decode_image, read_file
from torchvision.transforms import v2

import peer_torchvision_pil
import recipes
import work

prepare = peer_torchvision_pil.prepare


def _load(path):
    return decode_image(read_file(path), mode=ImageReadMode.RGB)


def train_transform(dtype):
    ops = [v2.RandomResizedCrop(work.SIZE, scale=work.SCALE, ratio=work.RATIO, antialias=True),
           v2.RandomHorizontalFlip()]
    if dtype == "float32":
        ops += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(work.MEAN, work.STD)]
    return v2.Compose(ops)


def batches(store, cores, dtype, seed):
    dataset = peer_torchvision_pil.Files(work.read_file_list(store), train_transform(dtype), _load)
    yield from peer_torchvision_pil.data_loader(dataset, cores, seed)


def recipe_batches(store, cores, w, seed):
    """The recipe with transforms.v2 on the decoded tensors (the reference's `--backend tensor
    --use-v2`; timm-ra: torchvision's closest classes)."""
    yield from peer_torchvision_pil.recipe_loader(
        work.read_file_list(store), recipes.torchvision_transform(w, v2), w, cores, seed, _load)


def eval_image(path):
    resize = v2.Resize(work.EVAL_RESIZE, antialias=True)
    return v2.Compose([resize, v2.CenterCrop(work.SIZE)])(_load(path))
