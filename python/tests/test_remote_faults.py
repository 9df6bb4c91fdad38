"""Remote datasets under faults (issue 36; docs/REMOTE-DESIGN.md section 6): stoker.Loader
reading from nginx, and from SeaweedFS's S3 gateway, on loopback, directly or through
tests/fault_proxy.py, while the server is killed and restarted, a response is cut short, a
503 burst is answered, or a shard changes on the server. Each run either gives exactly the batches of an uninterrupted local run, or stops
with one line naming the URL; no batch is ever made from bytes that were not verified.
STOKER_RETRY_SECONDS keeps the retries that are meant to fail short."""
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import stoker
from batches import arrays, assert_same, epochs
from fault_proxies import proxy_log
from loader_datasets import RECORDS, SAMPLE, pixels

SETTINGS = {"batch_size": 16, "shuffle": True, "seed": 3, "shuffle_window": 2, "prefetch": 1}
DOWN_S = 1.0  # how long a killed server stays down before it is started again


def served(dataset, server, name="ds"):
    """`dataset` copied under the server's root; its URL."""
    shutil.copytree(dataset, server.root / name)
    return f"{server.url}/{name}"


def address(server):
    return server.url.removeprefix("http://")


def half_of(dataset):
    """A cache budget of half the dataset's shards, in GB: every epoch downloads again."""
    return sum(p.stat().st_size for p in dataset.glob("*.stk")) / 2 / 1e9


def remote(url, dataset, tmp_path, workers=1, **extra):
    return stoker.Loader(url, workers=workers, cache_dir=tmp_path / "cache",
                         cache_gb=half_of(dataset), **SETTINGS, **extra, batch_format="dict")


def local(dataset, workers=1):
    return stoker.Loader(dataset, workers=workers, **SETTINGS, batch_format="dict")


def shard_gets(server):
    """nginx's access log: the shard GETs so far, as (path, status, range)."""
    log = (server.root.parent / "nginx" / "access.log").read_text()
    return re.findall(r"^GET (\S+\.stk) (\d+) range=(\S*)", log, re.M)


def expect_one_line(error, *words):
    message = str(error)
    assert "\n" not in message, message
    for word in words:
        assert word in message, message


def epochs_across_a_restart(loader, server, killed=lambda: None):
    """Epochs 0 and 1 of `loader`, `server` killed after epoch 0's ninth batch (then `killed`
    is called) and started again DOWN_S later: (the batches, the seconds epoch 0 went on
    after the kill)."""
    loader.set_epoch(0)
    got, restart = [], threading.Timer(DOWN_S, server.restart)
    for i, batch in enumerate(loader):
        got.append(arrays(batch))
        if i == 8:
            server.kill()
            killed()
            kill_time = time.monotonic()
            restart.start()
    went_on = time.monotonic() - kill_time
    got += epochs(loader, 1, first=1)
    restart.join()
    return got, went_on


@pytest.mark.parametrize("workers", [0, 2])  # 0: batches built inline, one thread
def test_a_server_killed_mid_epoch_and_restarted_changes_no_batch(labelled, nginx_server,
                                                                  tmp_path, monkeypatch, workers):
    monkeypatch.setenv("STOKER_RETRY_SECONDS", "30")  # wait for it, however many attempts
    url = served(labelled, nginx_server)
    want = epochs(local(labelled, workers), 2)
    before = []
    got, waited = epochs_across_a_restart(
        remote(url, labelled, tmp_path, workers), nginx_server,
        lambda: before.append(len(shard_gets(nginx_server))))
    assert_same(got, want)
    assert len(shard_gets(nginx_server)) > before[0], "shards were downloaded after the restart"
    assert waited >= DOWN_S * 0.9, "the epoch needed shards while the server was down"


