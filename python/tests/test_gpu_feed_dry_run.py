"""bench/gpu_feed.py's CPU dry run: every feeder's code path trains a step and is summarised.

The GPU benchmark itself runs only on a GPU machine (scripts/gpu/run.sh); this keeps its
script working where there is none. About 30 s: four rows, each its own process.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_measures_every_row(tmp_path):
    out = tmp_path / "gpu_feed.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_feed.py"), "--device", "cpu", "--dry-run",
         "--feeders", "bound,stoker_u8,dataloader,gpu_decode", "--cores", "1",
         "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    rows = {row["feeder"]: row for row in result["rows"]}
    assert sorted(rows) == ["bound", "dataloader", "gpu_decode", "stoker_u8"]
    for row in rows.values():
        assert row["model"] == "tiny" and row["cores"] == 1 and row["steps"] >= 3
        assert row["images_per_s"] > 0
        assert abs(row["fraction_of_bound"] * rows["bound"]["images_per_s"]
                   - row["images_per_s"]) < 1e-6 * row["images_per_s"]
    summary = {s["feeder"]: s for s in result["summary"]}
    assert sorted(summary) == ["dataloader", "gpu_decode", "stoker_u8"]
    assert result["machine"]["dry_run"] and "DRY RUN" in run.stdout
