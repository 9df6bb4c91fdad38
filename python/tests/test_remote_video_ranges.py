"""A remote video folder's videos read by ranges (issue 63, point 5): over nginx on loopback, a
clip of a long mp4 (GOP 12, B-frames) costs the server well under the file (nginx's own count of
the bytes it sent) at the first open (the index from the header's sample tables), nothing once
its blocks are in the cache (a later run, another process; two processes at once share it), and
equals the local folder's clip byte for byte; blocks torn in the cache (a crash) are fetched
again; a cache below the folder stays within its budget;
a file changed after the listing (its ETag), after its blocks were cached too, or a server
failing mid-read is one line naming the URL (and the frame), which on_error="skip" drops, and a
later listing reads the changed file's frames, not the cached blocks; Ctrl-C while a range
read stalls stops the loader at once, with 0 workers or 1; clips_per_video at a URL gives
the local folder's batches. RawBytes (and a Python step after it) gets each file's bytes, over
HTTP and S3, through the cache; above its max_length, or changed on the server, one line naming
the URL.
(test_remote_video_folder.py: several codecs and containers, HTTP and S3,
0 and 2 workers, equal to the local folder's clips.)"""
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

import stoker
from fault_proxies import proxy_log
from video_build import needs_video

pytestmark = needs_video


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Class folders: a/long.mp4 (20 s of 320x240 noise, GOP 12, 3 B-frames: about 4.5 MB,
    its header at the end) and b/short.mp4 (1 s)."""
    root = tmp_path_factory.mktemp("videos") / "root"
    for name, seconds in (("a/long.mp4", 20), ("b/short.mp4", 1)):
        os.makedirs(root / os.path.dirname(name))
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                        "testsrc2=size=320x240:rate=25", "-t", str(seconds), "-vf",
                        "noise=alls=12:allf=t", "-c:v", "libx264", "-preset", "veryfast", "-g",
                        "12", "-bf", "3", "-pix_fmt", "yuv420p", str(root / name)], check=True)
    return root


@pytest.fixture
def served(folder, nginx_server):
    shutil.copytree(folder, nginx_server.root / "videos")
    return nginx_server


def loader(source, cache, on_error="raise", **options):
    """`options`: DecodeClip's (its sampling range) and the Loader's (cache_gb). The clip is
    each epoch's same one (regular indices), so that what a loader reads ahead of the next epoch
    it has read already: a read ahead cut short by the loader's end costs a later run nothing."""
    sampling = {k: options.pop(k) for k in list(options) if k.startswith("sampling_range")}
    clip = stoker.transforms.DecodeClip(sampler="regular", num_frames_per_clip=6,
                                        num_indices_between_frames=2, resize=[40], crop=[32],
                                        **sampling)
    return stoker.Loader(stoker.VideoFolder(source), batch_size=1, shuffle=False,
                         cache_dir=cache, on_error=on_error, transforms={"video": clip},
                         **options)


def clips(source, cache, on_error="raise", **options):
    return [batch["video"][0] for batch in loader(source, cache, on_error, **options)]


def bytes_sent(server, name=r"\S+\.mp4"):
    """What nginx sent for GETs of `name` (a pattern; by default every video) since its log was
    last emptied, and the opens of it (the GETs of its first bytes)."""
    log = (server.root.parent / "nginx" / "access.log").read_text()
    gets = re.findall(rf"^GET \S*/{name} \d+ range=(\S*) .* sent=(\d+)$", log, re.M)
    return sum(int(sent) for _, sent in gets), sum(r.startswith("bytes=0-") for r, _ in gets)


def empty_log(server):
    (server.root.parent / "nginx" / "access.log").write_text("")


@pytest.mark.parametrize("index", ["_index", "_index_json"])
def test_a_clip_of_a_long_video_costs_its_header_and_gops(folder, served, tmp_path, index):
    url = f"{served.url}/{index}/videos/"
    size = os.path.getsize(folder / "a/long.mp4")
    want = clips(folder, tmp_path / "local")
    empty_log(served)
    assert all(torch.equal(a, b) for a, b in zip(clips(url, tmp_path / "cache"), want, strict=True))
    sent, opens = bytes_sent(served, "long.mp4")
    # Its open: the header's first block and the index at the end, then the clip's GOPs (about
    # 0.6 MB of 4.5).
    assert opens == 1 and 0 < sent < size / 5, (sent, opens, size)
    # A later epoch: every block it reads is in the cache.
    empty_log(served)
    assert all(torch.equal(a, b) for a, b in zip(clips(url, tmp_path / "cache"), want, strict=True))
    assert bytes_sent(served) == (0, 0)


