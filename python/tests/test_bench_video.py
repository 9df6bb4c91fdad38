"""bench/video_loader.py, the video clip benchmark (issue 63), on a few short videos with the
loaders of the project's environment (stoker, torchcodec): it measures them, names a peer that
is not installed instead of failing, counts stoker's decoded frames, and its chart draws the
report; and bench/video_gop_bound.py's floor of an exact decode, on a GOP laid out by hand."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from video_build import needs_video

pytestmark = needs_video

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")


def test_the_floor_decodes_the_references_up_to_the_last_asked_frame_and_the_asked_ones():
    sys.path.insert(0, BENCH)
    try:
        import video_gop_bound
    finally:
        sys.path.pop(0)
    # Decoding order of two GOPs, (presentation index, keyframe, reference): I0 P2 b1 P5 B3 b4,
    # then I6 P8 b7.
    table = [(0, True, True), (2, False, True), (1, False, False), (5, False, True),
             (3, False, True), (4, False, False), (6, True, True), (8, False, True),
             (7, False, False)]
    # b1: I0 and P2 (it refers to them) and itself; the prefix is frames 0 and 1.
    assert video_gop_bound.costs(table, [1]) == (3, 2)
    # b4: the references I0 P2 P5 B3 before it in decoding order, not b1; then I6 P8 b7.
    assert video_gop_bound.costs(table, [4, 7]) == (5 + 3, 5 + 2)
    # A GOP nothing is asked of costs nothing; a repeat is one frame.
    assert video_gop_bound.costs(table, [8, 8]) == (2, 3)


def test_the_video_bench_measures_its_loaders_and_names_a_missing_peer(tmp_path):
    pytest.importorskip("torchcodec")  # a peer it measures
    sys.path.insert(0, BENCH)
    try:
        import make_video_set
    finally:
        sys.path.pop(0)
    made = make_video_set.make_video_set(str(tmp_path / "made"), ["h264_gop12_bframes.mp4"])
    videos = tmp_path / "videos"
    for i in range(8):  # one batch of 8 clips an epoch
        os.makedirs(videos / f"class_{i}")
        shutil.copy(made["h264_gop12_bframes.mp4"], videos / f"class_{i}" / "clip.mp4")
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"))
    run = subprocess.run(
        [sys.executable, os.path.join(BENCH, "video_loader.py"), str(videos), "--work",
         str(tmp_path / "work"), "--rounds", "1", "--batches", "1", "--cores", "1",
         "--pipelines", "train", "--loaders", "stoker", "torchcodec", "pyav",
         "--clips-per-video", "1"], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads((tmp_path / "work" / "video-report.json").read_text())
    loaders = result["loaders"]
    for name in ("stoker", "torchcodec"):
        (only_run,) = loaders[name]["runs"]["1c_train"]
        assert only_run["clips_per_s"] > 0 and only_run["cpu_ms_per_clip"] > 0
    assert loaders["pyav"]["error"] == "not installed (bash bench/peers/setup.sh pyav)"
    assert set(loaders["stoker"]["ratios"]["clips_per_cpu_s"]["1c_train"]) == {
        "torchcodec", "fastest"}
    # stoker skips the non-reference frames nothing asks for: fewer than the GOP's prefix,
    # never fewer than the frames it delivers.
    cost = result["decoded_per_delivered"]["1"]
    assert 1 <= cost["stoker_loader"] and 1 <= cost["stoker_same_clips"]
    assert "bound" not in cost  # its counter runs in the pyav environment
    chart = tmp_path / "chart.svg"
    subprocess.run([sys.executable, os.path.join(BENCH, "video_chart.py"),
                    str(tmp_path / "work" / "video-report.json"), str(chart)], check=True)
    svg = chart.read_text()
    assert svg.startswith("<svg") and svg.count("<rect") == 4  # 2 loaders, 2 measures
