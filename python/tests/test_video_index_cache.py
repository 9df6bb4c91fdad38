"""Videos' indexes kept in the cache folder across runs (issue 63, video/video_cache.h): a run's
first opening of a video writes its index under CACHE/video-indexes/, keyed by the video's bytes;
a later run reads it there (the file is not written again) and gives the same clips; a damaged
copy is indexed again and replaced; a video changed in place, its size and time kept, gives its
new frames (torchcodec's), not the old index's. The videos are bench/make_video_set.py's."""
import glob
import os
import shutil
import struct

import pytest
import torch

import stoker
from test_video_clips import NAMES, make_video_set
from video_build import needs_video

pytestmark = needs_video
torchcodec_decoders = pytest.importorskip("torchcodec.decoders")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    return make_video_set.make_video_set(str(tmp_path_factory.mktemp("videos")), NAMES)


def class_folder(root, files):
    """A class folder per file, holding it as v.<its extension>."""
    for i, path in enumerate(files):
        os.makedirs(root / f"c{i:02d}")
        shutil.copy(path, root / f"c{i:02d}/v{os.path.splitext(path)[1]}")
    return root


def saved_files(cache):
    """The indexes the cache folder keeps (video-indexes/KEY[0:3]/KEY.index)."""
    return sorted(glob.glob(os.path.join(cache, "video-indexes", "*", "*")))


def saved(cache):
    """{path: (bytes, inode)} of the indexes the cache folder keeps."""
    out = {}
    for path in saved_files(cache):
        with open(path, "rb") as f:
            out[path] = (f.read(), os.stat(path).st_ino)
    return out


def clips(root, cache):
    """Every video's regular clip through a loader whose worker opens each for the first time."""
    clip = stoker.transforms.DecodeClip(sampler="regular", num_frames_per_clip=4,
                                        num_indices_between_frames=3, resize=[30], crop=[24])
    folder = stoker.VideoFolder(root, transforms={"video": clip},
                                extensions=("avi", "mkv", "mp4", "webm"))
    loader = stoker.Loader(folder, batch_size=4, num_workers=1, cache_dir=cache)
    return [c for batch in loader for c in batch["video"]]


def test_a_later_run_reads_the_saved_indexes(videos, tmp_path):
    root = class_folder(tmp_path / "videos", [videos[n] for n in NAMES])
    cache = str(tmp_path / "cache")
    first = clips(root, cache)
    kept = saved(cache)
    assert len(kept) == len(NAMES)
    for path in kept:  # named by the video's key, in the folder of its first three digits
        folder, name = os.path.split(path)
        assert name.endswith(".index") and name.startswith(os.path.basename(folder))
    # Read, not written again: the same files (inodes: a write replaces the file).
    later = clips(root, cache)
    assert saved(cache) == kept
    assert all(torch.equal(a, b) for a, b in zip(first, later))
    # Damaged copies are indexed again and replaced by whole ones.
    for path, (data, _) in kept.items():
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
    repaired = clips(root, cache)
    assert all(torch.equal(a, b) for a, b in zip(first, repaired))
    assert {path: data for path, (data, _) in saved(cache).items()} == \
        {path: data for path, (data, _) in kept.items()}


def padded(data, size):
    """The mp4 `data` made `size` bytes long by a trailing `free` box, which demuxers skip."""
    gap = size - len(data)
    assert gap >= 8
    return data + struct.pack(">I", gap) + b"free" + bytes(gap - 8)


def test_a_video_changed_in_place_gives_its_new_frames(videos, tmp_path):
    with open(videos["h264_gop12_bframes.mp4"], "rb") as f:
        before = f.read()
    with open(videos["h264_gop12_no_bframes.mp4"], "rb") as f:
        after = f.read()
    size = max(len(before), len(after)) + 64
    path = tmp_path / "videos/c/v.mp4"
    os.makedirs(path.parent)
    path.write_bytes(padded(before, size))
    cache = str(tmp_path / "cache")
    sampling = dict(sampler="regular", num_frames_per_clip=4, num_indices_between_frames=5)
    fields = {"video": stoker.transforms.DecodeClip(**sampling, capacity=[120, 160]),
              "frames": stoker.transforms.ClipFrameIndices(**sampling)}

    def run():
        """The video's clip and frame indices, and torchcodec's frames at those indices."""
        loader = stoker.Loader(stoker.VideoFolder(path.parent.parent, transforms=fields),
                               batch_size=1, num_workers=1, cache_dir=cache)
        batch = next(iter(loader))
        frames = batch["frames"][0].tolist()
        return batch["video"][0], torchcodec_decoders.VideoDecoder(str(path)).get_frames_at(
            frames).data

    ours, theirs = run()
    assert torch.equal(ours, theirs)
    stat = os.stat(path)
    with open(path, "r+b") as f:  # in place: the same file, its size and time kept
        f.write(padded(after, size))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    changed, theirs = run()
    assert torch.equal(changed, theirs)
    assert not torch.equal(changed, ours)
    assert len(saved_files(cache)) == 2  # each video's own