def cached_bytes(cache):
    """The bytes of the remote cache's objects and downloads (its budget's), and how many."""
    files = [p for part in cache.iterdir() if part.is_dir()
             for sub in ("shards", "tmp") if (part / sub).is_dir() for p in (part / sub).iterdir()]
    return sum(p.stat().st_size for p in files), len(files)


def test_torn_blocks_in_the_cache_are_fetched_again(folder, served, tmp_path):
    """The cache keeps a video's blocks without an fsync, each ending with its XXH3
    (cache/shard_cache.h): blocks a crash left torn (zeros: their bytes never reached the disk)
    are found by the next run, removed and fetched again, and its clips are the local folder's
    byte for byte; the run after reads them from the cache."""
    url = f"{served.url}/_index/videos/"
    want = clips(folder, tmp_path / "local")
    cache = tmp_path / "cache"
    assert all(torch.equal(a, b) for a, b in zip(clips(url, cache), want, strict=True))
    blocks = list(cache.rglob("long.mp4@*"))
    assert blocks
    for block in blocks:
        block.write_bytes(bytes(block.stat().st_size))
    empty_log(served)
    assert all(torch.equal(a, b) for a, b in zip(clips(url, cache), want, strict=True))
    sent, _ = bytes_sent(served, "long.mp4")
    assert 0 < sent <= len(blocks) * 65536, (sent, len(blocks))
    empty_log(served)
    assert all(torch.equal(a, b) for a, b in zip(clips(url, cache), want, strict=True))
    assert bytes_sent(served) == (0, 0)


def test_a_cache_below_the_folder_stays_within_its_budget(folder, served, tmp_path):
    url = f"{served.url}/_index_json/videos/"
    want = clips(folder, tmp_path / "local")
    budget = 300_000  # 4 blocks of 64 KiB; a clip of the long video reads about ten
    for run in range(2):
        got = clips(url, tmp_path / "cache", cache_gb=budget / 1e9)
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True)), run
        held, blocks = cached_bytes(tmp_path / "cache")
        assert 0 < held <= budget and blocks > 1, (run, held, blocks)


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    """Another video (1 s of colour bars: none of the folder's frames)."""
    path = tmp_path_factory.mktemp("other") / "other.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                    "smptebars=size=320x240:rate=25", "-t", "1", "-c:v", "libx264", "-g", "12",
                    "-pix_fmt", "yuv420p", str(path)], check=True)
    return path.read_bytes()


def replace_long(root, other):
    """a/long.mp4 becomes `other` padded to its size (an mp4 `free` box), a second later: other
    frames, the same size, another ETag (nginx's: the time and size)."""
    long = root / "a/long.mp4"
    pad = long.stat().st_size - len(other)
    stat = long.stat()
    long.write_bytes(other + pad.to_bytes(4, "big") + b"free" + bytes(pad - 8))
    os.utime(long, (stat.st_atime, stat.st_mtime + 10))


def test_a_file_changed_after_its_blocks_were_cached(folder, other, served, tmp_path):
    url = f"{served.url}/_index/videos/"
    cache = tmp_path / "cache"
    clips(url, cache, sampling_range_end=20)  # the long video's first GOPs cached
    listed = loader(url, cache, sampling_range_start=-20)  # listed before the change
    replace_long(served.root / "videos", other)
    # Its index and first block are cached, its last GOPs not: asked of the server, changed.
    with pytest.raises(stoker.Error) as raised:
        list(listed)
    message = str(raised.value)
    assert message.startswith(f"{url}a/long.mp4: ") and "\n" not in message, message
    assert "changed on the server" in message, message
    # Listed again: the changed file's frames, none of the blocks cached before.
    local = tmp_path / "local"
    shutil.copytree(folder, local)
    replace_long(local, other)
    want = clips(local, tmp_path / "local-cache", sampling_range_end=20)
    got = clips(url, cache, sampling_range_end=20)
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


CHILD = """
import sys, torch
sys.path.insert(0, sys.argv[1])
from test_remote_video_ranges import clips
torch.save(clips(sys.argv[2], sys.argv[3]), sys.argv[4])
"""


