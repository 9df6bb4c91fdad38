#!/usr/bin/env python3
"""stoker.Loader given a dataset object, side by side in one run, rounds alternating: images/s
of each and their ratio.

--section python (the default): a dataset stoker does not read natively, through DataLoader
and through stoker.Loader with the same arguments (same num_workers, batch size, shuffle)
(target: stoker >= 1.0x DataLoader, with stoker's deterministic order and exact resume on top).
--section recognised: torchvision's ImageFolder with a v2 recipe given to stoker.Loader (read
natively, its transform translated) against stoker.ImageFolder with the same recipe, the
native path as it was (target: >= 0.97x).
--section dropin: the same torchvision ImageFolder through DataLoader and through stoker.Loader
with the same arguments (num_workers=2): what replacing the name gives.
--section hf: a Hugging Face datasets.Dataset of the folder (load_dataset("imagefolder"), its
image column cast to Image(mode="RGB"), with_format("torch"): uint8 [3, H, W] tensors) through
DataLoader and through stoker.Loader with the same arguments (read natively as stoker.Arrow:
the same samples); datasets' cache beside DIR's parent (DIR/../hf-cache), made once.
--section coco: the detection reference's training set (CocoDetection wrapped for v2, images
without annotations dropped, its default hflip preset on PIL images, its collate_fn) through
DataLoader and through stoker.Loader with the same arguments; DIR: bench/make_coco_set.py's OUT.
--section coco-v1: the same for the reference's v1 path (its own CocoDetection and
ConvertCocoPolysToMask, the v1 preset --preset, hflip by default:
python/tests/detection_reference_v1.py).
--section coco-v1-recognised: that v1 training set given to stoker.Loader against the kept
dataset it reads (`convert coco --v1-targets`) with the same steps, the native path (target:
>= 0.97x).
--section voc: the same for VOCDetection(DIR, image_set="train") wrapped for v2 with the same
preset; DIR: bench/make_voc_set.py --whole's OUT.

The dataset: a torch Dataset of its own (so nothing recognises it) that opens each JPEG of a
folder with PIL and applies torchvision's RandomResizedCrop(224) + flip + ToTensor + Normalize:
the classic Python-side pipeline.

  .venv/bin/python bench/python_dataset.py --images DIR
      [--section python|recognised|dropin|coco|coco-v1|coco-v1-recognised|voc|hf]
      [--preset hflip|multiscale|lsj|ssd|ssdlite]
      [--workers 2] [--rounds 5] [--batches N (default: the epoch)] [--batch 32]
DIR: a folder of JPEGs (searched recursively; for recognised, an ImageFolder tree), e.g.
bench/make_image_set.py's train/.
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

import torch
import torchvision.transforms as T
from PIL import Image
from torch.utils.data import DataLoader, Dataset

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import stoker  # noqa: E402


class JpegFolder(Dataset):
    """Every .jpg under `root`, label 0, through torchvision's classic training transforms."""

    def __init__(self, root):
        self.files = sorted(os.path.join(d, f) for d, _, names in os.walk(root)
                            for f in names if f.lower().endswith((".jpg", ".jpeg")))
        if not self.files:
            raise SystemExit(f"python_dataset.py: no JPEG under {root}")
        self.transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                    T.ToTensor(),
                                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with Image.open(self.files[i]) as image:
            return self.transform(image.convert("RGB")), 0


def references_collate(batch):
    """The detection references' collate_fn (utils.collate_fn)."""
    return tuple(zip(*batch))


def hflip_preset():
    """The detection reference's default training preset (hflip, backend pil, v2)."""
    import torchvision.transforms.v2 as v2

    return v2.Compose([v2.RandomHorizontalFlip(0.5), v2.PILToTensor(),
                       v2.ToDtype(torch.float32, scale=True), v2.SanitizeBoundingBoxes(),
                       v2.ToPureTensor()])


def voc_training_set(root):
    """VOCDetection's train split wrapped for v2 with the hflip preset."""
    import torchvision

    return torchvision.datasets.wrap_dataset_for_transforms_v2(
        torchvision.datasets.VOCDetection(root, image_set="train", transforms=hflip_preset()))


def coco_training_set(root):
    """The detection reference's get_coco(train) with its default preset: CocoDetection
    wrapped for v2, the images without annotations dropped."""
    import torchvision

    dataset = torchvision.datasets.wrap_dataset_for_transforms_v2(
        torchvision.datasets.CocoDetection(os.path.join(root, "images"),
                                           os.path.join(root, "annotations", "instances.json"),
                                           transforms=hflip_preset()),
        target_keys=["boxes", "labels", "image_id"])
    return torch.utils.data.Subset(dataset, [i for i, image_id in enumerate(dataset.ids)
                                             if dataset.coco.getAnnIds(imgIds=image_id)])


def coco_v1_training_set(root, preset="hflip"):
    """The detection reference's v1 get_coco(train) with its v1 `preset` (lsj at 1024)."""
    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    from detection_reference_v1 import DetectionPresetTrain, get_coco

    return get_coco(pathlib.Path(root), True, DetectionPresetTrain(0.5, preset))


