"""Remote datasets from Python, on real servers on loopback (servers.py): stoker.Loader over
http:// (nginx) and s3:// (SeaweedFS) gives the local loader's batches through a cache smaller
than the dataset; push, convert(out="s3://..."), inspect and verify on URLs; bad input is one
line."""
import os
import shutil
import subprocess
import sys

import pytest

import stoker
from batches import assert_same, epochs
from loader_datasets import RECORDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dataset_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def test_a_loader_over_http_gives_the_local_batches_through_a_small_cache(labelled, nginx_server,
                                                                          tmp_path):
    shutil.copytree(labelled, nginx_server.root / "ds")
    local = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=3, shuffle_window=2, batch_format="dict")
    # Half the dataset: above what a window of 2 needs, below the whole. The default prefetch
    # builds up to 64 of these small batches ahead, whose shards this cache cannot hold beside
    # the live ones: those pieces wait for room.
    budget_gb = dataset_bytes(labelled) / 2 / 1e9
    remote = stoker.Loader(f"{nginx_server.url}/ds", shuffle=True, batch_size=16, seed=3, shuffle_window=2,
                           cache_dir=tmp_path / "cache", cache_gb=budget_gb, batch_format="dict")
    assert_same(epochs(remote, 2), epochs(local, 2))


def test_push_then_a_loader_over_s3_and_the_tools_on_its_url(labelled, s3_env, tmp_path):
    url = f"s3://{s3_env.bucket}/pushed"
    summary = stoker.push(labelled, url)
    assert summary["records"] == RECORDS and summary["uploaded"] == summary["shards"] > 1
    again = stoker.push(labelled, url)
    assert again["uploaded"] == 0, "content-named shards already there are not sent again"
    local = stoker.Loader(labelled, shuffle=True, batch_size=50, seed=1, batch_format="dict")
    remote = stoker.Loader(url, shuffle=True, batch_size=50, seed=1, cache_dir=tmp_path / "cache",
                           batch_format="dict")
    assert_same(epochs(remote, 2), epochs(local, 2))
    info = stoker.inspect(url, cache_dir=tmp_path / "other-cache")
    assert info["records"] == RECORDS and "label_histogram" not in info
    assert not [f for _, _, files in os.walk(tmp_path / "other-cache") for f in files
                if ".stk" in f], "inspect downloads no shard"
    assert stoker.verify(url, cache_dir=tmp_path / "cache")["datasets"][0]["records"] == RECORDS


def test_convert_to_s3_with_a_shuffled_record_order(s3_env, tmp_path):
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "3", "--val-per-class", "1"], check=True, capture_output=True)
    url = f"s3://{s3_env.bucket}/converted"
    stoker.convert("imagefolder", images, url, record_order="shuffled", seed=7)
    info = stoker.inspect(url, cache_dir=tmp_path / "cache")
    assert sorted((d["dir"].rsplit("/", 1)[-1], d["records"]) for d in info["datasets"]) == [
        ("test", 10), ("train", 30)]
    assert all(d["record_order"] == {"order": "shuffled", "seed": 7} for d in info["datasets"])
    loader = stoker.Loader(f"{url}/train", batch_size=30, shuffle=False,
                           cache_dir=tmp_path / "cache",
                           transforms={"image": stoker.transforms.Compose([
                               stoker.transforms.Resize(8), stoker.transforms.CenterCrop(8)])},
                           batch_format="dict")
    classes = [d for d in info["datasets"] if d["dir"].endswith("train")][0]["class_names"]
    assert len(loader.dataset) == 30 and loader.dataset.classes == classes and classes
    labels = next(iter(loader))["label"].tolist()
    assert labels != sorted(labels), "the records are not class by class"


def test_a_cache_below_the_floor_names_pythons_keywords(labelled, nginx_server, tmp_path):
    shutil.copytree(labelled, nginx_server.root / "ds")
    url = f"{nginx_server.url}/ds"
    with pytest.raises(ValueError) as e:
        stoker.Loader(url, shuffle=True, batch_size=8, shuffle_window=2, cache_dir=tmp_path / "cache",
                      cache_gb=1e-6, batch_format="dict")
    assert "cache_gb=1e-06 holds fewer than" in str(e.value)
    assert "shuffle_window=2 needs at once; raise cache_gb=" in str(e.value)
    assert "--" not in str(e.value)


def test_bad_urls_are_one_line_errors(nginx_server, s3_env, tmp_path):
    for url in (f"{nginx_server.url}/nothing-here", f"s3://{s3_env.bucket}/nothing-here"):
        with pytest.raises((stoker.Error, FileNotFoundError)) as e:  # a local path's too
            stoker.Loader(url, shuffle=True, batch_size=8, cache_dir=tmp_path / "cache", batch_format="dict")
        assert "\n" not in str(e.value) and "nothing-here" in str(e.value)
    with pytest.raises((stoker.Error, FileNotFoundError)) as e:
        stoker.push(tmp_path / "absent", f"s3://{s3_env.bucket}/x")
    assert "\n" not in str(e.value)


def test_a_password_and_signature_in_a_url_show_nowhere(labelled, nginx_server, tmp_path, capsys):
    """One redaction (the CLI's) wherever Python shows or returns a URL: reprs, inspect's and
    verify's paths, the verify progress line, load_state_dict's errors; and a malformed URL, with
    '/' or '?' in its password, in no error either. nginx ignores the password and the query."""
    shutil.copytree(labelled, nginx_server.root / "ds")
    shutil.copytree(labelled, nginx_server.root / "folder" / "train")
    shutil.copytree(labelled, nginx_server.root / "folder" / "test")
    secret = "SENTINEL-py-5d1f"
    host = nginx_server.url[len("http://"):]
    query = f"?X-Amz-Signature=SIG-{secret}"
    url = f"http://user:PW-{secret}@{host}/ds{query}"
    folder = f"http://user:PW-{secret}@{host}/folder{query}"
    cache = {"cache_dir": tmp_path / "cache"}
    loader = stoker.Loader(url, batch_size=16, batch_format="dict", **cache)
    shown = [repr(loader), repr(loader.dataset), repr(loader.sampler), str(loader.dataset.root),
             str(stoker.inspect(url, **cache)), str(stoker.inspect(folder, **cache)),
             str(stoker.verify(url, progress=True, **cache)), str(stoker.verify(folder, **cache))]
    assert f"{nginx_server.url}/ds" in shown[0]
    state = loader.state_dict()
    for changed in ({"records": state["records"] + 1}, {"dataset": "another"}):
        with pytest.raises(ValueError) as e:
            loader.load_state_dict(dict(state, **changed))
        shown.append(str(e.value))
    for malformed in (f"http://user:PW/{secret}@{host}/ds", f"http://user:1?{secret}@{host}/ds",
                      f"http://user:80/{secret}@{host}/ds{query}"):
        with pytest.raises((stoker.Error, ValueError)) as e:
            stoker.Loader(malformed, batch_size=16, **cache)
        shown.append(str(e.value))
    captured = capsys.readouterr()
    shown += [captured.out, captured.err]
    for text in shown:
        assert secret not in text, text
