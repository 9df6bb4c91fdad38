"""bench/remote/throughput.py end to end at a tiny size (an image set of 2 MB, one round), so
that the benchmark cannot rot: every row is measured with a positive figure, every ratio is
there, and the table names them all. No timing is asserted.

It runs the `stoker` binary of the build: $STOKER_CLI, else $STOKER_BUILD_DIR/stoker (build/
by default, as scripts/test.sh builds it before this stage)."""
import json
import os
import subprocess
import sys

import pytest

import servers
from stoker_binary import stoker_cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "remote", "throughput.py")
COLD_ROWS = ("cold first epoch", "curl one at a time", "curl 8 at a time")


def weed_installed():
    try:
        servers.weed_program()
        return True
    except servers.Missing:
        return False


def test_a_tiny_run_measures_every_row(tmp_path):
    try:
        servers.nginx_program()
    except servers.Missing as e:
        pytest.skip(str(e))
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, SCRIPT, "--stoker", stoker_cli(), "--size-mb", "2",
                          "--rounds", "1", "--epochs", "1", "--work", str(tmp_path / "work"),
                          "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text())

    sources = ["http", "s3", "wan"] if weed_installed() else ["http", "wan"]
    if "s3" not in sources:
        assert "weed" in result["skipped"]["s3"]
    want = ["local disk", "http, warm cache"] + [f"{s}, {row}" for s in sources
                                                 for row in COLD_ROWS]
    assert [r["name"] for r in result["rows"]] == want
    for row in result["rows"]:
        assert len(row["rounds"]) == 1 and row["median"] > 0, row
    assert len(result["ratios"]) == 1 + 3 * len(sources)
    assert all(r["value"] > 0 for r in result["ratios"]), result["ratios"]
    assert result["dataset"]["shards"] >= 2 and result["dataset"]["records"] > 0
    assert result["machine"]["cores"] >= 1 and result["machine"]["cpu_model"]
    for name in want + [r["name"] for r in result["ratios"]]:
        assert name in run.stdout


def test_a_missing_binary_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, SCRIPT, "--stoker", str(tmp_path / "no-stoker")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr == f"throughput.py: {tmp_path / 'no-stoker'}: no stoker binary " \
                         "(cmake --build build --target stoker)\n"
