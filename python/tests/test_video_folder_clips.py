"""stoker.VideoFolder(root, frames_per_clip, step_between_clips, frame_rate) (issue 63): a sample
per clip of every video, torchvision's VideoClips enumeration (its Kinetics, UCF101 and HMDB51).
Against torchvision 0.26, which reads a video's frames and rate with torchcodec (no PyAV): its
static VideoClips.compute_clips_for_video(pts, num_frames, step, fps, frame_rate) given each
video's frames and average rate as torchcodec reports them (as its VideoClips passes them), its
VideoClips itself (len, get_clip_location, get_clip), and torchcodec's get_frames_at for each
clip's frames, byte for byte. The videos are bench/make_video_set.py's, made by Debian's
ffmpeg."""
import os
import shutil
import sys

import pytest
import torch

import stoker
from source_contract import check_source_contract
from video_build import needs_video

torchcodec = pytest.importorskip("torchcodec")
from torchcodec.decoders import VideoDecoder  # noqa: E402
from torchvision.datasets.video_utils import VideoClips  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import make_video_set  # noqa: E402

# torchvision warns of each video too short for a clip.
pytestmark = [needs_video, pytest.mark.filterwarnings("ignore:There aren.t enough frames")]

EVERY = ("avi", "mp4", "mkv", "webm")
# Every file whose frames torchcodec decodes as FFmpeg does (test_video_clips.py), in three class
# folders: 50 to 100 frames at 25 fps, one of a variable frame rate (68 frames, 22.7 fps on average).
NAMES = [name for name in make_video_set.names() if name != "mpeg4_gop12_bframes.avi"]
# (frames_per_clip, step_between_clips, frame_rate): the video's own rate; a whole resampling
# step (25 / 12.5 = 2: every other frame); a rate below the video's (25 / 10 = 2.5, float32
# indices floored) and above it (frames repeat); one no video's rate divides; clips longer than
# the 2 s videos (none of theirs).
ENUMERATIONS = [(8, 1, None), (16, 5, None), (4, 3, 12.5), (6, 4, 10), (5, 2, 40),
                (3, 9, 29.97), (60, 7, None)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    made = make_video_set.make_video_set(str(tmp_path_factory.mktemp("made")), NAMES)
    root = tmp_path_factory.mktemp("classes") / "root"
    for i, name in enumerate(NAMES):
        os.makedirs(root / f"class{i % 3}", exist_ok=True)
        shutil.copy(made[name], root / f"class{i % 3}" / name)
    return root


def torchvision_clips(samples, frames, step, frame_rate):
    """[(video index, label, [frame indices])] of every clip, in order:
    compute_clips_for_video of each video's frames (their indices, the pts torchvision's
    VideoClips reads through torchcodec) and average rate, as torchcodec's scan reports them."""
    clips = []
    for r, (path, label) in enumerate(samples):
        metadata = VideoDecoder(path).metadata
        pts = torch.arange(metadata.num_frames)
        video_clips, _ = VideoClips.compute_clips_for_video(pts, frames, step,
                                                            metadata.average_fps, frame_rate)
        clips += [(r, label, clip.tolist()) for clip in video_clips]
    return clips


def videos(root, per_clip, step, rate, **transforms):
    """The folder's clips, `transforms` by field."""
    return stoker.VideoFolder(root, extensions=EVERY, frames_per_clip=per_clip,
                              step_between_clips=step, frame_rate=rate,
                              transforms=transforms or None)


def delivered(source, fields, **options):
    """Each sample's `fields`, in the loader's order (unshuffled unless `options` say)."""
    options.setdefault("shuffle", False)
    samples = []
    for batch in stoker.Loader(source, batch_size=5, **options):
        samples += zip(*(batch[f] for f in fields))
    return samples


@pytest.mark.parametrize("frames,step,frame_rate", ENUMERATIONS)
def test_clips_are_torchvisions(folder, frames, step, frame_rate):
    """len() is the number of clips; sample i is torchvision's clip i, its frames the clip's
    (ClipFrameIndices(sampler="video_clips")) and its label its video's."""
    source = videos(folder, frames, step, frame_rate,
                    frames=stoker.transforms.ClipFrameIndices(sampler="video_clips"))
    want = torchvision_clips(source.samples, frames, step, frame_rate)
    assert len(source) == len(want)
    ours = delivered(source, ["label", "frames"])
    assert [(label, clip) for _, label, clip in want] == \
        [(label.item(), clip.tolist()) for label, clip in ours]
    per_video = [sum(1 for r, _, _ in want if r == v) for v in range(len(source.samples))]
    if frames == 60:  # the 2 s videos give none, the longer ones some
        assert 0 in per_video and max(per_video) > 0
    else:
        assert min(per_video) > 0


def test_the_arithmetic_is_compute_clips_for_videos_over_many_videos():
    """The enumeration alone (_stoker.video_clips, what the source and DecodeClip compute) against
    compute_clips_for_video over 3,000 drawn videos: frame counts, the rates of real videos and
    drawn ones, frame rates below, at and above them (float32 indices floored), short videos."""
    import random
    draw = random.Random(63)
    rates = [23.976023976023978, 24.0, 25.0, 29.97002997002997, 30.0, 50.0, 59.94005994005994,
             60.0, 12.5, 22.727272727272727, 7.0]
    for _ in range(3000):
        count = draw.choice([draw.randrange(0, 40), draw.randrange(0, 3000)])
        fps = draw.choice(rates + [draw.uniform(1, 120)])
        rate = draw.choice([None, None, 1, 5, 7.5, 10, 15, 24, 25, 29.97, 30, 48, 60, 120,
                            fps, fps / 3, draw.uniform(0.5, 200)])
        per_clip, step = draw.randrange(1, 33), draw.randrange(1, 21)
        want, _ = VideoClips.compute_clips_for_video(torch.arange(count), per_clip, step, fps,
                                                     rate)
        ours = stoker._stoker.video_clips(count, fps, per_clip, step, rate or 0.0)
        assert ours == want.tolist(), (count, fps, rate, per_clip, step)


def test_the_count_is_videoclips_own(folder):
    """torchvision's VideoClips itself (torchcodec's metadata) over the same files: its
    num_clips, and each sample's (video, clip) by get_clip_location."""
    source = videos(folder, 6, 4, 10)
    paths = [path for path, _ in source.samples]
    theirs = VideoClips(paths, clip_length_in_frames=6, frames_between_clips=4, frame_rate=10)
    assert len(source) == theirs.num_clips()
    want = torchvision_clips(source.samples, 6, 4, 10)
    for i in range(len(source)):
        video, clip = theirs.get_clip_location(i)
        assert want[i][0] == video
        assert want[i][2] == theirs.resampling_idxs[video][clip].tolist()


@pytest.mark.parametrize("frames,step,frame_rate", [(6, 4, 10), (5, 9, 40), (60, 20, None)])
def test_decoded_clips_are_torchcodecs_frames(folder, frames, step, frame_rate):
    """DecodeClip(sampler="video_clips") at the frames' own size: each clip's frames are
    torchcodec's get_frames_at of torchvision's indices, byte for byte, and VideoClips.get_clip's
    video."""
    clip = stoker.transforms.DecodeClip(sampler="video_clips", capacity=[192, 192])
    source = videos(folder, frames, step, frame_rate, video=clip)
    want = torchvision_clips(source.samples, frames, step, frame_rate)
    ours = delivered(source, ["video"])
    assert len(ours) == len(want) > 0
    paths = [path for path, _ in source.samples]
    theirs = VideoClips(paths, clip_length_in_frames=frames, frames_between_clips=step,
                        frame_rate=frame_rate, output_format="TCHW")
    for i, ((video,), (r, _, indices)) in enumerate(zip(ours, want)):
        frames_of = VideoDecoder(paths[r]).get_frames_at(indices).data
        assert video.dtype == torch.uint8 and torch.equal(video, frames_of), (paths[r], indices)
        if i % 7 == 0:  # get_clip decodes the span and resamples it: slower, checked on some
            assert torch.equal(video, theirs.get_clip(i)[0]), (paths[r], indices)


def test_shuffled_clips_keep_the_source_contract(folder, tmp_path):
    """Shuffled over every clip, dealt to ranks exactly once, a shuffle window of videos, resumed
    mid-epoch exactly (source_contract.py), each clip known by its frames and pixels."""
    root = tmp_path / "three"
    for name in ("h264_gop12_bframes.mp4", "vp9_gop12.webm", "h264_gop250_bframes.mkv"):
        os.makedirs(root / name.split("_")[0], exist_ok=True)
        shutil.copy(next(folder.glob(f"*/{name}")), root / name.split("_")[0] / name)
    source = videos(root, 20, 12, None,
                    video=stoker.transforms.DecodeClip(sampler="video_clips", crop=[16]),
                    frames=stoker.transforms.ClipFrameIndices(sampler="video_clips"))
    count = len(torchvision_clips(source.samples, 20, 12, None))
    assert len(source) == count > 12
    check_source_contract(source, str(tmp_path / "cache"), count=count)


def test_a_shuffled_epoch_holds_every_clip_once(folder):
    source = videos(folder, 16, 5, None,
                    frames=stoker.transforms.ClipFrameIndices(sampler="video_clips"))
    want = sorted((label, clip) for _, label, clip in
                  torchvision_clips(source.samples, 16, 5, None))
    shuffled = [(label.item(), clip.tolist()) for label, clip in
                delivered(source, ["label", "frames"], shuffle=True, seed=4, num_workers=2)]
    assert sorted(shuffled) == want
    assert shuffled != [(label, clip) for _, label, clip in
                        torchvision_clips(source.samples, 16, 5, None)]


def test_bad_arguments_are_one_line_naming_them(folder):
    for kwargs, name in [(dict(frames_per_clip=0), "frames_per_clip 0"),
                         (dict(frames_per_clip=-4), "frames_per_clip -4"),
                         (dict(frames_per_clip=2.5), "frames_per_clip 2.5"),
                         (dict(frames_per_clip=8, step_between_clips=0), "step_between_clips 0"),
                         (dict(frames_per_clip=8, step_between_clips=-1), "step_between_clips -1"),
                         (dict(frames_per_clip=8, frame_rate=0), "frame_rate 0"),
                         (dict(frames_per_clip=8, frame_rate=-5.0), "frame_rate -5.0"),
                         (dict(step_between_clips=3), "give frames_per_clip too")]:
        with pytest.raises(ValueError, match=name) as raised:
            stoker.VideoFolder(folder, **kwargs)
        assert "\n" not in str(raised.value)
    # The native source's own check, for callers that give its parameters directly.
    with pytest.raises(ValueError, match="step_between_clips"):
        stoker._stoker.LoaderCore(str(folder), source="videofolder",
                                  source_params={"frames_per_clip": 4, "step_between_clips": 0})
    # Clips are decoded as the dataset enumerates them, and only where it does.
    with pytest.raises(ValueError, match='sampler="video_clips", not "random"'):
        stoker.Loader(videos(folder, 8, 1, None, video=stoker.transforms.DecodeClip(crop=[16])),
                      batch_size=2)
    # Clips past what an epoch's order can hold in memory (a frame_rate 10^9: some 10^10 clips
    # a video), refused at open in one line.
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    many = videos(folder, 8, 1, 1e9, video=stoker.transforms.DecodeClip(sampler="video_clips",
                                                                          crop=[16]))
    if len(many) * 24 > memory:
        with pytest.raises(ValueError, match=r"root: an epoch of \d+ samples, whose order takes "
                                             r"\d+ bytes, is more than this machine's memory") \
                as raised:
            stoker.Loader(many, batch_size=2)
        assert "\n" not in str(raised.value)
    plain = stoker.VideoFolder(folder, extensions=EVERY, transforms={
        "video": stoker.transforms.DecodeClip(sampler="video_clips", crop=[16])})
    with pytest.raises(ValueError, match="records are a sample each"):
        stoker.Loader(plain, batch_size=2)
