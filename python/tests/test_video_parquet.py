"""Parquet columns of videos (issue 63): stoker.Parquet(paths, video=COLUMN) reads a binary column
of encoded videos (or Hugging Face's struct of bytes and path, its path read where its bytes are
null) as each sample's "video" field,
for stoker.transforms.DecodeClip, as a dataset's or a tar's videos are read; its clips are
torchcodec's and torchvision v2's for the same draws (test_video_clips.py's reference), and a bad
row is named by its file and row. The videos are bench/make_video_set.py's, made here."""
import glob
import os
import shutil

import pytest
import torch

import stoker
from parquet_build import needs_parquet
from source_contract import check_bad_sample_refused, check_source_contract
from test_video_clips import NAMES, SEED, make_video_set, reference
from video_build import needs_video

pytestmark = [needs_video, needs_parquet]
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """{name: path} of the videos test_video_clips.py compares."""
    return make_video_set.make_video_set(str(tmp_path_factory.mktemp("videos")), NAMES)


def write_videos(path, files, struct=False, rows_per_group=4):
    """A Parquet file of the videos `files` (their bytes, or None for a null) in a column "clip"
    (binary, or Hugging Face's struct of bytes and path) and their positions as labels."""
    data = [None if f is None else open(f, "rb").read() for f in files]
    if struct:
        column = pa.array([None if d is None else {"bytes": d, "path": "clip.mp4"} for d in data],
                          pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    else:
        column = pa.array(data, pa.binary())
    pq.write_table(pa.table({"clip": column, "label": pa.array(range(len(files)), pa.int64())}),
                   path, row_group_size=rows_per_group)
    return path


@pytest.mark.parametrize("struct", [False, True])
def test_clips_equal_torchcodec_and_torchvision(videos, tmp_path, struct):
    """The Kinetics training pipeline's steps on every video of the set, a row each."""
    path = write_videos(tmp_path / "videos.parquet", [videos[n] for n in NAMES], struct)
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=8, num_indices_between_frames=2,
                                        resize=[40], crop=[32], flip=0.5)
    source = stoker.Parquet(path, video="clip", transforms={"video": clip})
    loader = stoker.Loader(source, batch_size=3, generator=torch.Generator().manual_seed(SEED),
                           cache_dir=str(tmp_path / "cache"))
    assert len(loader.dataset) == len(NAMES)
    i = 0
    for batch in loader:
        assert set(batch) == {"video", "label"}
        for k, label in enumerate(batch["label"].tolist()):
            assert label == i
            want = reference(videos[NAMES[i]], i, "random", num_clips=1, frames=8, step=2,
                             resize=[40], crop=[32, 32], center=False, flip=0.5)[0]
            assert torch.equal(batch["video"][k], want), NAMES[i]
            i += 1
    assert i == len(NAMES)


def test_a_struct_whose_bytes_are_null_is_read_from_its_path(videos, tmp_path, monkeypatch):
    """Hugging Face's Video struct of files (null bytes, a path): the file at the path, a
    relative one in the Parquet file's folder (not the working directory), an absolute one as
    it is, gives the clips of the same videos' bytes. A path that does not read makes its row a
    bad record, named by its file, row and path."""
    folder = tmp_path / "data"
    folder.mkdir()
    names = NAMES[:4]
    for name in names:
        shutil.copy(videos[name], folder / name)
    paths = [name if i % 2 == 0 else str(folder / name) for i, name in enumerate(names)]
    kind = pa.struct([("bytes", pa.binary()), ("path", pa.string())])

    def write(path, paths):
        column = pa.array([{"bytes": None, "path": p} for p in paths], kind)
        table = pa.table({"clip": column, "label": pa.array(range(len(paths)), pa.int64())})
        pq.write_table(table, path, row_group_size=2)
        return str(path)

    by_path = write(folder / "paths.parquet", paths)
    by_bytes = write_videos(tmp_path / "bytes.parquet", [videos[n] for n in names], True)
    monkeypatch.chdir(tmp_path)
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=4, resize=[24], crop=[16])

    def batches(path, **kwargs):
        loader = stoker.Loader(stoker.Parquet(path, video="clip", transforms={"video": clip}),
                               batch_size=2, cache_dir=str(tmp_path / "cache"),
                               generator=torch.Generator().manual_seed(SEED), **kwargs)
        return list(loader)

    read, want = batches(by_path), batches(by_bytes)
    assert len(read) == len(want) == 2
    for a, b in zip(read, want):
        assert torch.equal(a["label"], b["label"]) and torch.equal(a["video"], b["video"])
    bad = write(folder / "bad.parquet", paths[:3] + ["missing.mp4"])
    with pytest.raises(stoker.Error) as raised:
        batches(bad)
    message = str(raised.value)
    assert message.startswith(f"{bad}: row 3 (row group 1): its video's path 'missing.mp4': "), \
        message
    assert str(folder / "missing.mp4") in message and "\n" not in message, message
    assert [label for b in batches(bad, on_error="skip") for label in b["label"].tolist()] == \
        [0, 1, 2]


