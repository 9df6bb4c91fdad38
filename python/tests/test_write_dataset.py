"""stoker.write_dataset: every kind of source, the same dataset for any workers, failures that
leave nothing behind."""

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import stoker
from stored_records import read_manifest, read_records


def shard_bytes(path):
    return [(Path(path) / s["file"]).read_bytes() for s in read_manifest(path)["shards"]]


def jpeg_bytes(width, height, seed):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


class Samples:
    """A map-style dataset of dicts (a float64 array, an int label, a str)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.arange(6, dtype=np.float64).reshape(2, 3) * i, "label": i % 7,
                "name": f"sample-{i}"}


@pytest.mark.parametrize("workers, parallel", [(0, "processes"), (2, "processes"),
                                               (3, "threads")])
def test_the_same_dataset_for_any_workers(tmp_path, workers, parallel):
    stoker.write_dataset(tmp_path / "ref", Samples(300), workers=0, shard_mb=0.001)
    stoker.write_dataset(tmp_path / "ds", Samples(300), workers=workers, parallel=parallel,
                         shard_mb=0.001)
    assert shard_bytes(tmp_path / "ds") == shard_bytes(tmp_path / "ref")
    records = read_records(tmp_path / "ds")
    assert len(records) == 300
    assert read_manifest(tmp_path / "ds")["schema"]["fields"] == [
        {"name": "x", "dtype": "float32", "shape": [2, 3]},
        {"name": "label", "dtype": "int64", "shape": []},
        {"name": "name", "dtype": "bytes"}]
    for i, r in enumerate(records):
        np.testing.assert_array_equal(r["x"], np.arange(6).reshape(2, 3) * i)
        assert (r["label"], r["name"]) == (i % 7, f"sample-{i}".encode())


class Pids:
    """Samples saying which process made them, each taking `seconds`."""

    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return {"pid": os.getpid(), "index": i}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: never any workers")
def test_by_default_workers_only_for_a_source_worth_them(tmp_path):
    stoker.write_dataset(tmp_path / "fast", Pids(500, 0))
    assert {r["pid"] for r in read_records(tmp_path / "fast")} == {os.getpid()}
    stoker.write_dataset(tmp_path / "slow", Pids(150, 0.01))  # 1.5 s without workers
    records = read_records(tmp_path / "slow")
    assert [r["index"] for r in records] == list(range(150))
    assert {r["pid"] for r in records[:33]} == {os.getpid()}  # the first and the 32 timed
    assert os.getpid() not in {r["pid"] for r in records[33:]}


def test_tuples_of_pil_images_become_chw_arrays(tmp_path):
    rng = np.random.default_rng(2)
    gray = [rng.integers(0, 256, (5, 4), dtype=np.uint8) for _ in range(6)]
    rgb = [rng.integers(0, 256, (5, 4, 3), dtype=np.uint8) for _ in range(6)]
    stoker.write_dataset(tmp_path / "gray", [(Image.fromarray(p), 3) for p in gray], workers=0)
    stoker.write_dataset(tmp_path / "rgb", [(Image.fromarray(p), np.int32(i))
                                            for i, p in enumerate(rgb)], workers=2)
    stoker.write_dataset(tmp_path / "rgba", [(Image.fromarray(p).convert("RGBA"), 1)
                                             for p in rgb], workers=0)
    for i, r in enumerate(read_records(tmp_path / "gray")):
        np.testing.assert_array_equal(r["image"], gray[i][None])
    for i, r in enumerate(read_records(tmp_path / "rgb")):
        np.testing.assert_array_equal(r["image"], rgb[i].transpose(2, 0, 1))
        assert r["label"] == i
    for i, r in enumerate(read_records(tmp_path / "rgba")):
        np.testing.assert_array_equal(r["image"], rgb[i].transpose(2, 0, 1))


def test_iterables_columns_and_transform(tmp_path):
    def generate():
        for i in range(50):
            yield {"value": np.float32(i) / 2, "label": i}

    stoker.write_dataset(tmp_path / "gen", generate())
    assert [(r["value"], r["label"]) for r in read_records(tmp_path / "gen")] == [
        (i / 2, i) for i in range(50)]
    images = np.arange(3000 * 4, dtype=np.uint8).reshape(3000, 2, 2)
    stoker.write_dataset(tmp_path / "cols", {"image": images, "label": np.arange(3000)},
                         transform=lambda s: {"image": s["image"][None], "label": s["label"]})
    records = read_records(tmp_path / "cols")
    assert len(records) == 3000
    np.testing.assert_array_equal(np.stack([r["image"] for r in records]), images[:, None])
    with pytest.raises(ValueError, match="the columns have different lengths"):
        stoker.write_dataset(tmp_path / "bad", {"a": np.zeros(3), "b": np.zeros(4)})


def test_encoded_images_make_an_image_dataset(tmp_path):
    images = [jpeg_bytes(20 + i, 10 + 2 * i, i) for i in range(8)]
    stoker.write_dataset(tmp_path / "ds", [(data, i % 3) for i, data in enumerate(images)],
                         class_names=["a", "b", "c"], workers=2)
    manifest = read_manifest(tmp_path / "ds")
    assert [f["name"] for f in manifest["schema"]["fields"]] == [
        name for name, _, _ in stoker.IMAGE_SCHEMA]
    assert manifest["class_names"] == ["a", "b", "c"]
    for i, r in enumerate(read_records(tmp_path / "ds")):
        assert r["image"] == images[i]
        assert (r["label"], r["width"], r["height"], r["original_size"]) == (
            i % 3, 20 + i, 10 + 2 * i, len(images[i]))
    stoker.verify(tmp_path / "ds")


def test_a_corrupt_image_fails_naming_the_sample(tmp_path):
    good = jpeg_bytes(120, 80, 0)
    truncated = good[:len(good) // 2]
    samples = [(good, 0), (good, 1), (truncated, 0)]
    with pytest.raises(stoker.Error, match="sample 2, field 'image': .*truncated"):
        stoker.write_dataset(tmp_path / "ds", samples, workers=0)
    assert os.listdir(tmp_path) == []
    with pytest.raises(stoker.Error, match="sample 1, field 'image': not a JPEG or PNG image: .* \\(a GIF\\)"):
        stoker.write_dataset(tmp_path / "ds", [(good, 0), (b"GIF89a....", 1)], workers=0)
    # Without the full decode only the header is read: the truncated JPEG goes in.
    stoker.write_dataset(tmp_path / "ds", samples, workers=0, check_images=False)
    assert len(read_records(tmp_path / "ds")) == 3


class Failing(Samples):
    def __getitem__(self, i):
        if i == 123:
            raise KeyError(f"no sample {i}")
        return super().__getitem__(i)


@pytest.mark.parametrize("workers, parallel", [(0, "processes"), (2, "processes"),
                                               (2, "threads")])
def test_a_source_raising_leaves_nothing_and_names_the_sample(tmp_path, workers, parallel):
    with pytest.raises(KeyError, match="no sample 123") as raised:
        stoker.write_dataset(tmp_path / "ds", Failing(500), workers=workers, parallel=parallel)
    assert "while preparing sample 123 of the source" in "".join(raised.value.__notes__)
    assert os.listdir(tmp_path) == []


def test_a_bad_sample_midway_leaves_nothing(tmp_path):
    samples = [{"x": np.zeros(3, np.float32)} for _ in range(10)]
    samples[7] = {"x": np.zeros(4, np.float32)}
    with pytest.raises(ValueError, match=r"sample 7, field 'x': float32 array of shape \(4,\)"):
        stoker.write_dataset(tmp_path / "ds", samples, workers=2)
    samples[7] = {"x": None}
    with pytest.raises(ValueError, match="sample 7, field 'x': None cannot be stored"):
        stoker.write_dataset(tmp_path / "ds", samples, workers=0)
    samples[7] = (1, 2, 3)
    with pytest.raises(ValueError, match="sample 7 is a tuple of 3 values; field_names names 2"):
        stoker.write_dataset(tmp_path / "ds", samples, workers=0)
    assert os.listdir(tmp_path) == []


def test_bad_arguments(tmp_path):
    (tmp_path / "exists").mkdir()
    with pytest.raises(FileExistsError):
        stoker.write_dataset(tmp_path / "exists", Samples(3))
    with pytest.raises(ValueError, match="the source has no samples"):
        stoker.write_dataset(tmp_path / "ds", [])
    with pytest.raises(ValueError, match=r"^sample 0, field 'image': an array of shape \(0, 4, 3\) "
                                         r"holds no element"):
        stoker.write_dataset(tmp_path / "ds", [(np.zeros((0, 4, 3), np.uint8), 1)])
    with pytest.raises(ValueError, match="is not a source"):
        stoker.write_dataset(tmp_path / "ds", 42)
    with pytest.raises(ValueError, match="parallel must be"):
        stoker.write_dataset(tmp_path / "ds", Samples(3), parallel="fibers")
    with pytest.raises(ValueError, match="workers must be"):
        stoker.write_dataset(tmp_path / "ds", Samples(3), workers=-1)
    (tmp_path / "file").write_text("")
    with pytest.raises(stoker.Error, match="cannot create"):
        stoker.write_dataset(tmp_path / "file" / "ds", Samples(3))
    assert sorted(os.listdir(tmp_path)) == ["exists", "file"]


def test_an_explicit_schema_and_the_progress_line(tmp_path, capsys):
    stoker.write_dataset(tmp_path / "ds", [(np.ones((1, 2, 2), np.uint8), 1)] * 5,
                         schema={"image": ("uint8", (1, 2, 2)), "label": "int64"},
                         source_name="ones", progress=True)
    assert read_manifest(tmp_path / "ds")["source"] == "ones"
    assert "wrote 5 samples to " in capsys.readouterr().err
    stoker.write_dataset(tmp_path / "quiet", [(np.ones((1, 2, 2), np.uint8), 1)] * 5,
                         progress=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match=r"sample 0, field 'image': float32 array"):
        stoker.write_dataset(tmp_path / "bad", [(np.ones((1, 2, 2)), 1)],
                             schema={"image": ("uint8", (1, 2, 2)), "label": "int64"})


def test_ctrl_c_stops_the_workers_and_leaves_nothing(tmp_path):
    """SIGINT to a process writing with worker processes: KeyboardInterrupt, no dataset, no
    staging directory, no worker left running."""
    script = textwrap.dedent("""
        import sys, time
        import numpy as np
        import stoker

        class Slow:
            def __len__(self):
                return 10**6
            def __getitem__(self, i):
                time.sleep(0.002)
                return {"x": np.full(100, i % 256, np.uint8)}

        stoker.write_dataset(sys.argv[1], Slow(), workers=int(sys.argv[2]), parallel=sys.argv[3])
    """)
    env = dict(os.environ, PYTHONPATH=str(Path(stoker.__file__).parent.parent))
    for workers, parallel in [(2, "processes"), (0, "processes"), (2, "threads")]:
        out = tmp_path / f"ds-{workers}-{parallel}"
        child = subprocess.Popen([sys.executable, "-c", script, str(out), str(workers), parallel],
                                 env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not any(p.name.startswith(out.name + ".partial-") for p in tmp_path.iterdir()):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # writing, the workers busy
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        assert child.returncode != 0
        assert "KeyboardInterrupt" in stderr
        assert list(tmp_path.iterdir()) == []
        running = [p for p in Path("/proc").glob("[0-9]*") if _cmdline_has(p, str(out))]
        assert running == []


def _cmdline_has(proc, text):
    try:
        return text.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False
