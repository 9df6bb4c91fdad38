"""The work every peer of the side-by-side benchmark does, and the files it does it on.

Training: RandomResizedCrop(224, scale 0.08-1, ratio 3/4-4/3, bilinear with antialias), a
random horizontal flip, then either uint8 [B, 3, 224, 224] as cropped or float32 normalised
with ImageNet's mean and std; batches of 256, shuffled, delivered as torch tensors.
Evaluation: Resize(256) (shorter side, bilinear with antialias) + CenterCrop(224), uint8.
"""
import json
import math
import os

SIZE = 224
SCALE = (0.08, 1.0)
RATIO = (3 / 4, 4 / 3)
EVAL_RESIZE = 256
BATCH = int(os.environ.get("STOKER_PEERS_BATCH", "256"))  # smaller only for smoke runs
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
DTYPES = ("uint8", "float32")


def image_files(folder):
    """[(path, label)] of an ImageFolder tree, sorted: classes by name, files by name."""
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    files = []
    for label, name in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(folder, name))):
            files.append((os.path.join(folder, name, f), label))
    return files


def write_file_list(store, files):
    """The store's file list: what peers that read the original files use."""
    os.makedirs(store, exist_ok=True)
    with open(os.path.join(store, "files.json"), "w") as f:
        json.dump(files, f)


def read_file_list(store):
    with open(os.path.join(store, "files.json")) as f:
        return [tuple(item) for item in json.load(f)]


def random_crop_window(width, height, rng):
    """(x, y, w, h): a RandomResizedCrop window of an image, drawn as torchvision draws it (area
    uniform in SCALE, log-ratio uniform in RATIO, 10 tries, then the whole image clamped to
    RATIO), from `rng` (random.Random), for peers whose library has no such operator."""
    area = width * height
    for _ in range(10):
        target = area * rng.uniform(*SCALE)
        ratio = math.exp(rng.uniform(math.log(RATIO[0]), math.log(RATIO[1])))
        w = int(round(math.sqrt(target * ratio)))
        h = int(round(math.sqrt(target / ratio)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, width - w), rng.randint(0, height - h), w, h
    if width / height < RATIO[0]:
        w, h = width, int(round(width / RATIO[0]))
    elif width / height > RATIO[1]:
        w, h = int(round(height * RATIO[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def eval_size(width, height):
    """(width, height) after torchvision's Resize(EVAL_RESIZE): the shorter side EVAL_RESIZE,
    the longer truncated in proportion."""
    short, long = min(width, height), max(width, height)
    long = int(EVAL_RESIZE * long / short)
    return (EVAL_RESIZE, long) if width <= height else (long, EVAL_RESIZE)
