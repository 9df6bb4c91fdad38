"""stoker.VideoFolder (issue 63): class folders of videos read in place. Its classes and samples
against torchvision's find_classes and make_dataset on the same folder (the listing of its
Kinetics, UCF101 and HMDB51 datasets); its clips against those of the same files written with
stoker.DatasetWriter, which test_video_clips.py proves equal to torchcodec's and torchvision's;
a bad file named. The videos are bench/make_video_set.py's, made here by Debian's ffmpeg."""
import os
import shutil
import subprocess
import sys

import pytest
import torch

import stoker
from source_contract import check_bad_sample_refused
from stoker_binary import stoker_cli
from video_build import needs_video

pytestmark = needs_video

from torchvision.datasets.folder import find_classes, make_dataset  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import make_video_set  # noqa: E402

KINETICS = ("avi", "mp4")  # torchvision's Kinetics; UCF101 and HMDB51 take ("avi",)
EVERY = ("avi", "mp4", "mkv", "webm")

# Where each video goes: every case of make_dataset's walk (nested folders, an upper-case
# extension, an ending without its dot, a hidden class, files of other extensions).
LAYOUT = {
    "jump/h264_gop12_bframes.mp4": "h264_gop12_bframes.mp4",
    "jump/sub/h264_gop1.mp4": "h264_gop1.mp4",
    "jump/sub/old.AVI": "mpeg4_gop250_no_bframes.avi",
    "jump/CUT.MP4": "h264_cut.mp4",
    "jump/clipmp4": "h264_gop12_no_bframes.mp4",
    "jump/notes.txt": None,
    "run/mpeg4_gop250_no_bframes.avi": "mpeg4_gop250_no_bframes.avi",
    "run/odd.mp4": "h264_odd_98x74.mp4",
    "run/vp9_gop12.webm": "vp9_gop12.webm",
    "run/sub-dir/vp9_odd_99x75.webm": "vp9_odd_99x75.webm",
    "run/h264_gop250_bframes.mkv": "h264_gop250_bframes.mkv",
    ".archive/vfr.mkv": "h264_vfr.mkv",
    ".archive/a.avi": "mpeg4_gop250_no_bframes.avi",
}


def video_classes(root, count):
    """`count` class folders under `root`, each holding one short video (the same file)."""
    video = make_video_set.make_video_set(str(root) + "-video", ["h264_gop1.mp4"])
    for i in range(count):
        os.makedirs(root / f"c{i:02d}")
        shutil.copy(video["h264_gop1.mp4"], root / f"c{i:02d}/v.mp4")
    return root


def layout_folder(tmp_path_factory, layout):
    """A folder laid out as `layout` says: each path a copy of the named test video
    (bench/make_video_set.py), or a text file where it names none."""
    videos = tmp_path_factory.mktemp("videos")
    made = make_video_set.make_video_set(str(videos), sorted({v for v in layout.values() if v}))
    root = tmp_path_factory.mktemp("classes") / "root"
    for path, name in layout.items():
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        if name:
            shutil.copy(made[name], root / path)
        else:
            (root / path).write_text("not a video")
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return layout_folder(tmp_path_factory, LAYOUT)


def torchvision_listing(root, extensions):
    classes, class_to_idx = find_classes(root)
    return classes, class_to_idx, make_dataset(root, class_to_idx, extensions)


@pytest.mark.parametrize("extensions", [KINETICS, ("avi",), EVERY])
def test_classes_and_samples_are_torchvisions(folder, extensions):
    videos = stoker.VideoFolder(folder, extensions=extensions)
    classes, class_to_idx, samples = torchvision_listing(str(folder), extensions)
    assert videos.classes == classes and videos.class_to_idx == class_to_idx
    assert videos.samples == samples and len(videos) == len(samples)
    assert classes == [".archive", "jump", "run"]  # what the layout exercises is there
    if "mp4" in extensions:  # an upper-case extension, an ending without its dot
        assert {(str(folder / "jump/CUT.MP4"), 1), (str(folder / "jump/clipmp4"), 1)} <= set(
            samples)


def clips(source, seed=3):
    loader = stoker.Loader(source, batch_size=4, shuffle=True,
                           generator=torch.Generator().manual_seed(seed))
    out, labels = [], []
    for batch in loader:
        out += list(batch["video"])
        labels += batch["label"].tolist()
    return out, labels


