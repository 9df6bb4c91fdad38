"""Video clips through the loader (issue 63): stoker.transforms.DecodeClip on a dataset whose
"video" field holds each file's bytes, against torchcodec 0.17's samplers (their clip starts
given stoker's draws) and torchvision v2's transforms of the Video (given the same crop and
flip), byte for byte in uint8 and within the fused normalisation's bound in float32, over the
files of bench/make_video_set.py (made here by Debian's ffmpeg; nothing is downloaded)."""
import io
import math
import os
import subprocess
import tarfile
import sys

import numpy as np
import pytest
import torch

import stoker
from ffmpeg_frames import ffmpeg_frames
from sample_draws import SampleDraws
from video_build import needs_video

pytestmark = needs_video

torchcodec = pytest.importorskip("torchcodec")
from torchcodec.decoders import VideoDecoder  # noqa: E402
from torchcodec.samplers import (clips_at_random_indices, clips_at_random_timestamps,  # noqa: E402
                                 clips_at_regular_indices, clips_at_regular_timestamps)
from torchvision import tv_tensors  # noqa: E402
from torchvision import transforms as T  # noqa: E402
from torchvision.transforms import v2  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import make_video_set  # noqa: E402

# Every file whose frames torchcodec decodes as FFmpeg does (the rotated one turned upright): not
# the AVI with B-frames, which it counts in decoding order (test_video_decode.py), whose clips
# test_avi_with_b_frames_clips_are_ffmpegs_frames checks against FFmpeg's frames.
AVI_B_FRAMES = "mpeg4_gop12_bframes.avi"
NAMES = [name for name in make_video_set.names() if name != AVI_B_FRAMES]
SEED = 2


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("videos")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_video_set.py"), str(folder)],
                   check=True, stdout=subprocess.DEVNULL)
    dataset = str(tmp_path_factory.mktemp("clips") / "dataset")
    with stoker.DatasetWriter(dataset, {"video": "bytes", "label": "int64"}) as writer:
        for i, name in enumerate(NAMES):
            with open(folder / name, "rb") as f:
                writer.append({"video": f.read(), "label": i})
    return folder, dataset


def loaded(dataset, clip, workers=0, field="video", **settings):
    """Every sample's clip (or `field`'s sample, made by `clip` from the video), in dataset
    order, with the loader's seed SEED."""
    loader = stoker.Loader(stoker.Dataset(dataset, transforms={field: clip}), batch_size=3,
                           num_workers=workers, generator=torch.Generator().manual_seed(SEED),
                           **settings)
    clips, labels = [], []
    for batch in loader:
        clips += list(batch[field])
        labels += batch["label"].tolist()
    assert labels == list(range(len(NAMES)))
    return clips


def sampled(decoder, draws, sampler, num_clips, frames, step, by_time):
    """torchcodec's clips of `sampler` ("random", "regular", "random_timestamps",
    "regular_timestamps"), the random starts given `draws` (stoker's)."""
    if sampler == "regular":
        return clips_at_regular_indices(decoder, num_clips=num_clips, num_frames_per_clip=frames,
                                        num_indices_between_frames=step)
    if sampler == "regular_timestamps":
        return clips_at_regular_timestamps(decoder, num_frames_per_clip=frames, **by_time)
    if sampler == "random":
        span = step * (frames - 1) + 1
        range_end = max(len(decoder) - span + 1, 1)
        starts = torch.tensor([draws.uniform_below(range_end) for _ in range(num_clips)])

        def given(low, high, size):
            assert (low, high, size) == (0, range_end, (num_clips,))
            return starts
        name, call = "randint", lambda: clips_at_random_indices(
            decoder, num_clips=num_clips, num_frames_per_clip=frames,
            num_indices_between_frames=step)
    else:
        units = torch.tensor([draws.next_double() for _ in range(num_clips)], dtype=torch.float64)

        def given(size, dtype):
            assert (size, dtype) == (num_clips, torch.float64)
            return units
        name, call = "rand", lambda: clips_at_random_timestamps(
            decoder, num_clips=num_clips, num_frames_per_clip=frames, **by_time)
    real = getattr(torch, name)
    setattr(torch, name, given)
    try:
        return call()
    finally:
        setattr(torch, name, real)


