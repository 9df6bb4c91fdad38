"""A video folder over http:// (nginx, its HTML and JSON index pages) and s3:// (SeaweedFS) on
loopback (issue 63, point 5), each video read whole through the shard cache: the local folder's
classes and samples, `auto` taking a folder URL of videos as a video folder, the same clips byte
for byte as the local folder gives (one worker and several), and a file gone or cut short after
the listing as one line naming its URL, which on_error="skip" drops."""
import os
import shutil

import pytest
import torch

import stoker
from test_video_folder import layout_folder
from video_build import needs_video

pytestmark = needs_video

# Where each video goes: two classes, a nested folder, a name with a space, a file that is no
# video by its extension.
LAYOUT = {
    "jump/h264_gop12_bframes.mp4": "h264_gop12_bframes.mp4",
    "jump/sub dir/gop1.mp4": "h264_gop1.mp4",
    "jump/notes.txt": None,
    "run/old.avi": "mpeg4_gop250_no_bframes.avi",
    "run/h264_gop12_no_bframes.mp4": "h264_gop12_no_bframes.mp4",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return layout_folder(tmp_path_factory, LAYOUT)


@pytest.fixture
def served(folder, nginx_server):
    """The folder under nginx's root as videos/: its URL through the HTML index, and the JSON."""
    shutil.copytree(folder, nginx_server.root / "videos")
    return [f"{nginx_server.url}/{index}/videos/" for index in ("_index", "_index_json")]


def clip():
    return stoker.transforms.DecodeClip(num_frames_per_clip=6, num_indices_between_frames=2,
                                        resize=[40], crop=[32], flip=0.5)


def clips(source, cache, workers=0, on_error="raise"):
    """Every sample's clip and label, shuffled by a fixed seed."""
    loader = stoker.Loader(source, batch_size=2, shuffle=True, num_workers=workers,
                           cache_dir=cache, on_error=on_error, transforms={"video": clip()},
                           generator=torch.Generator().manual_seed(5))
    out, labels = [], []
    for batch in loader:
        out += list(batch["video"])
        labels += batch["label"].tolist()
    return out, labels


def assert_same_clips(got, want):
    assert got[1] == want[1]
    assert len(got[0]) == len(want[0]) == 4
    for a, b in zip(got[0], want[0]):
        assert a.shape == (6, 3, 32, 32) and torch.equal(a, b)


def test_classes_and_samples_are_the_local_folders(folder, served, tmp_path):
    local = stoker.VideoFolder(folder)
    for url in served:
        remote = stoker.Loader(stoker.VideoFolder(url), batch_size=2,
                               cache_dir=tmp_path / "cache").dataset
        assert remote.classes == local.classes == ["jump", "run"]
        base = url.rstrip("/")
        assert remote.samples == [
            (base + path[len(str(folder)):].replace(" ", "%20"), label)
            for path, label in local.samples]


def test_clips_are_the_local_folders_and_auto_takes_the_url(folder, served, tmp_path):
    cache = tmp_path / "cache"
    want = clips(stoker.VideoFolder(folder), cache)
    for url in served:
        for workers in (0, 2):  # 0: one thread, deterministic
            assert_same_clips(clips(stoker.VideoFolder(url), cache, workers), want)
        # `auto`: a folder URL whose first file is a video is a video folder.
        assert_same_clips(clips(url, cache), want)


def test_an_s3_folder_gives_the_local_folders_clips(folder, s3_env, tmp_path):
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            key = f"/{s3_env.bucket}/videos/{path.relative_to(folder).as_posix()}"
            status, _ = s3_env.request("PUT", key.replace(" ", "%20"), path.read_bytes())
            assert status == 200
    cache = tmp_path / "cache"
    url = f"s3://{s3_env.bucket}/videos/"
    assert_same_clips(clips(url, cache, 2), clips(stoker.VideoFolder(folder), cache))


@pytest.mark.parametrize("change", ["gone", "cut"])
def test_a_file_gone_or_cut_after_listing_is_one_line_naming_its_url(served, nginx_server,
                                                                      tmp_path, change):
    url = served[0]  # the HTML index: sizes and ETags asked by HEAD
    videos = stoker.VideoFolder(url)
    loader = stoker.Loader(videos, batch_size=1, shuffle=False, cache_dir=tmp_path / "cache",
                           transforms={"video": clip()})
    skipping = stoker.Loader(videos, batch_size=1, shuffle=False, on_error="skip",
                             cache_dir=tmp_path / "cache", transforms={"video": clip()})
    path = nginx_server.root / "videos/run/old.avi"
    if change == "gone":
        os.remove(path)
    else:
        path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(stoker.Error) as raised:
        list(loader)
    message = str(raised.value)
    assert message.startswith(f"{url}run/old.avi: ") and "\n" not in message, message
    assert sum(len(batch["label"]) for batch in skipping) == 3


def test_frames_per_clip_is_refused_at_a_url_in_one_line(served, tmp_path):
    with pytest.raises(Exception) as raised:
        stoker.Loader(stoker.VideoFolder(served[1], frames_per_clip=4), batch_size=1,
                      cache_dir=tmp_path / "cache")
    message = str(raised.value)
    assert message.startswith(served[1].rstrip("/")) and "frames_per_clip" in message
    assert "\n" not in message
