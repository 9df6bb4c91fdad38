"""bench/in_place.py end to end at a tiny size (two tars and a Parquet file of 12 JPEGs, one
round), so that the benchmark cannot rot: every row is measured with a positive figure and
every ratio is there. No timing is asserted. It runs the `stoker` binary of the build
(test_remote_throughput_bench.py's stoker_cli)."""
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest
from PIL import Image

import servers
from parquet_build import needs_parquet
from test_remote_throughput_bench import stoker_cli

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = needs_parquet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "in_place.py")


def jpeg(i):
    out = io.BytesIO()
    Image.new("RGB", (40 + i, 30), (10 * i, 80, 200 - 5 * i)).save(out, "JPEG")
    return out.getvalue()


def write_sets(tmp_path, count=12):
    tars, parquet = tmp_path / "tars", tmp_path / "parquet"
    tars.mkdir()
    parquet.mkdir()
    for t in range(2):
        with tarfile.open(tars / f"data-{t:06d}.tar", "w") as tar:
            for i in range(t * count // 2, (t + 1) * count // 2):
                for name, data in ((f"{i:04d}.jpg", jpeg(i)), (f"{i:04d}.cls", b"%d" % (i % 3))):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    table = pa.table({"image": [{"bytes": jpeg(i), "path": f"{i}.jpg"} for i in range(count)],
                      "label": pa.array([i % 3 for i in range(count)], pa.int64())})
    pq.write_table(table, parquet / "train-00000-of-00001.parquet", row_group_size=4)
    return tars, parquet


def test_a_tiny_run_measures_every_row(tmp_path):
    try:
        servers.nginx_program()
    except servers.Missing as e:
        pytest.skip(str(e))
    tars, parquet = write_sets(tmp_path)
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, SCRIPT, str(tars), str(parquet), "--stoker",
                          stoker_cli(), "--tars", "4", "--rounds", "1", "--work",
                          str(tmp_path / "work"), "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text())
    assert len(list((tmp_path / "work" / "tars-4").glob("*.tar"))) == 4
    names = [row["name"] for row in result["rows"]]
    assert names == ["first batch, index built", "first batch, index cached",
                     "plain read of the tars", "tars, local disk", "tars, http warm cache",
                     "parquet, local disk", "parquet, http warm cache"]
    assert all(row["median"] > 0 for row in result["rows"])
    assert sorted(result["ratios"]) == ["index build / plain read",
                                        "index build MB/s (cold open)", "parquet: warm / local",
                                        "tars: warm / local"]
    # The build / read ratio is None where a tiny run's two first batches take the same time
    # (the build is then no time at all); every other ratio is measured.
    ratios = dict(result["ratios"])
    if ratios["index build / plain read"] is None:
        del ratios["index build / plain read"]
    assert all(v > 0 for v in ratios.values())