def test_a_server_that_never_comes_back_is_one_line_naming_the_url(labelled, nginx_server,
                                                                   tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_RETRY_SECONDS", "1")
    url = served(labelled, nginx_server)
    want = epochs(local(labelled), 1)
    loader = remote(url, labelled, tmp_path)
    loader.set_epoch(0)
    got = []
    with pytest.raises(stoker.Error) as failed:
        for i, batch in enumerate(loader):
            got.append(arrays(batch))
            if i == 8:
                nginx_server.kill()
                killed = time.monotonic()
    assert time.monotonic() - killed < 15
    expect_one_line(failed.value, url + "/shard-", "Couldn't connect to server after ")
    assert 8 < len(got) < len(want)
    assert_same(got, want[:len(got)])


@pytest.mark.parametrize("cut", ["close_after", "reset_after"])  # a FIN, an RST
def test_responses_cut_short_are_resumed(labelled, nginx_server, fault_proxy, tmp_path, cut):
    served(labelled, nginx_server)
    proxy = fault_proxy(address(nginx_server),
                        {"faults": [{"path": ".stk", cut: 1000, "times": 4}]})
    want = epochs(local(labelled), 2)
    got = epochs(remote(f"http://{proxy}/ds", labelled, tmp_path), 2)
    assert_same(got, want)
    assert [e["fault"] for e in proxy_log(proxy)].count(cut) == 4
    if cut == "close_after":  # every byte before a FIN arrived: each cut resumes where it was
        ranges = [r for _, _, r in shard_gets(nginx_server) if r]
        assert len(ranges) == 4 and all(re.fullmatch(r"bytes=[1-4]000-\d+", r) for r in ranges), \
            ranges


def test_a_503_burst_is_waited_out(labelled, nginx_server, fault_proxy, tmp_path):
    served(labelled, nginx_server)
    proxy = fault_proxy(address(nginx_server),
                        {"faults": [{"path": ".stk", "status": 503, "times": 5}]})
    want = epochs(local(labelled), 2)
    assert_same(epochs(remote(f"http://{proxy}/ds", labelled, tmp_path), 2), want)
    assert len(shard_gets(nginx_server)) >= 13, "every shard came from the server in the end"


def test_a_503_burst_longer_than_the_retries_is_one_line(labelled, nginx_server, fault_proxy,
                                                         tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_RETRY_SECONDS", "1")
    served(labelled, nginx_server)
    proxy = fault_proxy(address(nginx_server),
                        {"faults": [{"path": ".stk", "status": 503, "times": 10**9}]})
    loader = remote(f"http://{proxy}/ds", labelled, tmp_path)
    start = time.monotonic()
    with pytest.raises(stoker.Error) as failed:
        epochs(loader, 1)
    assert time.monotonic() - start < 15
    expect_one_line(failed.value, f"http://{proxy}/ds/shard-", ": HTTP 503 after ")
    attempts = int(re.search(r"after (\d+) attempts", str(failed.value)).group(1))
    assert 2 <= attempts <= 12, "retried with a growing backoff, not in a tight loop"


def test_a_corrupt_byte_served_is_never_used(labelled, nginx_server, fault_proxy, tmp_path):
    """The first shard GET has a byte inverted: the download fails verification, is not kept,
    and is fetched again; the run goes on."""
    served(labelled, nginx_server)
    proxy = fault_proxy(address(nginx_server),
                        {"faults": [{"path": ".stk", "corrupt_at": 2000}]})
    want = epochs(local(labelled), 2)
    assert_same(epochs(remote(f"http://{proxy}/ds", labelled, tmp_path), 2), want)
    assert [e["fault"] for e in proxy_log(proxy)].count("corrupt_at") == 1


def write_edited(path):
    """The labelled dataset with record 500's label changed: one shard differs (bytes, index
    checksum), the others are byte for byte the same."""
    with stoker.DatasetWriter(path, {"image": ("uint8", SAMPLE), "label": "int64"},
                              shard_mb=4 / 1024) as writer:
        for i in range(RECORDS):
            writer.append({"image": pixels(i), "label": -1 if i == 500 else i})
    return path


def changed_shard(edited, dataset):
    """The name of the one shard whose bytes differ between the two datasets."""
    (name,) = [p.name for p in edited.glob("*.stk")
               if p.read_bytes() != (dataset / p.name).read_bytes()]
    return name


def expect_the_changed_shard_refused(loader, got, want, where):
    """Reads epochs 1-7 into `got` (a cache of half the dataset downloads the changed shard
    again) until they fail with one line starting with `where` and naming the manifest; every
    batch before it is `want`'s."""
    with pytest.raises(stoker.Error) as failed:
        for e in range(1, 8):
            loader.set_epoch(e)
            for batch in loader:
                got.append(arrays(batch))
    expect_one_line(failed.value, where, "manifest")
    assert_same(got, want[:len(got)])
    del failed  # its traceback holds the loader's frames: the caller's del must end the loader


def test_a_shard_changed_on_the_server_with_the_manifest_is_a_new_version(
        labelled, nginx_server, tmp_path):
    url = served(labelled, nginx_server)
    edited = write_edited(tmp_path / "edited")
    changed = [changed_shard(edited, labelled)]
    running = stoker.Loader(url, cache_dir=tmp_path / "cache", **SETTINGS, batch_format="dict")
    want = epochs(local(labelled), 2)
    got = epochs(running, 1)
    # The new version replaces the old in place, shards first, then the manifest.
    for name in changed + ["manifest.json"]:
        shutil.copy(edited / name, nginx_server.root / "ds" / (name + ".new"))
        (nginx_server.root / "ds" / (name + ".new")).rename(nginx_server.root / "ds" / name)
    # The run keeps the version it opened: its cache holds every shard of it, verified.
    before = len(shard_gets(nginx_server))
    got += epochs(running, 1, first=1)
    assert_same(got, want)
    assert len(shard_gets(nginx_server)) == before
    # A new run reads the new manifest and downloads the changed shard only.
    fresh = stoker.Loader(url, cache_dir=tmp_path / "cache", **SETTINGS, batch_format="dict")
    assert_same(epochs(fresh, 2), epochs(local(edited), 2))
    assert [path for path, _, _ in shard_gets(nginx_server)[before:]] == [
        f"/ds/{changed[0]}"]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_shard_changed_on_the_server_under_an_old_manifest_is_never_used(
        labelled, nginx_server, tmp_path, workers):
    url = served(labelled, nginx_server)
    edited = write_edited(tmp_path / "edited")
    loader = remote(url, labelled, tmp_path, workers)
    want = epochs(local(labelled, workers), 8)
    got = epochs(loader, 1)
    # Every shard replaced by the edited dataset's, the manifest left as it was: the one that
    # differs no longer matches it.
    for shard in edited.glob("*.stk"):
        shutil.copy(shard, nginx_server.root / "ds" / shard.name)
    expect_the_changed_shard_refused(loader, got, want,
                                     f"{url}/{changed_shard(edited, labelled)}: ")
    del loader  # its downloads in flight end with it
    assert not list((tmp_path / "cache").rglob("*.part"))


@pytest.mark.parametrize("cache", ["warm", "cold", "partly evicted"])
def test_an_interrupted_run_resumes_exactly_whatever_the_cache_holds(labelled, nginx_server,
                                                                      tmp_path, cache):
    url = served(labelled, nginx_server)
    want = epochs(local(labelled), 3)
    first = remote(url, labelled, tmp_path)
    got = epochs(first, 1)
    first.set_epoch(1)
    for i, batch in enumerate(first):
        got.append(arrays(batch))
        if i == 20:
            break
    state = first.state_dict()
    del first, batch
    shards = sorted((tmp_path / "cache").rglob("shards/*"))
    assert shards
    if cache == "cold":
        shutil.rmtree(tmp_path / "cache")
    elif cache == "partly evicted":
        for shard in shards[::2]:
            shard.unlink()
    resumed = remote(url, labelled, tmp_path)
    resumed.load_state_dict(state)
    resumed.set_epoch(1)
    got += [arrays(b) for b in resumed]
    got += epochs(resumed, 1, first=2)
    assert_same(got, want)


# The same faults against SeaweedFS's S3 gateway: signed requests, S3's ETags and errors.

def pushed(dataset, server, name="ds"):
    """`dataset` pushed to the server's bucket; its s3:// URL."""
    url = f"s3://{server.bucket}/{name}"
    stoker.push(dataset, url)
    return url


def pushed_shards(server, name="ds"):
    """The object keys of the shards the pushed manifest names, in its order."""
    status, body = server.request("GET", f"/{server.bucket}/{name}/manifest.json")
    assert status == 200, body
    return [shard["file"] for shard in json.loads(body)["shards"]]


def test_an_s3_server_killed_mid_epoch_and_restarted_changes_no_batch(labelled, s3_alone,
                                                                     tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_RETRY_SECONDS", "60")  # weed takes seconds to serve again
    url = pushed(labelled, s3_alone)
    want = epochs(local(labelled, 2), 2)
    got, waited = epochs_across_a_restart(remote(url, labelled, tmp_path, 2), s3_alone)
    assert_same(got, want)
    assert waited >= DOWN_S * 0.9, "the epoch needed shards while the server was down"


def test_s3_responses_cut_short_and_503_bursts_are_retried(labelled, s3_env, fault_proxy,
                                                           tmp_path, monkeypatch):
    """Through the proxy (which keeps the Host the request was signed for): each shard GET
    cut by a FIN, an RST and a 503 burst in turn; the batches are the local ones."""
    url = pushed(labelled, s3_env, "cut")
    proxy = fault_proxy(address(s3_env), {"faults": [
        {"path": ".stk", "method": "GET", "close_after": 1000, "times": 2},
        {"path": ".stk", "method": "GET", "reset_after": 1000, "times": 2},
        {"path": ".stk", "method": "GET", "status": 503, "times": 4}]})
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{proxy}")
    want = epochs(local(labelled), 2)
    assert_same(epochs(remote(url, labelled, tmp_path), 2), want)
    faults = [e["fault"] for e in proxy_log(proxy)]
    assert (faults.count("close_after"), faults.count("reset_after"),
            faults.count("status")) == (2, 2, 4), faults


def test_an_s3_object_changed_under_its_manifest_is_never_used(labelled, s3_env, tmp_path):
    url = pushed(labelled, s3_env, "edited-in-place")
    edited = write_edited(tmp_path / "edited")
    changed = changed_shard(edited, labelled)
    keys = pushed_shards(s3_env, "edited-in-place")
    key = next(k for k in keys if k.startswith(changed.removesuffix(".stk") + "."))
    loader = remote(url, labelled, tmp_path)
    want = epochs(local(labelled), 8)
    got = epochs(loader, 1)
    status, _ = s3_env.request("PUT", f"/{s3_env.bucket}/edited-in-place/{key}",
                               (edited / changed).read_bytes())
    assert status == 200
    expect_the_changed_shard_refused(loader, got, want, f"{url}/{key}: ")
    del loader
    assert not list((tmp_path / "cache").rglob("*.part"))


def test_an_s3_dataset_pushed_again_is_a_new_version_for_new_runs(labelled, s3_env, tmp_path):
    url = pushed(labelled, s3_env, "pushed-again")
    running = stoker.Loader(url, cache_dir=tmp_path / "cache", **SETTINGS, batch_format="dict")
    got = epochs(running, 1)
    edited = write_edited(tmp_path / "edited")
    assert stoker.push(edited, url)["uploaded"] == 1, "only the changed shard is sent"
    got += epochs(running, 1, first=1)  # the version it opened, whole in its cache
    assert_same(got, epochs(local(labelled), 2))
    fresh = stoker.Loader(url, cache_dir=tmp_path / "cache", **SETTINGS, batch_format="dict")
    assert_same(epochs(fresh, 2), epochs(local(edited), 2))


INTERRUPTED_INLINE_FETCH = """
import sys
import stoker
loader = stoker.Loader(sys.argv[1], workers=0, batch_size=2, cache_dir=sys.argv[2])
print("iterating", flush=True)
try:
    next(iter(loader))
    print("a batch", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    print("position", loader.state_dict()["position"], flush=True)
    sys.exit(3)
"""


def test_ctrl_c_ends_a_shard_fetch_of_a_batch_built_inline(nginx_server, tmp_path):
    """workers=0 builds a batch in the caller's thread: SIGINT while it fetches a shard raises
    KeyboardInterrupt there, not after the download (issue 66: it went on before). The one 24 MB
    shard comes through nginx's 100 KB/s path: about four minutes, longer than the guard."""
    blob = 6 << 20
    with stoker.DatasetWriter(nginx_server.root / "big", {"blob": ("uint8", (blob,))},
                              shard_mb=64) as writer:
        for i in range(4):
            writer.append({"blob": np.full(blob, i, np.uint8)})
    cache = tmp_path / "cache"
    process = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_INLINE_FETCH, f"{nginx_server.url}/_slow/big",
         str(cache)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "iterating\n", process.stderr.read()
        # Interrupted once the shard's download has begun (its first bytes are in the cache).
        deadline = time.monotonic() + 120
        while not any(p.is_file() and p.stat().st_size > 0 for p in cache.rglob("*")
                      if ".stk" in p.name or "part" in p.name):
            assert time.monotonic() < deadline, "the shard's download never began"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)  # a guard: the download takes minutes
    finally:
        process.kill()
    assert (process.returncode, out) == (3, "interrupted\nposition 0\n"), err
