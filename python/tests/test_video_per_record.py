"""stoker.Order(samples_per_record=K) (issues 63, 64): any dataset's records K samples each, the
"per_record" order. Videos in a WebDataset tar give each video K clips spread over the epoch,
the clips VideoFolder(clips_per_video=K) gives of the same videos, byte for byte (the same
positions, each clip drawing from the same stream), for 1 and 2 workers; its state resumes only
a loader of the same K."""
import io
import os
import sys
import tarfile

import pytest
import torch

import stoker
from video_build import needs_video

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import make_video_set  # noqa: E402

pytestmark = needs_video

NAMES = ["h264_gop12_bframes.mp4", "hevc_gop12_bframes.mp4", "h264_gop1.mp4", "vp9_gop12.webm"]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """(a class folder of the videos, a tar of the same videos in the folder's order: members
    NNNN.video and NNNN.cls)."""
    made = make_video_set.make_video_set(str(tmp_path_factory.mktemp("made")), NAMES)
    root = tmp_path_factory.mktemp("classes") / "root"
    for i, name in enumerate(NAMES):
        os.makedirs(root / f"class{i % 2}", exist_ok=True)
        os.symlink(made[name], root / f"class{i % 2}" / name)
    tar = tmp_path_factory.mktemp("tar") / "videos.tar"
    with tarfile.open(tar, "w") as out:
        for i, (path, label) in enumerate(stoker.VideoFolder(root).samples):
            for suffix, data in ((".video", open(path, "rb").read()),
                                 (".cls", str(label).encode())):
                info = tarfile.TarInfo(f"{i:04d}{suffix}")
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
    return root, tar


def batches(source, workers=0, state=None, **order):
    """Every batch's (clips, frame indices, labels) of epoch 0 (from `state` where given)."""
    loader = stoker.Loader(
        source, batch_size=2, shuffle=True, order=stoker.Order(seed=5, **order),
        feed=stoker.Feed(workers=workers), transforms={
            "video": stoker.transforms.DecodeClip(num_frames_per_clip=4,
                                                  num_indices_between_frames=3, resize=[40],
                                                  crop=[32], crop_mode="random", flip=0.5),
            "frames": stoker.transforms.ClipFrameIndices(num_frames_per_clip=4,
                                                         num_indices_between_frames=3)})
    if state is not None:
        loader.load_state_dict(state)
    return [(b["video"], b["frames"], b["label"]) for b in loader.epoch(0)], loader


def test_a_tars_videos_give_the_folders_clips(videos):
    folder, tar = videos
    want, _ = batches(stoker.VideoFolder(folder, clips_per_video=2))
    got, loader = batches(stoker.WebDataset(str(tar)), samples_per_record=2)
    videos = stoker.VideoFolder(folder).samples
    assert len(videos) >= 3
    assert len(loader) == len(got) == len(want) == len(videos) * 2 // 2
    for (video, frames, label), (v, f, lab) in zip(got, want):
        assert torch.equal(frames, f) and torch.equal(label, lab) and torch.equal(video, v)
    # Each video's 2 clips once.
    labels = torch.cat([label for _, _, label in got]).tolist()
    assert sorted(labels) == sorted([label for _, label in videos] * 2)
    threaded, _ = batches(stoker.WebDataset(str(tar)), workers=2, samples_per_record=2)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(threaded, got))


def test_a_state_resumes_the_same_samples_per_record_only(videos):
    _, tar = videos
    source = stoker.WebDataset(str(tar))
    whole, loader = batches(source, samples_per_record=2)
    it = iter(loader.epoch(0))
    next(it)
    state = loader.state_dict()
    assert state["position"] == 2 and state["order"] == "per_record:samples=2,window=0"
    rest, _ = batches(source, state=state, samples_per_record=2)
    assert len(rest) == len(whole) - 1
    assert all(torch.equal(a[1], b[1]) for a, b in zip(rest, whole[1:]))
    with pytest.raises(ValueError, match="order"):
        batches(source, state=state)
    with pytest.raises(ValueError, match="samples_per_record"):
        batches(source, samples_per_record=0)
    with pytest.raises(ValueError, match="records are clips_per_video"):
        batches(stoker.VideoFolder(videos[0], clips_per_video=2), samples_per_record=2)