def kept_v1_dataset(training_set) -> str:
    """The stoker dataset that stoker.Loader keeps the v1 training set as (made by a first
    loader): its path, from loader.plan's note."""
    note = " ".join(stoker.Loader(training_set).plan["notes"]["dataset"])
    return note[note.index("as a stoker dataset (") + len("as a stoker dataset ("):
                note.index(")", note.index("as a stoker dataset ("))]


def images_and_labels(samples):
    """A batch of a Hugging Face dataset's torch-format samples (images of varying sizes) as
    (images, labels): the hf section's collate_fn, for both loaders."""
    return [s["image"] for s in samples], torch.stack([s["label"] for s in samples])


def hugging_face_set(root):
    """The image folder as Hugging Face datasets loads it, RGB, in the torch format."""
    import datasets

    dataset = datasets.load_dataset(
        "imagefolder", data_dir=root, split="train",
        cache_dir=os.path.join(os.path.dirname(os.path.abspath(root)), "hf-cache"))
    return dataset.cast_column("image", datasets.Image(mode="RGB")).with_format("torch")


def rate(loader, batches: int) -> float:
    """Images/s over up to `batches` batches after the first (workers started, queue filled),
    at most to the epoch's end: with a whole epoch both loaders read the same images, whatever
    their orders."""
    iterator = iter(loader)
    next(iterator)
    start, images = time.perf_counter(), 0
    for _, batch in zip(range(batches), iterator):
        images += len(batch[1])
    return images / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--section",
                        choices=("python", "recognised", "dropin", "coco", "coco-v1",
                                 "coco-v1-recognised", "voc", "hf"),
                        default="python")
    parser.add_argument("--preset", default="hflip",
                        choices=("hflip", "multiscale", "lsj", "ssd", "ssdlite"))
    a = parser.parse_args()
    torch.set_num_threads(1)
    if a.section == "python":
        dataset = JpegFolder(a.images)
        arguments = dict(batch_size=a.batch, shuffle=True, num_workers=a.workers,
                         persistent_workers=a.workers > 0)
        makers = {"dataloader": lambda: DataLoader(dataset, **arguments),
                  "stoker": lambda: stoker.Loader(dataset, **arguments)}
    elif a.section == "coco-v1-recognised":
        dataset = coco_v1_training_set(a.images, a.preset)
        steps = dataset.dataset._transforms.transforms[1].transforms.transforms
        largest = max(max(i["width"], i["height"]) for i in dataset.dataset.coco.imgs.values())
        largest *= 4 if a.preset == "ssd" else 1  # its zoom out
        kept = stoker.Dataset(kept_v1_dataset(dataset), transforms=stoker.transforms.Compose(
            [stoker.transforms.DecodeImage(max_size=largest)] + steps))
        arguments = dict(batch_size=a.batch, shuffle=True, feed=stoker.Feed(workers=a.workers))
        kept = torch.utils.data.Subset(kept, dataset.indices)
        makers = {"the kept dataset": lambda: stoker.Loader(kept, collate_fn=references_collate,
                                                            **arguments),
                  "the v1 dataset": lambda: stoker.Loader(dataset, collate_fn=references_collate,
                                                          **arguments)}
    elif a.section in ("coco", "coco-v1", "voc", "hf"):
        make, collate = {"coco": (coco_training_set, references_collate),
                         "coco-v1": (lambda root: coco_v1_training_set(root, a.preset),
                                     references_collate),
                         "voc": (voc_training_set, references_collate),
                         "hf": (hugging_face_set, images_and_labels)}[a.section]
        dataset = make(a.images)
        arguments = dict(batch_size=a.batch, shuffle=True, num_workers=a.workers,
                         collate_fn=collate)
        makers = {"dataloader": lambda: DataLoader(dataset, **arguments),
                  "stoker": lambda: stoker.Loader(dataset, **arguments)}
    else:
        import torchvision
        import torchvision.transforms.v2 as v2

        recipe = v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.ToImage(),
                             v2.ToDtype(torch.float32, scale=True)])
        dataset = torchvision.datasets.ImageFolder(a.images, transform=recipe)
    if a.section == "recognised":
        arguments = dict(batch_size=a.batch, shuffle=True, feed=stoker.Feed(workers=a.workers))
        makers = {"stoker.ImageFolder": lambda: stoker.Loader(
                      stoker.ImageFolder(a.images, recipe), **arguments),
                  "torchvision's": lambda: stoker.Loader(dataset, **arguments)}
    elif a.section == "dropin":
        arguments = dict(batch_size=a.batch, shuffle=True, num_workers=a.workers)
        makers = {"dataloader": lambda: DataLoader(dataset, **arguments),
                  "stoker": lambda: stoker.Loader(dataset, **arguments)}
    rates = {name: [] for name in makers}
    for _ in range(a.rounds):
        for name, make in makers.items():
            rates[name].append(rate(make(), a.batches))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, r in rates.items():
        print(f"{name:>18}: median {medians[name]:7.1f} images/s  rounds "
              f"{' '.join(f'{x:.0f}' for x in r)}")
    (base, b), (new, n) = medians.items()
    print(f"{new} / {base}: {n / b:.3f} "
          f"({len(dataset)} images, batch {a.batch}, {a.workers} workers, "
          f"{os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
