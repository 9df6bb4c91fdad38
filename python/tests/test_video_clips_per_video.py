"""stoker.VideoFolder(root, clips_per_video=K) (issue 63): each video K samples, clip k of the
video its sample k, as torchvision's video reference samples clips (RandomClipSampler in
training, UniformClipSampler in evaluation). Against torchvision: sampler="uniform_clips" takes
UniformClipSampler's clips of each video's VideoClips (frames_per_clip, step_between_clips 1, the
video resampled to every s-th frame: frame_rate = fps / s), frame for frame."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import stoker
from stoker_binary import stoker_cli
from video_build import needs_video

torchcodec = pytest.importorskip("torchcodec")
from torchcodec.decoders import VideoDecoder  # noqa: E402
from torchvision.datasets.samplers import UniformClipSampler  # noqa: E402
from torchvision.datasets.video_utils import VideoClips  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import make_video_set  # noqa: E402

pytestmark = needs_video

NAMES = ["h264_gop12_bframes.mp4", "hevc_gop12_bframes.mp4", "h264_vfr.mkv", "vp9_gop12.webm"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    made = make_video_set.make_video_set(str(tmp_path_factory.mktemp("made")), NAMES)
    root = tmp_path_factory.mktemp("classes") / "root"
    for i, name in enumerate(NAMES):
        os.makedirs(root / f"class{i % 2}", exist_ok=True)
        shutil.copy(made[name], root / f"class{i % 2}" / name)
    return root


def video_clips(path, frames, s):
    """torchvision's VideoClips' clips of the video at `path` (`frames` frames at fps / s), each
    its frame indices, as VideoClips computes them from torchcodec's scanned metadata."""
    metadata = VideoDecoder(str(path)).metadata
    clips, _ = VideoClips.compute_clips_for_video(torch.arange(metadata.num_frames), frames, 1,
                                                  metadata.average_fps,
                                                  metadata.average_fps / s)
    return clips


def uniform_clips(paths, frames, s, k, alone=False):
    """torchvision's UniformClipSampler's k clips of each video of a dataset of `paths` (a
    VideoClips of them all, its clips numbered over the dataset), each clip its frame indices;
    `alone`: each video a dataset of its own."""
    per_video = [video_clips(path, frames, s) for path in paths]
    datasets = [[c] for c in per_video] if alone else [per_video]
    want = []
    for videos in datasets:
        enumeration = VideoClips.__new__(VideoClips)  # what the sampler reads: its clips
        enumeration.clips = videos
        every = torch.cat(videos)
        want += [every[i].tolist() for i in UniformClipSampler(enumeration, k)]
    return want


# (18, 1, 15) and (9, 2, 15): found by searching these videos for datasets whose offsets
# matter: torchvision's float32 linspace from the second video's first clip (58 clips into the
# dataset at (18, 1): 58 and 33 clips) takes clip 16 as its 8th, where the video alone takes 15.
@pytest.mark.parametrize("frames,s,k", [(8, 1, 5), (4, 2, 3), (6, 4, 7), (16, 1, 1),
                                        (18, 1, 15), (9, 2, 15)])
def test_uniform_clips_are_torchvisions(folder, frames, s, k):
    source = stoker.VideoFolder(folder, clips_per_video=k, transforms={
        "frames": stoker.transforms.ClipFrameIndices(sampler="uniform_clips",
                                                     num_frames_per_clip=frames,
                                                     num_indices_between_frames=s)})
    assert len(source) == k * len(source.samples)
    ours = []
    for batch in stoker.Loader(source, batch_size=4, shuffle=False):
        ours += batch["frames"].tolist()
    paths = [path for path, _ in source.samples]
    want = uniform_clips(paths, frames, s, k)
    assert ours == want
    if k == 15:  # the offsets matter here
        assert want != uniform_clips(paths, frames, s, k, alone=True)


def test_bench_loader_numbers_uniform_clips_as_the_loader_does(folder):
    """`stoker bench loader` gives "uniform_clips" its dataset: each video's clips numbered over
    the dataset, as the Loader's and torchvision's. Its checksum adds each batch's first byte
    of its first field: batches of one clip's frame indices, the sum of their first frames
    modulo 256, which differs where the videos are numbered alone (18, 1, 15)."""
    frames, s, k = 18, 1, 15
    run = subprocess.run(
        [stoker_cli(), "bench", "loader", "--json", "--epochs", "1", "--min-seconds", "0",
         "--batch", "1", "--workers", "0", "--data", str(folder), "--source", "videofolder",
         "--param", f"clips_per_video={k}", "--field",
         f"frames=clip_frame_indices:sampler=uniform_clips,num_frames_per_clip={frames},"
         f"num_indices_between_frames={s}"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    source = stoker.VideoFolder(folder, clips_per_video=k, transforms={
        "frames": stoker.transforms.ClipFrameIndices(sampler="uniform_clips",
                                                     num_frames_per_clip=frames,
                                                     num_indices_between_frames=s)})
    loaders = [clip[0] % 256 for batch in stoker.Loader(source, batch_size=4)
               for clip in batch["frames"].tolist()]
    assert json.loads(run.stdout)["checksum"] == sum(loaders)
    alone = uniform_clips([path for path, _ in source.samples], frames, s, k, alone=True)
    assert sum(loaders) != sum(clip[0] % 256 for clip in alone)


def test_clips_per_video_refuses_num_clips_and_frames_per_clip(folder):
    with pytest.raises(ValueError, match="give one of them"):
        stoker.VideoFolder(folder, frames_per_clip=8, clips_per_video=2)
    source = stoker.VideoFolder(folder, clips_per_video=2, transforms={
        "frames": stoker.transforms.ClipFrameIndices(num_clips=2)})
    with pytest.raises(Exception, match="num_clips must be 1"):
        next(iter(stoker.Loader(source, batch_size=2)))