def reference(path, index, sampler, *, num_clips, frames, step, resize, crop, center, flip,
              mean=None, std=None, **by_time):
    """torchcodec's clips of `path` and torchvision v2's transforms of each, given the draws
    stoker made for dataset index `index` (its clip starts, then the crop's top and left, then
    the flip), [K, T, C, h, w]. `by_time`: the timestamp samplers' arguments."""
    draws = SampleDraws(SEED, 0, index, 0)
    batch = sampled(VideoDecoder(path), draws, sampler, num_clips, frames, step, by_time)
    return transformed(batch.data, draws, resize=resize, crop=crop, center=center, flip=flip,
                       mean=mean, std=std)


def transformed(clips, draws, *, resize, crop, center, flip, mean=None, std=None):
    """torchvision v2's transforms of the uint8 clips [K, T, C, H, W] with the crop's and the
    flip's draws taken from `draws` after the clip starts."""
    video = tv_tensors.Video(clips)
    video = F.resize(video, resize, antialias=True)
    height, width = video.shape[-2:]
    if center:
        video = F.center_crop(video, crop)
    else:
        top = draws.uniform_below(height - crop[0] + 1)
        left = draws.uniform_below(width - crop[1] + 1)
        video = F.crop(video, top, left, crop[0], crop[1])
    if draws.next_double() < flip:
        video = F.horizontal_flip(video)
    if mean is not None:
        video = F.normalize(F.to_dtype(video, torch.float32, scale=True), mean, std)
    return video.as_subclass(torch.Tensor)


def test_random_clips_equal_torchcodec_and_torchvision(videos):
    """The Kinetics training pipeline: a random clip of 8 frames 2 apart, Resize(40) of the
    shorter side, RandomCrop(32), RandomHorizontalFlip; uint8 [T, C, H, W], bit for bit."""
    folder, dataset = videos
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=8, num_indices_between_frames=2,
                                        resize=[40], crop=[32], flip=0.5)
    ours = loaded(dataset, clip)
    flipped = 0
    for i, name in enumerate(NAMES):
        want = reference(str(folder / name), i, "random", num_clips=1, frames=8, step=2,
                         resize=[40], crop=[32, 32], center=False, flip=0.5)[0]
        assert ours[i].shape == want.shape == (8, 3, 32, 32) and ours[i].dtype == torch.uint8
        assert torch.equal(ours[i], want), name
        flipped += not torch.equal(ours[i], reference(
            str(folder / name), i, "random", num_clips=1, frames=8, step=2, resize=[40],
            crop=[32, 32], center=False, flip=0.0)[0])
    assert 0 < flipped < len(NAMES)  # both branches of the flip were taken


def test_each_clip_draws_its_own_crop_and_flip(videos):
    """draws="clip": 3 random clips of a video, each cropped and flipped as v2 transforms that
    clip on its own (the video reference's samples), the draws clip after clip; bit for bit."""
    folder, dataset = videos
    clip = stoker.transforms.DecodeClip(num_clips=3, num_frames_per_clip=4,
                                        num_indices_between_frames=2, resize=[40], crop=[32],
                                        flip=0.5, draws="clip")
    ours = loaded(dataset, clip)
    for i, name in enumerate(NAMES):
        draws = SampleDraws(SEED, 0, i, 0)
        clips = sampled(VideoDecoder(str(folder / name)), draws, "random", 3, 4, 2, {}).data
        want = torch.cat([transformed(clips[k:k + 1], draws, resize=[40], crop=[32, 32],
                                      center=False, flip=0.5) for k in range(3)])
        assert ours[i].shape == want.shape == (3, 4, 3, 32, 32)
        assert torch.equal(ours[i], want), name
    # v2's steps after it draw once for all the clips: not folded into per-clip draws.
    schema = [{"name": "video", "dtype": "bytes"}, {"name": "label", "dtype": "int64"}]
    with pytest.raises(ValueError, match="draws once for all the clips"):
        stoker.transforms.field_specs({"video": v2.Compose(
            [stoker.transforms.DecodeClip(num_clips=2, draws="clip"), v2.Resize(40),
             v2.RandomHorizontalFlip()])}, schema)


