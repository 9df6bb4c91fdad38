"""torchvision's r3d_18 (no weights) trained for a few steps on the CPU from video clips: class
folders of mp4 files as Kinetics lays them out (stoker.VideoFolder, read in place), their clips
sampled as torchcodec's
clips_at_random_indices samples them and transformed by torchvision v2's steps, all natively
(stoker.transforms.DecodeClip followed by Resize, RandomCrop, RandomHorizontalFlip, ToDtype and
Normalize), batches [B, C, T, H, W] as torchvision's video models take them.

    python bench/make_kinetics_set.py VIDEOS --clips 8 --classes 2 --seconds 2
    python examples/video_train.py VIDEOS [--steps 10] [--threads 1]

It prints "step k: loss X" per step.
"""

import argparse
import os
import pathlib

import torch
import torchvision
from torchvision.transforms import v2

import stoker
from common import train_step

MEAN, STD = [0.43216, 0.394666, 0.37645], [0.22803, 0.22145, 0.216989]  # Kinetics'


def train(videos: pathlib.Path, steps: int) -> list:
    """Trains r3d_18 for `steps` steps of 4 clips; returns each step's loss."""
    clips = v2.Compose([
        stoker.transforms.DecodeClip(num_frames_per_clip=8, num_indices_between_frames=2,
                                     layout="CTHW"),
        v2.Resize(64), v2.RandomCrop(56), v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    dataset = stoker.VideoFolder(videos, transforms={"video": clips})
    loader = stoker.Loader(dataset, batch_size=4, shuffle=True, num_workers=2, drop_last=True,
                           generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = torchvision.models.video.r3d_18(num_classes=len(dataset.classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    while len(losses) < steps:
        for batch in loader:
            loss = train_step(model, optimizer, batch["video"], batch["label"])
            losses.append(loss.item())
            print(f"step {len(losses)}: loss {loss.item():.4f}", flush=True)
            if len(losses) == steps:
                break
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("videos", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train(args.videos, args.steps)


if __name__ == "__main__":
    main()
