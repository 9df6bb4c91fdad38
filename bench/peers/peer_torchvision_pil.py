"""PyTorch DataLoader + torchvision ImageFolder with PIL: what most users run. Also the
Pillow-SIMD peer (the same code in an environment where Pillow-SIMD replaces Pillow)."""
import torch
import torchvision
from torchvision import transforms as T

import work


def prepare(folder, files, store):
    work.write_file_list(store, files)  # reads the original files


class Files(torch.utils.data.Dataset):
    """(transform(load(path)), label) over the stored list; ImageFolder's loading by default
    (PIL open, convert RGB)."""

    def __init__(self, files, transform, load=torchvision.datasets.folder.pil_loader):
        self.files, self.transform, self.load = files, transform, load

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        return self.transform(self.load(path)), label


def train_transform(dtype):
    ops = [T.RandomResizedCrop(work.SIZE, scale=work.SCALE, ratio=work.RATIO, antialias=True),
           T.RandomHorizontalFlip()]
    if dtype == "uint8":
        return T.Compose(ops + [T.PILToTensor()])
    return T.Compose(ops + [T.ToTensor(), T.Normalize(work.MEAN, work.STD)])


def data_loader(dataset, cores, seed):
    """DataLoader at its documented best for `cores`: in-process on one core (no worker beats
    one worker sharing the core), else one worker process per core, persistent, prefetching."""
    g = torch.Generator()
    g.manual_seed(seed)
    workers = 0 if cores == 1 else cores
    extra = {"persistent_workers": True, "prefetch_factor": 2} if workers else {}
    return torch.utils.data.DataLoader(dataset, batch_size=work.BATCH, shuffle=True, generator=g,
                                       num_workers=workers, **extra)


def batches(store, cores, dtype, seed):
    dataset = Files(work.read_file_list(store), train_transform(dtype))
    yield from data_loader(dataset, cores, seed)


def eval_image(path):
    img = torchvision.datasets.folder.pil_loader(path)
    t = T.Compose([T.Resize(work.EVAL_RESIZE, antialias=True), T.CenterCrop(work.SIZE),
                   T.PILToTensor()])
    return t(img)
