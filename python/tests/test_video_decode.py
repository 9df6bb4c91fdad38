"""The native video decoder (issue 63) against torchcodec 0.17 with the same system FFmpeg: the
same frame count, and the frames at any indices equal byte for byte, over every file of
bench/make_video_set.py (made here by Debian's ffmpeg; nothing is downloaded)."""
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import stoker
from stoker import _stoker
from ffmpeg_frames import ffmpeg_frames
from video_build import needs_video

pytestmark = needs_video

torchcodec_decoders = pytest.importorskip("torchcodec.decoders")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import make_video_set  # noqa: E402

# Every file, the rotated one turned upright as torchcodec turns it.
NAMES = make_video_set.names()
# MPEG-4 part 2 with B-frames in AVI, whose packets hold decoding times only: torchcodec 0.17
# indexes its frames in decoding order, so that a frame asked for alone is another one (frame 1
# is frame 0, frame 10 is frame 12) and asking for every frame at once fails. Its frames are
# FFmpeg's own, decoding the whole file in order (FFMPEG_ORDER).
FFMPEG_ORDER = {"mpeg4_gop12_bframes.avi"}


@pytest.fixture(scope="session")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("videos")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_video_set.py"), str(folder)],
                   check=True, stdout=subprocess.DEVNULL)
    return folder


def spread(index):
    """First, last, middle, each keyframe and the frame before it, mid-GOP frames, random ones."""
    n = len(index["pts"])
    picks = {0, n - 1, n // 2}
    for key in index["keyframes"]:
        picks.update(i for i in (key - 1, key, key + 5) if 0 <= i < n)
    picks.update(random.Random(n).sample(range(n), min(n, 8)))
    return sorted(picks)


@pytest.mark.parametrize("name", NAMES)
def test_frames_equal_torchcodec(videos, name):
    path = str(videos / name)
    reference = torchcodec_decoders.VideoDecoder(path)
    index = _stoker.video_index(path)
    assert len(index["pts"]) == len(reference) == reference.metadata.num_frames
    turned = name in make_video_set.ROTATED  # the index's size is the coded one
    assert (index["width"] if turned else index["height"],
            index["height"] if turned else index["width"]) == (reference.metadata.height,
                                                               reference.metadata.width)
    picks = spread(index)
    # Out of order and repeated, as a clip sampler asks.
    indices = picks[::-1] + picks[: len(picks) // 2]
    ours = _stoker.decode_video_frames(path, indices)
    if name in FFMPEG_ORDER:
        theirs = ffmpeg_frames(path, index["width"], index["height"])[indices]
    else:
        theirs = reference.get_frames_at(indices).data.numpy()
    assert ours.shape == theirs.shape and ours.dtype == np.uint8
    for k, i in enumerate(indices):
        assert np.array_equal(ours[k], theirs[k]), f"{name}: frame {i} differs"
    channels_last = _stoker.decode_video_frames(path, indices[:3], layout="NHWC")
    assert np.array_equal(channels_last, ours[:3].transpose(0, 2, 3, 1))


def test_every_frame_equals_torchcodec(videos):
    """One whole file with B-frames and a width not a multiple of 32, frame by frame."""
    for name in ("h264_odd_98x74.mp4", "h264_gop12_bframes.mp4"):
        path = str(videos / name)
        reference = torchcodec_decoders.VideoDecoder(path)
        every = list(range(len(reference)))
        assert np.array_equal(_stoker.decode_video_frames(path, every),
                              reference.get_frames_at(every).data.numpy()), name


def test_avi_with_b_frames_is_ffmpegs_decode_in_order(videos):
    """Every frame of the AVI with B-frames, asked for at once and one by one, is FFmpeg's: the
    frames torchcodec gives decoding forward from the start (get_frame_at 0, 1, ... on one
    decoder, all but the last, which it cannot reach); its keyframes are where they are shown."""
    path = str(videos / "mpeg4_gop12_bframes.avi")
    index = _stoker.video_index(path)
    assert index["keyframes"] == list(range(0, 75, 12))
    expected = ffmpeg_frames(path, index["width"], index["height"])
    assert len(expected) == len(index["pts"]) == 75
    assert np.array_equal(_stoker.decode_video_frames(path, list(range(75))), expected)
    for i in range(75):
        assert np.array_equal(_stoker.decode_video_frames(path, [i])[0], expected[i]), i
    forward = torchcodec_decoders.VideoDecoder(path)
    for i in range(74):
        assert np.array_equal(forward.get_frame_at(i).data.numpy(), expected[i]), i


def test_index_reads_pts_keyframes_and_rotation(videos):
    index = _stoker.video_index(str(videos / "h264_gop12_no_bframes.mp4"))
    assert index["keyframes"] == list(range(0, 75, 12))
    assert index["codec"] == "h264" and index["rotation"] is None
    rotated = _stoker.video_index(str(videos / "h264_rotated_90.mp4"))
    assert abs(rotated["rotation"]) == 90
    vfr = _stoker.video_index(str(videos / "h264_vfr.mkv"))
    num, den = vfr["time_base"]
    reference = torchcodec_decoders.VideoDecoder(str(videos / "h264_vfr.mkv"))
    frames = reference.get_frames_at([0, 1, 2, 3])
    assert [p * num / den for p in vfr["pts"][:4]] == pytest.approx(frames.pts_seconds.tolist())


def test_bad_input_is_one_line_naming_file_and_frame(videos, tmp_path):
    path = str(videos / "h264_gop1.mp4")
    with pytest.raises(ValueError, match=r"h264_gop1\.mp4: frame 50 is out of range"):
        _stoker.decode_video_frames(path, [0, 50])
    text = tmp_path / "notes.webm"
    text.write_text("no video here\n")
    with pytest.raises(stoker.Error, match="notes.webm") as raised:
        _stoker.video_index(str(text))
    assert "\n" not in str(raised.value)
    with pytest.raises(ValueError, match="layout"):
        _stoker.decode_video_frames(path, [0], layout="CHW")


def test_frames_decoded_counts_the_prefix_less_the_skipped_frames(videos):
    """video_frames_decoded: frames 0 to 10 of a GOP of 12 with B-frames decode fewer than 11
    (non-reference B-frames skipped) and at least the two asked for."""
    path = str(videos / "h264_gop12_bframes.mp4")
    assert 2 <= _stoker.video_frames_decoded(path, [10, 2]) < 11
    assert _stoker.video_frames_decoded(str(videos / "h264_gop1.mp4"), [7, 3]) == 2
