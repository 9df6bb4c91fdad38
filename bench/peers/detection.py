"""The detection works of the side-by-side benchmark (run.py --pipeline det-hflip or det-lsj),
beside the textbook work of work.py and the recipes of recipes.py: torchvision's detection
reference's training pipeline on a COCO-shaped set (bench/make_coco_set.py's), batches of BATCH
as the reference's collate_fn gives them (a tuple of float32 [3, H, W] images and a tuple of
targets {"boxes": float32 [N, 4] XYXY, "labels": int64 [N], "image_id"}), the last partial
batch dropped (its BatchSampler's drop_last).

  det-hflip  DetectionPresetTrain(data_augmentation="hflip", backend="pil", use_v2=True):
             RandomHorizontalFlip(0.5), ToImage, ToDtype(float32, scale), XYXY,
             SanitizeBoundingBoxes, ToPureTensor; images at their own sizes.
  det-lsj    the same with data_augmentation="lsj": ScaleJitter((1024, 1024)), the reference's
             own FixedSizeCrop((1024, 1024), fill=mean) (fixed_size_crop.py), then the flip and
             the tail; images 1024 x 1024.

The set is the one the reference trains on: its train split drops the images without a usable
object (train_annotations).
"""
import json
import os

BATCH = int(os.environ.get("STOKER_PEERS_BATCH", "8"))
MEAN = (123.0, 117.0, 104.0)  # the reference's fill for lsj's padding
LSJ_SIZE = 1024


class Work:
    def __init__(self, name, augmentation, size=None):
        self.name, self.augmentation, self.size = name, augmentation, size


WORKS = {"det-hflip": Work("det-hflip", "hflip"),
         "det-lsj": Work("det-lsj", "lsj", LSJ_SIZE)}


def preset(w):
    """The reference's DetectionPresetTrain for work `w` (backend "pil", use_v2=True) as a v2
    Compose: what the DataLoader peer runs on CocoDetection's v2-wrapped samples and stoker's
    Loader takes as its transforms."""
    import torch
    from torchvision.transforms import v2

    from fixed_size_crop import FixedSizeCrop
    steps = []
    if w.augmentation == "lsj":
        steps += [v2.ScaleJitter(target_size=(LSJ_SIZE, LSJ_SIZE), antialias=True),
                  FixedSizeCrop(size=(LSJ_SIZE, LSJ_SIZE), fill=MEAN)]
    steps += [v2.RandomHorizontalFlip(p=0.5), v2.ToImage(), v2.ToDtype(torch.float, scale=True),
              v2.ConvertBoundingBoxFormat("XYXY"), v2.SanitizeBoundingBoxes(),
              v2.ToPureTensor()]
    return v2.Compose(steps)


def collate(batch):
    """The reference's collate_fn (its utils.py): the samples' images and targets, as tuples."""
    return tuple(zip(*batch))


def usable(objects):
    """True where the reference's train split keeps an image of `objects` (its
    _coco_remove_images_without_annotations): one object at least, and one whose box is wider
    and taller than a pixel."""
    return any(o["bbox"][2] > 1 and o["bbox"][3] > 1 for o in objects)


def train_annotations(set_folder, out):
    """Writes to `out` the set's instances JSON of the images the reference trains on
    (`usable`); returns the number of images."""
    with open(os.path.join(set_folder, "annotations", "instances.json")) as f:
        data = json.load(f)
    by_image = {}
    for a in data["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    keep = {i["id"] for i in data["images"] if usable(by_image.get(i["id"], []))}
    data["images"] = [i for i in data["images"] if i["id"] in keep]
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] in keep]
    with open(out, "w") as f:
        json.dump(data, f)
    return len(data["images"])


def write_set(set_folder, store):
    """A store of peers that read the set's files: set.json naming the images folder and the
    train split's annotations (written beside it), and files.json (run.py: the store reads the
    files)."""
    os.makedirs(store, exist_ok=True)
    annotations = os.path.join(store, "instances-train.json")
    train_annotations(set_folder, annotations)
    with open(annotations) as f:
        data = json.load(f)
    largest = max(max(i["width"], i["height"]) for i in data["images"])
    with open(os.path.join(store, "set.json"), "w") as f:
        json.dump({"images": os.path.join(set_folder, "images"), "annotations": annotations,
                   "largest_side": largest}, f)
    with open(os.path.join(store, "files.json"), "w") as f:
        json.dump([[os.path.join(set_folder, "images", i["file_name"]), i["id"]]
                   for i in data["images"]], f)


def read_set(store):
    """{"images": folder, "annotations": the train split's JSON, "largest_side": pixels}."""
    with open(os.path.join(store, "set.json")) as f:
        return json.load(f)


def check(index, batch, w):
    """The number of images of detection batch `index`, a RuntimeError where it is not the
    reference's (images float32 [3, H, W], at w.size square where the work has one; targets
    with boxes [N, 4] and labels [N] of the same N)."""
    import torch
    images, targets = batch
    if len(images) != len(targets):
        raise RuntimeError(f"batch {index}: {len(targets)} targets for {len(images)} images")
    for k, (image, target) in enumerate(zip(images, targets)):
        boxes, labels = target["boxes"], target["labels"]
        if image.dtype != torch.float32 or image.dim() != 3 or image.shape[0] != 3 or \
                (w.size and tuple(image.shape[1:]) != (w.size, w.size)):
            raise RuntimeError(f"batch {index} image {k}: {image.dtype} {tuple(image.shape)}, "
                               f"expected float32 [3, {w.size or 'H'}, {w.size or 'W'}]")
        if boxes.dim() != 2 or boxes.shape[1] != 4 or labels.shape != (len(boxes),) or \
                labels.dtype != torch.int64:
            raise RuntimeError(f"batch {index} image {k}: boxes {tuple(boxes.shape)}, labels "
                               f"{labels.dtype} {tuple(labels.shape)}, expected [N, 4] and "
                               "int64 [N]")
    images[-1][-1, -1, -1].item()  # the batch is there
    return len(images)
