"""bench/peers/run.py, the side-by-side benchmark, on a tiny image set with the peers that live
in the project's environment (torchvision's two paths): it measures them, compares their
evaluation pixels, and lists a peer that is not installed with its reason instead of failing."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_peers_benchmark_measures_and_names_what_it_cannot_run(tmp_path):
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "3", "--val-per-class", "1"], check=True, capture_output=True)
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"), STOKER_PEERS_BATCH="8")
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "peers", "run.py"), str(images / "train"),
         "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--rounds", "1",
         "--cores", "1", "--dtypes", "uint8", "--peers", "torchvision_pil,torchvision_tensor,dali"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    peers = json.loads((tmp_path / "out" / "results.json").read_text())["peers"]
    for name in ("torchvision_pil", "torchvision_tensor"):
        (only_run,) = peers[name]["runs"]["1c_uint8"]
        assert only_run["images"] == 30 and only_run["batches"] == 4
        assert only_run["images_per_s"] > 0 and only_run["peak_rss_bytes"] > 0
    # The reference against itself, and torchvision's tensor path within a grey level of it.
    assert peers["torchvision_pil"]["eval"]["worst_abs_diff"] == 0
    assert peers["torchvision_tensor"]["eval"]["compared"] == 30
    assert peers["torchvision_tensor"]["eval"]["worst_abs_diff"] <= 1
    assert peers["dali"]["error"].startswith("not installed")
    table = (tmp_path / "out" / "table.md").read_text()
    assert "dali (DALI, CPU pipeline) — not installed" in table
    assert (tmp_path / "out" / "chart.svg").read_text().startswith("<svg")