def test_two_processes_share_the_cache(folder, served, tmp_path):
    url = f"{served.url}/_index_json/videos/"
    want = clips(folder, tmp_path / "local")
    empty_log(served)
    children = [subprocess.Popen([sys.executable, "-c", CHILD, os.path.dirname(__file__), url,
                                  str(tmp_path / "cache"), str(tmp_path / f"clips{i}.pt")])
                for i in range(2)]
    assert [child.wait(timeout=300) for child in children] == [0, 0]
    for i in range(2):
        got = torch.load(tmp_path / f"clips{i}.pt")
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True)), i
    # Each block was fetched once, by one of them.
    log = (served.root.parent / "nginx" / "access.log").read_text()
    ranges = re.findall(r"^GET \S*/(\S+\.mp4) \d+ range=(\S*) ", log, re.M)
    assert ranges and len(set(ranges)) == len(ranges), ranges
    empty_log(served)
    clips(url, tmp_path / "cache")
    assert bytes_sent(served) == (0, 0)


def change_long_in_place(served):
    """a/long.mp4 on the server: the same size, other bytes and time (nginx's ETag, its time and
    size, changes)."""
    path = served.root / "videos/a/long.mp4"
    stat = path.stat()
    path.write_bytes(path.read_bytes()[::-1])
    os.utime(path, (stat.st_atime, stat.st_mtime + 10))


def expect_changed(batches, url):
    """Iterating `batches` raises one line naming a/long.mp4's URL, changed on the server."""
    with pytest.raises(stoker.Error) as raised:
        list(batches)
    message = str(raised.value)
    assert message.startswith(f"{url}a/long.mp4: ") and "\n" not in message, message
    assert "changed on the server" in message, message


def test_a_file_changed_after_listing_is_one_line_naming_its_url(folder, served, tmp_path):
    url = f"{served.url}/_index/videos/"  # sizes and ETags asked by HEAD
    failing, skipping = loader(url, tmp_path / "cache"), loader(url, tmp_path / "cache", "skip")
    change_long_in_place(served)
    expect_changed(failing, url)
    assert sum(len(batch["label"]) for batch in skipping) == 1


def set_script(proxy, script):
    connection = http.client.HTTPConnection(proxy, timeout=10)
    try:
        connection.request("PUT", "/__fault_proxy__/script", json.dumps(script))
        assert connection.getresponse().status in (200, 204)
    finally:
        connection.close()


def test_a_server_failing_mid_read_is_one_line_naming_the_frame(folder, served, fault_proxy,
                                                                tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_RETRY_SECONDS", "1")
    proxy = fault_proxy(served.url.removeprefix("http://"))
    url = f"http://{proxy}/_index_json/videos/"
    # The first open's three blocks (its start, the index at its end, the first packets') read;
    # the clip's GOPs' fail (none cached: each run a fresh cache).
    set_script(proxy, {"faults": [{"path": "long.mp4", "status": 503, "skip": 3,
                                   "times": 10**9}]})
    with pytest.raises(stoker.Error) as raised:
        clips(url, tmp_path / "cache")
    message = str(raised.value)
    assert message.startswith(f"{url}a/long.mp4: ") and "\n" not in message, message
    assert re.search(r": frame \d+: .*503", message), message
    assert len(clips(url, tmp_path / "other-cache", "skip")) == 1


def test_clips_per_video_at_a_url_are_the_local_folders(folder, served, tmp_path):
    """VideoFolder(URL, clips_per_video=3): each video three samples, shuffled among the other
    video's, equal to the local folder's batches byte for byte (the same seed, the same clips)."""
    def batches(source, cache):
        clip = stoker.transforms.DecodeClip(num_frames_per_clip=4, num_indices_between_frames=3,
                                            resize=[40], crop=[32])
        data = stoker.VideoFolder(source, clips_per_video=3)
        assert len(data) == 6
        return [(b["video"], b["label"]) for b in stoker.Loader(
            data, batch_size=2, shuffle=True, order=stoker.Order(seed=5), cache_dir=cache,
            transforms={"video": clip})]

    want = batches(folder, tmp_path / "local")
    got = batches(f"{served.url}/_index_json/videos/", tmp_path / "cache")
    assert [label.tolist() for _, label in want] != [[0, 0], [0, 1], [1, 1]]  # shuffled
    assert len(got) == len(want) == 3
    for (video, label), (their_video, their_label) in zip(got, want):
        assert torch.equal(label, their_label) and torch.equal(video, their_video)


def raw_loader(source, cache, workers=0, max_length=8 << 20, step=None):
    """The videos' bytes as stored (RawBytes, then the Python `step` on them where given)."""
    raw = stoker.transforms.RawBytes(max_length=max_length)
    return stoker.Loader(stoker.VideoFolder(source), batch_size=1, shuffle=False,
                         num_workers=workers, cache_dir=cache,
                         transforms={"video": stoker.transforms.Compose([raw, step]) if step
                                     else raw})


def raw_bytes(source, cache, workers=0, max_length=8 << 20, step=None):
    return [bytes(batch["video"][0].numpy())
            for batch in raw_loader(source, cache, workers, max_length, step)]


INTERRUPTED_CLIP = """
import sys
sys.path.insert(0, sys.argv[1])
from test_remote_video_ranges import loader, raw_loader
made = {"clip": loader, "raw": raw_loader}[sys.argv[5]]
batches = made(sys.argv[2], sys.argv[3], workers=int(sys.argv[4]))
try:
    next(iter(batches))
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="signals as on Linux")
@pytest.mark.parametrize("workers", [0, 1])
@pytest.mark.parametrize("what", ["clip", "raw"])
def test_ctrl_c_while_a_range_read_stalls_stops_at_once(folder, served, fault_proxy, tmp_path,
                                                        workers, what):
    """SIGINT while a clip's (or RawBytes') range read stalls: KeyboardInterrupt and the process
    ends there and then (the read is cancelled), not after the read's time-outs and retries
    (minutes): before, a batch built inline went on reading, and a worker's read held the
    loader's end."""
    proxy = fault_proxy(served.url.removeprefix("http://"))
    url = f"http://{proxy}/_index_json/videos/"
    # The first open's three blocks read, then every GET of the video stalls for ten minutes.
    set_script(proxy, {"faults": [{"path": "long.mp4", "method": "GET", "stall_after": 100,
                                   "stall_s": 600, "skip": 3, "times": 10**9}]})
    process = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_CLIP, os.path.dirname(__file__), url,
         str(tmp_path / "cache"), str(workers), what],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(e["fault"] == "stall_after" for e in proxy_log(proxy)):
            assert process.poll() is None and time.monotonic() < deadline, "no read stalled"
            time.sleep(0.05)
        time.sleep(0.5)  # the stall under way
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)  # a guard: the read's retries take minutes
    finally:
        process.kill()
    assert (process.returncode, out) == (3, "interrupted\n"), err




