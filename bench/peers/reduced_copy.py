"""A reduced copy of an ImageFolder, for the peers whose tool cannot store reduced images (the
second table of run.py, `--max-side N`): an image whose longer side exceeds N is resized so that
side is N (the other in proportion, rounded, at least 1; PIL's antialiased bilinear filter) and
saved as a JPEG at quality 90, 4:2:0, under its own name (every peer's decoder reads the
content, not the name); the others are copied byte for byte. The same rule as stoker's
`--max-side` and FFCV's `max_resolution`, so every peer trains on copies of the same size.
"""
import os
import shutil

from PIL import Image

QUALITY = 90


def reduced_size(width, height, max_side):
    """(width, height) with the longer side `max_side`, or None when the image fits."""
    longer = max(width, height)
    if longer <= max_side:
        return None
    scale = lambda side: max(1, int(side * max_side / longer + 0.5))  # noqa: E731
    return (max_side, scale(height)) if width >= height else (scale(width), max_side)


def make(folder, out, max_side):
    """Writes the reduced copy of `folder` to `out` (made whole in out + ".part", then renamed,
    so a copy that exists is complete); returns `out`."""
    if os.path.isdir(out):
        return out
    part = out + ".part"
    shutil.rmtree(part, ignore_errors=True)
    for name in sorted(os.listdir(folder)):
        if not os.path.isdir(os.path.join(folder, name)):
            continue
        os.makedirs(os.path.join(part, name))
        for f in sorted(os.listdir(os.path.join(folder, name))):
            src, dst = os.path.join(folder, name, f), os.path.join(part, name, f)
            with Image.open(src) as img:
                size = reduced_size(*img.size, max_side)
                if size is None:
                    shutil.copyfile(src, dst)
                    continue
                img = img.convert("RGB").resize(size, Image.BILINEAR)
            img.save(dst, "JPEG", quality=QUALITY, subsampling="4:2:0", optimize=True)
    os.rename(part, out)
    return out
