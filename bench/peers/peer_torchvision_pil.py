"""PyTorch DataLoader + torchvision ImageFolder with PIL: what most users run. Also the
Pillow-SIMD peer (the same code in an environment where Pillow-SIMD replaces Pillow), and the
detection works' reference: CocoDetection and the preset as torchvision's detection reference
loads them."""
import torch
import torchvision
from torchvision import transforms as T

import detection
import recipes
import segmentation
import work


def prepare(folder, files, store):
    work.write_file_list(store, files)  # reads the original files


prepare_coco = detection.write_set  # reads the set's files
prepare_voc = segmentation.write_split


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


def data_loader(dataset, cores, seed, batch=work.BATCH, **options):
    """DataLoader at its documented best for `cores`: in-process on one core (no worker beats
    one worker sharing the core), else one worker process per core, persistent, prefetching;
    `options` DataLoader's others (collate_fn, drop_last)."""
    g = torch.Generator()
    g.manual_seed(seed)
    workers = 0 if cores == 1 else cores
    extra = {"persistent_workers": True, "prefetch_factor": 2} if workers else {}
    return torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, generator=g,
                                       num_workers=workers, **extra, **options)


def recipe_loader(files, transform, w, cores, seed, load=torchvision.datasets.folder.pil_loader):
    """A recipe work (recipes.py) through DataLoader: `transform` in its workers, the batch
    step in the collate function, as torchvision's reference does."""
    mix = recipes.batch_mix(w, recipes.num_classes(files))

    def collate(samples):
        return mix(*torch.utils.data.default_collate(samples))
    return data_loader(Files(files, transform, load), cores, seed, batch=recipes.BATCH,
                       collate_fn=collate, drop_last=True)


def recipe_batches(store, cores, w, seed):
    """The reference's v1 recipe on PIL images (timm-ra: torchvision's closest classes)."""
    yield from recipe_loader(work.read_file_list(store), recipes.torchvision_transform(w, T), w,
                             cores, seed)


def detection_batches(store, cores, w, seed):
    """The detection reference's train.py with --use-v2 --aspect-ratio-group-factor -1: its
    get_coco (CocoDetection, wrap_dataset_for_transforms_v2, the train split), its preset, its
    collate_fn; DataLoader's workers as data_loader's."""
    from torchvision.datasets import CocoDetection, wrap_dataset_for_transforms_v2
    coco = detection.read_set(store)
    dataset = CocoDetection(coco["images"], coco["annotations"], transforms=detection.preset(w))
    dataset = wrap_dataset_for_transforms_v2(dataset, target_keys=["boxes", "labels", "image_id"])
    yield from data_loader(dataset, cores, seed, batch=detection.BATCH,
                           collate_fn=detection.collate, drop_last=True)


def _image_and_mask(paths):
    """VOCSegmentation's loading (PIL: the image in RGB, the class map's indices), the class
    map as a tv_tensors.Mask (what the reference's v2 path, on COCO, hands its preset)."""
    import numpy as np
    from PIL import Image
    from torchvision import tv_tensors
    image, mask = Image.open(paths[0]).convert("RGB"), Image.open(paths[1])
    return image, tv_tensors.Mask(torch.from_numpy(np.array(mask)))


class Pairs(Files):
    """transform(*load(pair)) over the stored list of (image, class map) paths."""

    def __getitem__(self, i):
        return self.transform(*self.load(self.files[i]))


def segmentation_batches(store, cores, w, seed):
    """The segmentation reference's train.py: its preset on each pair, its collate_fn,
    shuffled batches with drop_last."""
    dataset = Pairs(work.read_file_list(store), segmentation.preset(w), _image_and_mask)
    yield from data_loader(dataset, cores, seed, batch=segmentation.BATCH,
                           collate_fn=segmentation.collate, drop_last=True)


def batches(store, cores, dtype, seed):
    dataset = Files(work.read_file_list(store), train_transform(dtype))
    yield from data_loader(dataset, cores, seed)


def eval_image(path):
    img = torchvision.datasets.folder.pil_loader(path)
    t = T.Compose([T.Resize(work.EVAL_RESIZE, antialias=True), T.CenterCrop(work.SIZE),
                   T.PILToTensor()])
    return t(img)