def test_clips_equal_those_of_the_same_files_in_a_dataset(folder, tmp_path):
    """The Kinetics training pipeline (a random clip of 8 frames 2 apart, Resize, RandomCrop,
    flip) over every file, shuffled: the same clips, labels and order as a DatasetWriter
    dataset of the samples' bytes and labels."""
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=8, num_indices_between_frames=2,
                                        resize=[40], crop=[32], flip=0.5)
    videos = stoker.VideoFolder(folder, transforms={"video": clip}, extensions=EVERY)
    dataset = str(tmp_path / "dataset")
    with stoker.DatasetWriter(dataset, {"video": "bytes", "label": "int64"}) as writer:
        for path, label in videos.samples:
            with open(path, "rb") as f:
                writer.append({"video": f.read(), "label": label})
    ours, labels = clips(videos)
    want, want_labels = clips(stoker.Dataset(dataset, transforms={"video": clip}))
    assert labels == want_labels and sorted(labels) == sorted(l for _, l in videos.samples)
    assert len(ours) == len(videos) == 12
    for a, b in zip(ours, want):
        assert a.shape == (8, 3, 32, 32) and a.dtype == torch.uint8 and torch.equal(a, b)
    assert not torch.equal(ours[0], ours[1])


def test_a_bad_file_is_a_bad_record_naming_it(folder, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(folder / "jump", root / "jump")
    (root / "jump/broken.mp4").write_bytes(b"not a video")
    os.symlink("nowhere.avi", root / "jump/gone.avi")
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[20], crop=[16])
    videos = stoker.VideoFolder(root, transforms={"video": clip})
    with pytest.raises(Exception) as raised:
        list(stoker.Loader(videos, batch_size=2, shuffle=False))
    message = str(raised.value)
    assert message.startswith(str(root / "jump/broken.mp4") + ": ") and "\n" not in message
    skipped = stoker.Loader(videos, batch_size=2, shuffle=False, on_error="skip")
    kept = [path for path, _ in videos.samples if "broken" not in path and "gone" not in path]
    assert sum(len(b["label"]) for b in skipped) == len(kept) == 5
    # A file that cannot be read names it and why.
    only_gone = tmp_path / "gone"
    os.makedirs(only_gone / "c")
    os.symlink("nowhere.avi", only_gone / "c/gone.avi")
    with pytest.raises(Exception, match=f"^{only_gone}/c/gone.avi: a dangling symbolic link"):
        list(stoker.Loader(stoker.VideoFolder(only_gone, transforms={"video": clip}),
                           batch_size=1))
    # Read for its labels alone, it is refused all the same (broken.mp4 is bad only once decoded).
    check_bad_sample_refused(stoker.VideoFolder(root), str(tmp_path / "cache"),
                             f"^{root}/jump/gone.avi: a dangling symbolic link", count=7,
                             left_out="video")


def test_verify_examines_every_video_as_the_command_does(folder, tmp_path):
    """stoker.verify decodes each video's keyframes (decode="keyframes"), or reads only its
    index ("none"), naming each video that does not open, and with the CLI's lines."""
    root = tmp_path / "root"
    shutil.copytree(folder / "run", root / "run")
    cache = str(tmp_path / "cache")
    videos = stoker.VideoFolder(root, extensions=EVERY)
    assert stoker.verify(videos, cache_dir=cache)["datasets"][0]["records"] == 5
    (root / "run/broken.mp4").write_bytes(b"not a video")
    (root / "run/empty.mp4").write_bytes(b"")
    for decode in ("none", "keyframes", "all"):
        with pytest.raises(stoker.Error, match=r"root: 2 of 7 records failed verification$") \
                as raised:
            stoker.verify(videos, cache_dir=cache, decode=decode)
        assert [e.split(": ")[0] for e in raised.value.errors] == \
            [str(root / "run/broken.mp4"), str(root / "run/empty.mp4")], raised.value.errors
    with pytest.raises(ValueError, match="^decode must be one of none, keyframes, all, not 'x'$"):
        stoker.verify(root, decode="x")
    command = subprocess.run([stoker_cli(), "verify", str(root), "--cache-dir", cache,
                              "--param", "extensions=" + " ".join(EVERY)],
                             capture_output=True, text=True)
    assert command.returncode == 1
    assert command.stderr.splitlines()[:2] == raised.value.errors


def test_a_folder_without_videos_is_one_line_naming_it(tmp_path):
    (tmp_path / "images/cat").mkdir(parents=True)
    (tmp_path / "images/cat/x.jpg").write_bytes(b"an image")
    with pytest.raises(Exception) as raised:
        len(stoker.VideoFolder(tmp_path / "images"))
    assert str(raised.value) == (f"{tmp_path / 'images'}: found no file with a video extension "
                                 f"(avi mp4) for the class cat")
    with pytest.raises(ValueError, match="extensions"):
        stoker.VideoFolder(tmp_path, extensions=("avi", ""))