@pytest.mark.parametrize("sampler", ["random", "regular"])
def test_avi_with_b_frames_clips_are_ffmpegs_frames(videos, tmp_path, sampler):
    """The AVI with B-frames, whose frames torchcodec's samplers read in decoding order: the
    clips' indices are computed by torchcodec's rules from its frame count and stoker's draws
    (ClipFrameIndices names them), their frames are FFmpeg's decode in order, then v2's
    transforms, bit for bit."""
    folder, _ = videos
    path = str(folder / AVI_B_FRAMES)
    dataset = str(tmp_path / "avi")
    with stoker.DatasetWriter(dataset, {"video": "bytes", "label": "int64"}) as writer:
        writer.append({"video": (folder / AVI_B_FRAMES).read_bytes(), "label": 0})
    sampling = dict(sampler=sampler, num_clips=3, num_frames_per_clip=6,
                    num_indices_between_frames=4)
    center = sampler == "regular"
    clip = stoker.transforms.DecodeClip(**sampling, resize=[40], crop=[32],
                                        crop_mode="center" if center else "random", flip=0.5)
    frames = stoker.transforms.ClipFrameIndices(**sampling)
    loader = stoker.Loader(stoker.Dataset(dataset, transforms={"video": clip, "frames": frames}),
                           batch_size=1, generator=torch.Generator().manual_seed(SEED))
    (batch,) = list(loader)

    index = stoker._stoker.video_index(path)
    range_end = len(index["pts"]) - 4 * (6 - 1)  # the last start whose clip fits, plus 1
    draws = SampleDraws(SEED, 0, 0, 0)
    starts = ([draws.uniform_below(range_end) for _ in range(3)] if sampler == "random" else
              torch.linspace(0, range_end - 1, 3, dtype=torch.int).tolist())
    indices = [start + 4 * t for start in starts for t in range(6)]
    assert batch["frames"][0].flatten().tolist() == indices
    decoded = np.ascontiguousarray(ffmpeg_frames(path, index["width"], index["height"])[indices])
    want = transformed(torch.from_numpy(decoded).view(3, 6, 3, index["height"], index["width"]),
                       draws, resize=[40], crop=[32, 32], center=center, flip=0.5)
    assert batch["video"][0].shape == want.shape == (3, 6, 3, 32, 32)
    assert torch.equal(batch["video"][0], want)


def test_regular_clips_center_crop_channels_first_float(videos):
    """The evaluation pipeline: 3 regular clips of 4 frames, Resize([36, 48]), CenterCrop(29)
    (odd margins: rounded half to even), normalised float32, laid out [K, C, T, H, W]."""
    folder, dataset = videos
    mean, std = [0.43, 0.39, 0.37], [0.22, 0.22, 0.21]
    clip = stoker.transforms.DecodeClip(sampler="regular", num_clips=3, num_frames_per_clip=4,
                                        resize=[36, 48], crop=[29], crop_mode="center",
                                        dtype="float32", mean=mean, std=std, layout="CTHW")
    ours = loaded(dataset, clip)
    for i, name in enumerate(NAMES):
        want = reference(str(folder / name), i, "regular", num_clips=3, frames=4, step=1,
                         resize=[36, 48], crop=[29, 29], center=True, flip=0.0, mean=mean,
                         std=std)
        assert ours[i].shape == (3, 3, 4, 29, 29) and ours[i].dtype == torch.float32
        # v2's ToDtype(float32, scale=True) + Normalize, bit for bit
        torch.testing.assert_close(ours[i], want.permute(0, 2, 1, 3, 4), rtol=0, atol=0)


def test_random_timestamps_equal_torchcodec(videos):
    """clips_at_random_timestamps: 2 clips of 5 frames 0.13 s apart (frames repeat or skip
    where that is not the frame rate), from torch.rand's draws given stoker's."""
    folder, dataset = videos
    clip = stoker.transforms.DecodeClip(sampler="random_timestamps", num_clips=2,
                                        num_frames_per_clip=5, seconds_between_frames=0.13,
                                        resize=[40], crop=[32], flip=0.5)
    ours = loaded(dataset, clip)
    for i, name in enumerate(NAMES):
        want = reference(str(folder / name), i, "random_timestamps", num_clips=2, frames=5,
                         step=1, resize=[40], crop=[32, 32], center=False, flip=0.5,
                         seconds_between_frames=0.13)
        assert ours[i].shape == want.shape == (2, 5, 3, 32, 32)
        assert torch.equal(ours[i], want), name


def test_regular_timestamps_give_as_many_clips_as_fit(videos):
    """clips_at_regular_timestamps: a clip every 0.7 s, or every 0.08 s (many starts on a
    frame's first instant, where torch.arange's rounding decides the frame), as many as fit each
    video (a list of [K, T, C, H, W], K up to num_clips), the default frame spacing
    (1 / average fps)."""
    folder, dataset = videos
    counts = set()
    for between in (0.7, 0.08):
        clip = stoker.transforms.DecodeClip(
            sampler="regular_timestamps", num_clips=64, num_frames_per_clip=3,
            seconds_between_clip_starts=between, resize=[30, 40], crop=[24], crop_mode="center")
        ours = loaded(dataset, clip)
        for i, name in enumerate(NAMES):
            want = reference(str(folder / name), i, "regular_timestamps", num_clips=0, frames=3,
                             step=1, resize=[30, 40], crop=[24, 24], center=True, flip=0.0,
                             seconds_between_clip_starts=between)
            assert torch.equal(ours[i], want), (between, name)
            counts.add(want.shape[0])
    assert len(counts) > 2  # the videos' lengths give different numbers of clips


