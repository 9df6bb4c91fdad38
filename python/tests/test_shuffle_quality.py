"""bench/remote/shuffle_quality.py on a tiny photo set (8 shards of 1 MiB): its measurements of
the shard-window shuffle against the global shuffle come out as the shuffles' definitions say."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "remote", "shuffle_quality.py")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shuffle-quality")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"),
                    str(tmp / "images"), "--per-class", "12", "--val-per-class", "2"],
                   check=True, capture_output=True)
    run = subprocess.run([sys.executable, SCRIPT, "--images", str(tmp / "images"), "--work",
                          str(tmp / "work"), "--windows", "1,all", "--batch", "16", "--epochs",
                          "1", "--seeds", "0", "--size", "32", "--json"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    return result, {(r["record_order"], r["window"]): r for r in result["rows"]}


def test_every_setting_is_measured_on_the_converted_set(result):
    result, rows = result
    assert result["dataset"]["records"] == 120 and result["dataset"]["test_records"] == 20
    assert result["dataset"]["shards"] >= 6
    assert set(rows) == {(order, window) for order in ("folder", "shuffled")
                         for window in (1, "all")}
    for row in rows.values():
        assert row["records"] == 120
        assert 0 <= row["accuracy"] <= 1 and row["accuracy_by_seed"] == [row["accuracy"]]
        assert 1 <= row["labels_per_batch"] <= 10 and 1 <= row["shards_per_batch"] <= 16


def test_the_global_shuffle_moves_samples_as_a_random_permutation_does(result):
    _, rows = result
    for order in ("folder", "shuffled"):
        every = rows[order, "all"]
        for key in ("moved", "neighbours", "epoch_to_epoch"):
            assert 0.25 < every[key] < 0.42, (order, key, every[key])  # 1/3 expected
    # The global order is one of positions, whatever the records hold.
    assert rows["folder", "all"]["moved"] == rows["shuffled", "all"]["moved"]


def test_a_window_of_one_shard_keeps_stored_neighbours_close(result):
    _, rows = result
    for order in ("folder", "shuffled"):
        one, every = rows[order, 1], rows[order, "all"]
        assert one["neighbours"] < every["neighbours"] / 2
        assert one["shards_per_batch"] < every["shards_per_batch"]
        # The shards are permuted every epoch: samples still travel far.
        assert one["epoch_to_epoch"] > 0.15


def test_class_ordered_shards_mix_labels_badly_in_a_small_window(result):
    _, rows = result
    assert rows["folder", 1]["entropy_per_batch"] < rows["folder", "all"]["entropy_per_batch"] - 0.2
    assert rows["folder", 1]["labels_per_batch"] < rows["folder", "all"]["labels_per_batch"]
    # Shuffled records bring a window of one shard back near the global shuffle's mixing.
    assert rows["shuffled", 1]["entropy_per_batch"] > rows["folder", 1]["entropy_per_batch"] + 0.2
    assert rows["shuffled", 1]["entropy_per_batch"] > 0.75


@pytest.mark.parametrize("arguments, message", [
    (["--windows", "0"], "a window is an int >= 1 or 'all'"),
    (["--images", "/nonexistent/images"], "/nonexistent/images: not a folder"),
])
def test_bad_arguments_end_in_one_line(arguments, message):
    run = subprocess.run([sys.executable, SCRIPT, *arguments], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr
