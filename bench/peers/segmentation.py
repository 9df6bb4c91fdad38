"""The segmentation work of the side-by-side benchmark (run.py --pipeline seg): torchvision's
segmentation reference's training preset on a Pascal VOC-shaped set (bench/make_voc_set.py's
OUT: its train split's JPEGs and SegmentationClass PNGs), batches of BATCH as the reference's
collate_fn gives them: images float32 [B, 3, 480, 480] and class maps int64 [B, 480, 480].

  seg  SegmentationPresetTrain(base_size=520, crop_size=480, backend="pil", use_v2=True):
       RandomResize(260, 1040), RandomHorizontalFlip(0.5), then its own PadIfSmaller(480,
       fill 255 for the mask, 0 else) + RandomCrop(480), for which stoker runs v2's
       RandomCrop(480, pad_if_needed=True) with the same fills (the reference pads at the right
       and bottom, RandomCrop on both sides: here everyone runs RandomCrop), PILToTensor,
       ToDtype(float32 image, int64 mask, scale), Normalize(ImageNet's), ToPureTensor.
"""
import os

BATCH = int(os.environ.get("STOKER_PEERS_BATCH", "8"))
BASE_SIZE, CROP = 520, 480
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class Work:
    def __init__(self, name):
        self.name = name


WORKS = {"seg": Work("seg")}


def preset(w):
    """The preset as a v2 Compose over (PIL image, tv_tensors.Mask)."""
    import torch
    from torchvision import tv_tensors
    from torchvision.transforms import v2
    return v2.Compose([
        v2.RandomResize(BASE_SIZE // 2, 2 * BASE_SIZE), v2.RandomHorizontalFlip(0.5),
        v2.RandomCrop(CROP, pad_if_needed=True, fill={tv_tensors.Mask: 255, "others": 0}),
        v2.PILToTensor(),
        v2.ToDtype({torch.Tensor: torch.float32, tv_tensors.Mask: torch.int64, "others": None},
                   scale=True),
        v2.Normalize(MEAN, STD), v2.ToPureTensor()])


def split(set_folder):
    """[(image path, class map path)] of the VOC set's segmentation train split."""
    root = os.path.join(set_folder, "VOCdevkit", "VOC2012")
    with open(os.path.join(root, "ImageSets", "Segmentation", "train.txt")) as f:
        names = f.read().split()
    return [(os.path.join(root, "JPEGImages", n + ".jpg"),
             os.path.join(root, "SegmentationClass", n + ".png")) for n in names]


def largest(paths):
    """The largest side any of the images at `paths` reaches in the preset: as stored, or
    after RandomResize makes its shorter side 2 * BASE_SIZE."""
    from PIL import Image
    sides = []
    for path in paths:
        with Image.open(path) as image:
            short, long = sorted(image.size)
        sides.append(max(long, -(-2 * BASE_SIZE * long // short)))
    return max(sides)


def write_split(set_folder, store):
    """A store of peers that read the files: files.json, the split's pairs."""
    import work
    work.write_file_list(store, split(set_folder))


def padded(tensors, fill):
    """The reference's cat_list: the tensors in one, each at the top left of the largest
    shape, `fill` around."""
    import torch
    shape = [max(sizes) for sizes in zip(*(t.shape for t in tensors))]
    out = torch.full([len(tensors)] + shape, fill, dtype=tensors[0].dtype)
    for slot, t in zip(out, tensors):
        slot[..., :t.shape[-2], :t.shape[-1]] = t
    return out


def collate(batch):
    """The reference's collate_fn: images padded with 0, class maps with 255."""
    images, targets = zip(*batch)
    return padded(images, 0), padded(targets, 255)


def check(index, batch, w):
    """The number of images of batch `index`, a RuntimeError where it is not the reference's."""
    import torch
    images, targets = batch
    if images.dtype != torch.float32 or tuple(images.shape[1:]) != (3, CROP, CROP) or \
            targets.dtype != torch.int64 or tuple(targets.shape) != (len(images), CROP, CROP):
        raise RuntimeError(f"batch {index}: images {images.dtype} {tuple(images.shape)}, "
                           f"targets {targets.dtype} {tuple(targets.shape)}, expected float32 "
                           f"[B, 3, {CROP}, {CROP}] and int64 [B, {CROP}, {CROP}]")
    images[-1, -1, -1, -1].item()  # the batch is there
    return len(images)