def test_timestamp_ranges_and_policies_equal_torchcodec(videos):
    """A range in seconds (its end past the video: cut to it) and clips run past the end,
    wrapped or repeating their last frame, as torchcodec's policies fill them."""
    folder, dataset = videos
    for policy in ("wrap", "repeat_last"):
        by_time = dict(seconds_between_frames=0.45, sampling_range_start=0.3,
                       sampling_range_end=10.0, policy=policy)
        clip = stoker.transforms.DecodeClip(
            sampler="random_timestamps", num_clips=3, num_frames_per_clip=6,
            seconds_between_frames=0.45, sampling_range_start_seconds=[0.3],
            sampling_range_end_seconds=[10.0], policy=policy, resize=[24], crop=[20])
        ours = loaded(dataset, clip)
        for i, name in enumerate(NAMES):
            want = reference(str(folder / name), i, "random_timestamps", num_clips=3, frames=6,
                             step=1, resize=[24], crop=[20, 20], center=False, flip=0.0,
                             **by_time)
            assert torch.equal(ours[i], want), (policy, name)


def test_timestamp_sampler_errors_are_one_line(videos):
    _, dataset = videos
    with pytest.raises(ValueError, match="seconds_between_clip_starts"):
        loaded(dataset, stoker.transforms.DecodeClip(sampler="regular_timestamps", crop=[16]))
    too_many = stoker.transforms.DecodeClip(sampler="regular_timestamps", num_clips=2,
                                            seconds_between_clip_starts=0.5, crop=[16])
    with pytest.raises(Exception) as raised:
        loaded(dataset, too_many)
    message = str(raised.value)
    assert "more than num_clips 2" in message and "record 0" in message, message
    assert "\n" not in message
    late = stoker.transforms.DecodeClip(sampler="random_timestamps", crop=[16],
                                        sampling_range_start_seconds=[99.0])
    with pytest.raises(Exception, match="sampling_range_start_seconds 99 is outside"):
        loaded(dataset, late)


@pytest.mark.parametrize("workers", [0, 2])
def test_stats_count_the_frames_decoded_and_delivered(videos, workers):
    """The loader's stats: the frames the clips delivered hold, and those their decoding cost
    (each file's decode of those frames from its keyframes, less the skipped); the next epoch's
    batches built ahead are not counted."""
    folder, dataset = videos
    clip = stoker.transforms.DecodeClip(sampler="regular", num_clips=2, num_frames_per_clip=4,
                                        num_indices_between_frames=3, crop=[16])
    loader = stoker.Loader(stoker.Dataset(dataset, transforms={"video": clip}), batch_size=3,
                           num_workers=workers)
    assert sum(len(batch["video"]) for batch in loader) == len(NAMES)
    decoded = []
    for name in NAMES:
        path = str(folder / name)
        batch = clips_at_regular_indices(VideoDecoder(path), num_clips=2, num_frames_per_clip=4,
                                         num_indices_between_frames=3)
        frames = frame_indices(path, batch.pts_seconds)
        decoded.append(stoker._stoker.video_frames_decoded(path, frames))
    stats = loader.stats()
    assert stats["video_frames_delivered"] == len(NAMES) * 2 * 4
    assert stats["video_frames_decoded"] == sum(decoded)


def frame_indices(path, pts_seconds):
    """The frames of `path` shown at torchcodec's `pts_seconds` (a FrameBatch's)."""
    index = stoker._stoker.video_index(path)
    (num, den), pts = index["time_base"], index["pts"]
    return [min(range(len(pts)), key=lambda i: abs(pts[i] * num / den - t))
            for t in pts_seconds.flatten().tolist()]


@pytest.mark.parametrize("sampler,sampling", [
    ("random", dict(num_clips=2, num_frames_per_clip=4, num_indices_between_frames=3)),
    ("random_timestamps", dict(num_clips=3, num_frames_per_clip=5, seconds_between_frames=0.3)),
    ("regular_timestamps", dict(num_clips=9, num_frames_per_clip=2,
                                seconds_between_clip_starts=0.45))])
def test_clip_frame_indices_name_the_frames_of_the_clips(videos, sampler, sampling):
    """ClipFrameIndices beside a DecodeClip of the same sampling: the frames its clips hold,
    torchcodec's for the same draws, [K, T] (a list for regular timestamps)."""
    folder, dataset = videos
    clip = stoker.transforms.DecodeClip(sampler=sampler, **sampling, crop=[16])
    frames = stoker.transforms.ClipFrameIndices(sampler=sampler, **sampling)
    loader = stoker.Loader(stoker.Dataset(dataset, transforms={"video": clip, "frames": frames}),
                           batch_size=4, generator=torch.Generator().manual_seed(SEED))
    ours = [f for batch in loader for f in batch["frames"]]
    by_time = {k: v for k, v in sampling.items() if "seconds" in k}
    for i, name in enumerate(NAMES):
        draws = SampleDraws(SEED, 0, i, 0)
        batch = sampled(VideoDecoder(str(folder / name)), draws, sampler,
                        sampling["num_clips"], sampling["num_frames_per_clip"],
                        sampling.get("num_indices_between_frames", 1), by_time)
        want = frame_indices(str(folder / name), batch.pts_seconds)
        assert ours[i].dtype == torch.int64 and ours[i].shape == batch.pts_seconds.shape, name
        assert ours[i].flatten().tolist() == want, name


def test_clip_frame_indices_read_a_stored_video_field(videos):
    _, dataset = videos
    frames = stoker.transforms.ClipFrameIndices(video="label", num_frames_per_clip=2)
    with pytest.raises(ValueError, match="clip_frame_indices reads 'label', which is no stored"):
        stoker.Loader(stoker.Dataset(dataset, transforms={"frames": frames}), batch_size=2)


def random_resized_box(draws, width, height, scale, ratio):
    """image/crop_sampler.h's RandomResizedCrop draws (torchvision's get_params, stoker's
    uniforms): (top, left, h, w)."""
    log_low, log_high = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        area = width * height * (scale[0] + (scale[1] - scale[0]) * draws.next_double())
        aspect = math.exp(log_low + (log_high - log_low) * draws.next_double())
        w, h = round(math.sqrt(area * aspect)), round(math.sqrt(area / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = draws.uniform_below(height - h + 1)
            return top, draws.uniform_below(width - w + 1), h, w
    w, h = width, height
    if width / height < ratio[0]:
        h = round(width / ratio[0])
    elif width / height > ratio[1]:
        w = round(height * ratio[1])
    return (height - h) // 2, (width - w) // 2, h, w


def test_random_resized_crop_folds_into_the_clip(videos):
    """v2's RandomResizedCrop(24, scale, ratio) and RandomHorizontalFlip after DecodeClip: one
    box for the whole clip, cut from each frame and resized with the antialiased kernel, equal
    to F.resized_crop's for the same draws."""
    folder, dataset = videos
    scale, ratio = (0.2, 0.9), (0.6, 1.5)
    clip = v2.Compose([stoker.transforms.DecodeClip(num_frames_per_clip=6),
                       v2.RandomResizedCrop(24, scale=scale, ratio=ratio),
                       v2.RandomHorizontalFlip()])
    ours = loaded(dataset, clip)
    for i, name in enumerate(NAMES):
        draws = SampleDraws(SEED, 0, i, 0)
        frames = sampled(VideoDecoder(str(folder / name)), draws, "random", 1, 6, 1, {}).data
        box = random_resized_box(draws, frames.shape[-1], frames.shape[-2], scale, ratio)
        want = F.resized_crop(tv_tensors.Video(frames), *box, [24, 24], antialias=True)
        if draws.next_double() < 0.5:
            want = F.horizontal_flip(want)
        assert ours[i].shape == (6, 3, 24, 24)
        assert torch.equal(ours[i], want[0].as_subclass(torch.Tensor)), name


class TimeReversed:
    """A user's step on a clip tensor: its frames in reverse order."""

    def __call__(self, clip):
        return clip.flip(0)


def test_steps_that_do_not_fold_run_in_python_on_the_native_clip(videos):
    """From the first step that does not fold (a user's callable; a Gaussian blur; a
    RandomResizedCrop after a Resize) the steps run in Python on the native clip tensor, as they
    would on torchcodec's, and the plan says why."""
    _, dataset = videos
    native = [stoker.transforms.DecodeClip(num_frames_per_clip=4), v2.Resize(36), v2.CenterCrop(30)]
    tail = [TimeReversed(), v2.GaussianBlur(3, sigma=1.0), v2.RandomHorizontalFlip(p=0.0)]
    made = stoker.Loader(stoker.Dataset(dataset, transforms={"video": v2.Compose(native + tail)}),
                         batch_size=3, generator=torch.Generator().manual_seed(SEED))
    assert [where for _, where in made.plan["video"]] == ["native"] + ["python"] * 3
    assert "TimeReversed" in made.plan["notes"]["video"][0]
    ours = [clip for batch in made for clip in batch["video"]]
    for clip, want in zip(ours, loaded(dataset, v2.Compose(native))):
        assert torch.equal(clip, F.gaussian_blur(want.flip(0), [3, 3], [1.0, 1.0]))
    schema = [{"name": "video", "dtype": "bytes"}, {"name": "label", "dtype": "int64"}]
    with pytest.raises(ValueError, match="no Resize before it"):  # every step native
        stoker.transforms.field_specs({"video": v2.Compose(
            [stoker.transforms.DecodeClip(), v2.Resize(40), v2.RandomResizedCrop(24)])}, schema)


def test_folded_float_steps_are_torchvisions_bit_for_bit(videos):
    """v1's ConvertImageDtype divides by 255, v2's ToDtype and ConvertImageDtype multiply by
    1 / 255 (the two differ by an ulp for half of the values): each folded into the clip gives
    torchvision's own steps' float32 values on the native uint8 clip, with Normalize and without,
    and before a step that runs in Python."""
    _, dataset = videos
    mean, std = [0.43, 0.39, 0.37], [0.22, 0.22, 0.21]
    decode = stoker.transforms.DecodeClip(num_frames_per_clip=3, resize=[30], crop=[24],
                                          crop_mode="center")
    clips = loaded(dataset, decode)
    for module, convert in ((T, T.ConvertImageDtype(torch.float32)),
                            (v2, v2.ToDtype(torch.float32, scale=True)),
                            (v2, v2.ConvertImageDtype(torch.float32))):
        for steps in ([convert], [convert, module.Normalize(mean, std)],
                      [convert, module.Normalize(mean, std), TimeReversed()]):
            made = stoker.Loader(stoker.Dataset(dataset, transforms={
                "video": v2.Compose([decode, *steps])}), batch_size=3)
            python = isinstance(steps[-1], TimeReversed)  # it alone runs in Python
            assert [where for _, where in made.plan["video"]] == ["native"] + ["python"] * python
            ours = loaded(dataset, v2.Compose([decode, *steps]))
            for got, clip in zip(ours, clips):
                want = module.Compose(steps)(clip)
                assert got.dtype == torch.float32 and torch.equal(got, want), (convert, steps)
    divided = loaded(dataset, v2.Compose([decode, T.ConvertImageDtype(torch.float32)]))
    multiplied = loaded(dataset, v2.Compose([decode, v2.ToDtype(torch.float32, scale=True)]))
    assert not all(torch.equal(a, b) for a, b in zip(divided, multiplied))


def test_uniform_temporal_subsample_picks_torchvisions_frames(videos):
    """v2.UniformTemporalSubsample(n) among a clip's steps (before or after the others): the
    frames torchvision's picks of the decoded clip (float32 linspace positions truncated, not
    rounded), n below and above the clip's length; ClipFrameIndices(subsample=n) names them."""
    folder, dataset = videos
    for frames, n in ((16, 5), (13, 7), (7, 9)):
        clip = v2.Compose([stoker.transforms.DecodeClip(num_frames_per_clip=frames),
                           v2.Resize(30), v2.UniformTemporalSubsample(n), v2.CenterCrop(24)])
        ours = loaded(dataset, clip)
        indices = loaded(dataset, stoker.transforms.ClipFrameIndices(
            num_frames_per_clip=frames, subsample=n), field="frames")
        for i, name in enumerate(NAMES):
            decoded = sampled(VideoDecoder(str(folder / name)), SampleDraws(SEED, 0, i, 0),
                              "random", 1, frames, 1, {})
            video = F.uniform_temporal_subsample(tv_tensors.Video(decoded.data[0]), n)
            want = F.center_crop(F.resize(video, [30], antialias=True), [24])
            assert torch.equal(ours[i], want.as_subclass(torch.Tensor)), (frames, n, name)
            picked = torch.linspace(0, frames - 1, n).long()
            want_indices = frame_indices(str(folder / name), decoded.pts_seconds[0][picked])
            assert indices[i].tolist() == want_indices, (frames, n, name)


def test_clips_of_their_frames_own_size_feed_the_reference_preset_in_python(videos):
    """DecodeClip(capacity=[h, w]) without a crop: each clip at its frames' own size, a list of
    torchcodec's frames; torchvision's video classification reference preset after it
    (ConvertImageDtype, Resize without antialias, Normalize, CenterCrop, channels first) runs
    in Python on them, equal to the preset on torchcodec's clip. A frame over the capacity is
    one line naming it."""
    folder, dataset = videos
    mean, std = [0.43216, 0.394666, 0.37645], [0.22803, 0.22145, 0.216989]
    own = stoker.transforms.DecodeClip(num_frames_per_clip=3, num_indices_between_frames=2,
                                       capacity=[128, 192])
    preset = T.Compose([T.ConvertImageDtype(torch.float32), T.Resize((32, 40), antialias=False),
                        T.Normalize(mean, std), T.CenterCrop((28, 28)), ChannelsFirst()])
    ours = loaded(dataset, own)
    presets = loaded(dataset, T.Compose([own, preset]))
    for i, name in enumerate(NAMES):
        clip = sampled(VideoDecoder(str(folder / name)), SampleDraws(SEED, 0, i, 0), "random", 1,
                       3, 2, {}).data[0]
        assert torch.equal(ours[i], clip), name
        assert torch.equal(presets[i], preset(clip)), name
    # Several clips of their own size: [K, T, C, H, W], within the slot the capacity sizes.
    several = loaded(dataset, stoker.transforms.DecodeClip(
        sampler="regular", num_clips=3, num_frames_per_clip=2, capacity=[128, 192]))
    for i, name in enumerate(NAMES):
        want = clips_at_regular_indices(VideoDecoder(str(folder / name)), num_clips=3,
                                        num_frames_per_clip=2).data
        assert several[i].shape == want.shape and torch.equal(several[i], want), name
    small = stoker.transforms.DecodeClip(num_frames_per_clip=2, capacity=[100, 100])
    with pytest.raises(Exception, match=r"frames are larger than capacity \[100, 100\]"):
        loaded(dataset, small)


class ChannelsFirst:
    """The reference's ConvertBCHWtoCBHW: [T, C, H, W] to [C, T, H, W]."""

    def __call__(self, clip):
        return clip.permute(1, 0, 2, 3)


def test_tars_of_videos_give_the_same_clips(tmp_path, videos):
    """WebDataset tars of `KEY.mp4` (any video) + `KEY.cls` members, read in place: each
    sample's clip is the stoker dataset's of the same file."""
    folder, dataset = videos
    with tarfile.open(tmp_path / "videos-000000.tar", "w") as tar:
        for i, name in enumerate(NAMES):
            tar.add(folder / name, arcname=f"{i:04d}.mp4")
            label = str(i).encode()
            info = tarfile.TarInfo(f"{i:04d}.cls")
            info.size = len(label)
            tar.addfile(info, io.BytesIO(label))
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=4, num_indices_between_frames=3,
                                        resize=[30], crop=[24], flip=0.5)
    loader = stoker.Loader(stoker.WebDataset(str(tmp_path / "videos-000000.tar"),
                                             transforms={"mp4": clip}),
                           batch_size=3, generator=torch.Generator().manual_seed(SEED))
    clips, labels = [], []
    for batch in loader:
        assert set(batch) == {"mp4", "label"}
        clips += list(batch["mp4"])
        labels += batch["label"].tolist()
    assert labels == list(range(len(NAMES)))
    assert all(torch.equal(a, b) for a, b in zip(clips, loaded(dataset, clip)))


def test_a_video_opened_again_gives_the_same_clips(tmp_path, videos):
    """Each file twice in a row: the second record opens as the first found it (its stream and
    index kept by the worker, not read again) and its clips are torchcodec's and torchvision's
    too, for draws of its own."""
    folder, _ = videos
    dataset = str(tmp_path / "twice")
    with stoker.DatasetWriter(dataset, {"video": "bytes", "label": "int64"}) as writer:
        for i, name in enumerate(NAMES):
            with open(folder / name, "rb") as f:
                data = f.read()
            writer.append({"video": data, "label": 2 * i})
            writer.append({"video": data, "label": 2 * i + 1})
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=8, num_indices_between_frames=2,
                                        resize=[40], crop=[32], flip=0.5)
    loader = stoker.Loader(stoker.Dataset(dataset, transforms={"video": clip}), batch_size=2,
                           generator=torch.Generator().manual_seed(SEED))
    for i, batch in enumerate(loader):
        assert batch["label"].tolist() == [2 * i, 2 * i + 1]
        for k in range(2):
            want = reference(str(folder / NAMES[i]), 2 * i + k, "random", num_clips=1, frames=8,
                             step=2, resize=[40], crop=[32, 32], center=False, flip=0.5)[0]
            assert torch.equal(batch["video"][k], want), (NAMES[i], k)


def test_clips_do_not_depend_on_workers(videos):
    _, dataset = videos
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=4, num_indices_between_frames=3,
                                        resize=[30], crop=[24, 28], flip=0.5)
    one = loaded(dataset, clip, workers=0)
    two = loaded(dataset, clip, workers=2)
    assert all(torch.equal(a, b) for a, b in zip(one, two))


def test_bad_videos_are_one_line_errors_naming_the_record(tmp_path, videos):
    folder, _ = videos
    dataset = str(tmp_path / "bad")
    with open(folder / "h264_gop12_bframes.mp4", "rb") as f:
        good = f.read()
    with stoker.DatasetWriter(dataset, {"video": "bytes", "label": "int64"}) as writer:
        writer.append({"video": good, "label": 0})
        writer.append({"video": good[: len(good) // 2], "label": 1})  # its moov is cut off
        writer.append({"video": b"not a video", "label": 2})
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[20], crop=[16])
    with pytest.raises(Exception) as raised:
        list(stoker.Loader(stoker.Dataset(dataset, transforms={"video": clip}), batch_size=3))
    message = str(raised.value)
    assert "field 'video'" in message and "record 1" in message and "\n" not in message, message
    skipping = stoker.Loader(stoker.Dataset(dataset, transforms={"video": clip}), batch_size=3,
                             on_error="skip")
    assert [b["label"].tolist() for b in skipping] == [[0]]


def test_clip_parameters_are_checked(videos):
    _, dataset = videos
    with pytest.raises(ValueError, match="num_frames_per_clip"):
        stoker.transforms.DecodeClip(num_frames_per_clip=0)
    with pytest.raises(ValueError, match="fixed size"):
        loaded(dataset, stoker.transforms.DecodeClip(resize=[32]))
    crop_too_large = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[20], crop=[64])
    with pytest.raises(Exception, match="larger than its frames resized"):
        loaded(dataset, crop_too_large)
    # Steps that do not fold are each one line where every step must be native (in a Loader
    # they run in Python: test_steps_that_do_not_fold_run_in_python_on_the_native_clip).
    schema = [{"name": "video", "dtype": "bytes"}, {"name": "label", "dtype": "int64"}]
    for match, steps in [
            ("cannot follow DecodeClip", [stoker.transforms.DecodeClip(crop=[16]), v2.Grayscale()]),
            ("in torchvision's order", [stoker.transforms.DecodeClip(), v2.RandomCrop(16),
                                        v2.Resize(20)]),
            ("antialias=True", [stoker.transforms.DecodeClip(), v2.Resize(20, antialias=False),
                                v2.CenterCrop(16)]),
            ("before it", [stoker.transforms.DecodeClip(crop=[16]),
                           v2.Normalize([0.5] * 3, [0.2] * 3)])]:
        with pytest.raises(ValueError, match=match):
            stoker.transforms.field_specs({"video": v2.Compose(steps)}, schema)


def test_torchvisions_steps_fold_into_the_clip(videos):
    """DecodeClip's sampling followed by torchvision v2's own steps, as a user writes them: the
    same clips as DecodeClip's parameters give."""
    _, dataset = videos
    mean, std = [0.45, 0.4, 0.38], [0.23, 0.22, 0.21]
    written = v2.Compose([
        stoker.transforms.DecodeClip(num_frames_per_clip=4, num_indices_between_frames=2),
        v2.Resize(30), v2.RandomCrop(24), v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])
    fused = stoker.transforms.DecodeClip(num_frames_per_clip=4, num_indices_between_frames=2,
                                         resize=[30], crop=[24], flip=0.5, dtype="float32",
                                         mean=mean, std=std)
    assert all(torch.equal(a, b) for a, b in zip(loaded(dataset, written),
                                                 loaded(dataset, fused)))
    center = v2.Compose([stoker.transforms.DecodeClip(num_frames_per_clip=2),
                         v2.Resize((30, 40)), v2.CenterCrop((20, 30))])
    clips = loaded(dataset, center)
    assert clips[0].shape == (2, 3, 20, 30) and clips[0].dtype == torch.uint8
