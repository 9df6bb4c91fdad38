"""A remote video folder's videos read by ranges (issue 63, point 5): over nginx on loopback, a
clip of a long mp4 (GOP 12, B-frames) costs the server well under the file (nginx's own count of
the bytes it sent), at the first open (the index from the header's sample tables) and once the
index is saved, and equals the local folder's clip byte for byte; a file changed after the
listing (its ETag) or a server failing mid-read is one line naming the URL (and the frame), which
on_error="skip" drops. (test_remote_video_folder.py: several codecs and containers, HTTP and S3,
0 and 2 workers, equal to the local folder's clips.)"""
import http.client
import json
import os
import re
import shutil
import subprocess

import pytest
import torch

import stoker
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


def loader(source, cache, on_error="raise"):
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=6, num_indices_between_frames=2,
                                        resize=[40], crop=[32])
    return stoker.Loader(stoker.VideoFolder(source), batch_size=1, shuffle=False,
                         cache_dir=cache, on_error=on_error, transforms={"video": clip})


def clips(source, cache, on_error="raise"):
    return [batch["video"][0] for batch in loader(source, cache, on_error)]


def bytes_sent(server, name):
    """What nginx sent for GETs of `name` since its log was last emptied, and the opens of it
    (the GETs of its first bytes)."""
    log = (server.root.parent / "nginx" / "access.log").read_text()
    gets = re.findall(rf"^GET \S*/{re.escape(name)} \d+ range=(\S*) .* sent=(\d+)$", log, re.M)
    return sum(int(sent) for _, sent in gets), sum(r.startswith("bytes=0-") for r, _ in gets)


def empty_log(server):
    (server.root.parent / "nginx" / "access.log").write_text("")


@pytest.mark.parametrize("index", ["_index", "_index_json"])
def test_a_clip_of_a_long_video_costs_its_header_and_gops(folder, served, tmp_path, index):
    url = f"{served.url}/{index}/videos/"
    size = os.path.getsize(folder / "a/long.mp4")
    want = clips(folder, tmp_path / "local")
    for run in ("first open", "index saved"):
        empty_log(served)
        got = clips(url, tmp_path / "cache")
        assert len(got) == 2 and all(torch.equal(a, b) for a, b in zip(got, want)), run
        sent, opens = bytes_sent(served, "long.mp4")
        # Each open: the header's first block and the index at the end, then the clip's GOPs
        # (about 0.6 MB of 4.5).
        assert opens >= 1 and 0 < sent / opens < size / 5, (run, sent, opens, size)


def test_a_file_changed_after_listing_is_one_line_naming_its_url(folder, served, tmp_path):
    url = f"{served.url}/_index/videos/"  # sizes and ETags asked by HEAD
    failing, skipping = loader(url, tmp_path / "cache"), loader(url, tmp_path / "cache", "skip")
    path = served.root / "videos/a/long.mp4"
    # The same size, other bytes and time: nginx's ETag (its time and size) changes.
    stat = path.stat()
    path.write_bytes(path.read_bytes()[::-1])
    os.utime(path, (stat.st_atime, stat.st_mtime + 10))
    with pytest.raises(stoker.Error) as raised:
        list(failing)
    message = str(raised.value)
    assert message.startswith(f"{url}a/long.mp4: ") and "\n" not in message, message
    assert "changed on the server" in message, message
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
    cache = tmp_path / "cache"
    assert len(clips(url, cache)) == 2  # the index saved: the header is read, then the GOPs
    # The header's two blocks (its start, the index at its end) read; the GOPs' fail.
    set_script(proxy, {"faults": [{"path": "long.mp4", "status": 503, "skip": 2,
                                   "times": 10**9}]})
    with pytest.raises(stoker.Error) as raised:
        clips(url, cache)
    message = str(raised.value)
    assert message.startswith(f"{url}a/long.mp4: ") and "\n" not in message, message
    assert re.search(r": frame \d+: .*503", message), message
    assert len(clips(url, cache, "skip")) == 1


def test_the_bytes_as_stored_are_refused_at_a_url(folder, served, tmp_path):
    """A record's video at a URL is a reference to the file: RawBytes (or Python steps on the
    bytes) would get it, not the video, so the loader refuses them; locally they get the
    file's bytes."""
    raw = {"video": stoker.transforms.RawBytes(max_length=8 << 20)}
    url = f"{served.url}/_index/videos/"
    with pytest.raises(ValueError, match=r"VideoFolder\(.*at a URL .*RawBytes"):
        stoker.Loader(stoker.VideoFolder(url), batch_size=1, transforms=raw,
                      cache_dir=tmp_path / "remote")
    local = stoker.Loader(stoker.VideoFolder(str(folder)), batch_size=1, shuffle=False,
                          transforms=raw, cache_dir=tmp_path / "local")
    first = next(iter(local))["video"][0]
    assert bytes(first.numpy()) == (folder / "a/long.mp4").read_bytes()