def test_bad_rows_are_named_by_file_and_row(videos, tmp_path):
    cache = str(tmp_path / "cache")
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[20], crop=[16])
    good = videos[NAMES[0]]
    null = write_videos(tmp_path / "null.parquet", [good] * 9 + [None] + [good] * 13)
    named = rf"{null}: row 9 \(row group 2\): its video is null \(dataset record 9\)"
    with pytest.raises(stoker.Error, match=named):
        list(stoker.Loader(stoker.Parquet(null, video="clip", transforms={"video": clip}),
                           batch_size=4, cache_dir=cache))
    # Refused whatever is read: for its label alone too.
    check_bad_sample_refused(stoker.Parquet(null, video="clip"), cache, named, left_out="video")
    # A row whose bytes are no video: DecodeClip's error, named by its row.
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"not a video")
    bad = write_videos(tmp_path / "bad.parquet", [good] * 14 + [garbage] + [good] * 8)
    source = stoker.Parquet(bad, video="clip", transforms={"video": clip})
    with pytest.raises(stoker.Error) as raised:
        list(stoker.Loader(source, batch_size=4, cache_dir=cache))
    message = str(raised.value)
    assert message.startswith(f"{bad}: row 14 (row group 3): ") and "\n" not in message, message
    assert "field 'video'" in message and "not a readable video container" in message, message
    skipping = stoker.Loader(source, batch_size=4, cache_dir=cache, on_error="skip")
    assert [label for b in skipping for label in b["label"].tolist()] == \
        [i for i in range(23) if i != 14]
    with pytest.raises(ValueError, match="video must name a column"):
        stoker.Parquet(bad, video="")
    with pytest.raises(ValueError, match=rf"{bad}: no column .movie."):
        stoker.Loader(stoker.Parquet(bad, video="movie"), batch_size=4, cache_dir=cache)
    assert stoker.inspect(stoker.Parquet(bad, video="clip"), cache_dir=cache)["records"] == 23


def test_parquet_of_videos_keeps_the_source_contract(videos, tmp_path):
    # 23 rows of one video: samples told apart by their labels, their clips drawn by sample.
    path = write_videos(tmp_path / "videos.parquet", [videos["h264_gop1.mp4"]] * 23)
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[16], crop=[16])
    cache = str(tmp_path / "cache")
    check_source_contract(stoker.Parquet(path, video="clip", transforms={"video": clip}), cache)
    assert len(glob.glob(os.path.join(cache, "video-indexes", "*", "*.index"))) == 1


def test_cache_gb_bounds_the_videos_indexes(videos, tmp_path):
    """The loader's cache_gb bounds the cache folder's video-indexes/ (the least recently used
    deleted first): after an epoch over every video, it holds at most that, the last kept."""
    path = write_videos(tmp_path / "videos.parquet", [videos[n] for n in NAMES])
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[16], crop=[16])
    cache = tmp_path / "cache"
    loader = stoker.Loader(stoker.Parquet(path, video="clip", transforms={"video": clip}),
                           batch_size=4, cache_dir=str(cache), cache_gb=3e-6)
    assert sum(len(batch["label"]) for batch in loader) == len(NAMES)
    kept = glob.glob(os.path.join(cache, "video-indexes", "*", "*.index"))
    assert kept and sum(os.path.getsize(f) for f in kept) <= 3000
    assert len(kept) < len(NAMES)