@pytest.mark.parametrize("workers", [0, 2])  # 0: one thread, deterministic
def test_the_bytes_as_stored_at_a_url_are_the_files(folder, served, tmp_path, workers):
    """A record's video at a URL is a reference to the file: RawBytes resolves it to the file's
    bytes, through the cache (a later run sends nothing), as a Python step on them gets them."""
    want = [(folder / name).read_bytes() for name in ("a/long.mp4", "b/short.mp4")]
    assert raw_bytes(folder, tmp_path / "local", workers) == want
    url = f"{served.url}/_index/videos/"
    empty_log(served)
    assert raw_bytes(url, tmp_path / "cache", workers) == want
    assert bytes_sent(served)[0] >= sum(map(len, want))
    empty_log(served)
    digests = raw_bytes(url, tmp_path / "cache", workers, step=lambda video: torch.tensor(
        list(hashlib.sha256(video.numpy().tobytes()).digest()), dtype=torch.uint8))
    assert digests == [hashlib.sha256(video).digest() for video in want]
    assert bytes_sent(served) == (0, 0)


def test_the_bytes_as_stored_at_an_s3_url_are_the_files(folder, s3_env, tmp_path):
    for name in ("a/long.mp4", "b/short.mp4"):
        status, _ = s3_env.request("PUT", f"/{s3_env.bucket}/videos/{name}",
                                   (folder / name).read_bytes())
        assert status == 200
    want = [(folder / name).read_bytes() for name in ("a/long.mp4", "b/short.mp4")]
    assert raw_bytes(f"s3://{s3_env.bucket}/videos/", tmp_path / "cache", 2) == want


def test_a_video_above_max_length_is_one_line_naming_it(folder, served, tmp_path):
    """Refused by the listed size before any of it is read, as a local one is refused."""
    url = f"{served.url}/_index/videos/"
    size = os.path.getsize(folder / "a/long.mp4")
    empty_log(served)
    with pytest.raises(ValueError) as raised:
        raw_bytes(url, tmp_path / "cache", max_length=size - 1)
    message = str(raised.value)
    assert message.startswith(f"{url}a/long.mp4: ") and "\n" not in message, message
    assert f"{size} bytes are more than raw_bytes' max_length {size - 1}" in message, message
    assert bytes_sent(served, "long.mp4") == (0, 0)


def test_the_bytes_of_a_file_changed_after_listing_are_one_line_naming_its_url(served,
                                                                                tmp_path):
    url = f"{served.url}/_index/videos/"  # sizes and ETags asked by HEAD
    listed = raw_loader(url, tmp_path / "cache")
    change_long_in_place(served)
    expect_changed(listed, url)
