"""Peak memory of reading one large WebDataset tar in place (issue 66, H3): a tar of `--mb`
samples of a 590x590 noise JPEG (about 0.7 MB; noise, so that it does not compress) read by
stoker.Loader, shuffled, for `--batches` batches of 8, in a fresh process; prints the process's
peak RSS against the tar's size, then the images/s of a whole shuffled epoch of the tar decoded,
RandomResizedCrop(224) and flipped (2 workers). Run it with two builds on PYTHONPATH to compare
them:

    python3 bench/tar_memory.py /tmp/big-tar --mb 1024 --batches 20
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile

READ = """
import json, sys, time, stoker
loader = stoker.Loader(stoker.WebDataset(sys.argv[1]), batch_size=8, shuffle=True,
                       batch_format="dict", transforms={"image": None}, num_workers=2)
for n, batch in enumerate(loader):
    if n + 1 == int(sys.argv[2]):
        break
peak = int(next(line.split()[1] for line in open("/proc/self/status")
                if line.startswith("VmHWM:"))) / 1024  # ru_maxrss would carry the parent's
from torchvision.transforms import v2
loader = stoker.Loader(stoker.WebDataset(sys.argv[1]), batch_size=32, shuffle=True,
                       transforms={"image": v2.Compose([v2.RandomResizedCrop(224),
                                                        v2.RandomHorizontalFlip()])},
                       num_workers=2)
start, images = time.perf_counter(), 0
for image, label in loader:
    images += len(label)
print(json.dumps({"peak_rss_mb": peak, "images_per_s": images / (time.perf_counter() - start)}))
"""


def make_tar(path: str, mb: int) -> None:
    """`mb` samples of a 1 MB noise JPEG each (quality 100) and a label."""
    import numpy as np
    from PIL import Image
    if os.path.exists(path):
        return
    rng = np.random.default_rng(0)
    with tarfile.open(path + ".part", "w") as tar:
        for i in range(mb):
            pixels = rng.integers(0, 256, (590, 590, 3), dtype=np.uint8)
            jpeg = io.BytesIO()
            Image.fromarray(pixels).save(jpeg, "JPEG", quality=100)
            for name, data in ((f"s{i:06d}.jpg", jpeg.getvalue()), (f"s{i:06d}.cls", b"1")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    os.rename(path + ".part", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    tar = os.path.join(args.folder, f"big-{args.mb}.tar")
    make_tar(tar, args.mb)
    out = subprocess.run([sys.executable, "-c", READ, tar, str(args.batches)], check=True,
                         capture_output=True, text=True).stdout
    read = json.loads(out.strip().splitlines()[-1])
    size = os.path.getsize(tar) / 2**20
    print(json.dumps({"tar_mb": round(size), "batches": args.batches,
                      "peak_rss_mb": round(read["peak_rss_mb"]),
                      "rss_over_tar": round(read["peak_rss_mb"] / size, 2),
                      "epoch_images_per_s": round(read["images_per_s"], 1)}))


if __name__ == "__main__":
    main()
