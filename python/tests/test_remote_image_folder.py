"""An image folder over http:// (nginx, its HTML and JSON index pages) and s3:// (SeaweedFS) on
loopback, read in place through the shard cache: the local folder's classes, samples and batches
(the same pixels and labels for the same draws, for several worker counts), the source contract
(order, exactly once across ranks, resume), a later run served by the cache, and bad input (a
file gone from the server, a file that is no image, a folder without classes) as one line naming
the URL; Ctrl-C while a folder is listed."""
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import stoker
from batches import assert_same, epochs
from source_contract import NO_IMAGE, check_source_contract, checksums
from test_image_folder_source import CLASSES, crop_loader
from test_image_folder_source import cache, folder  # noqa: F401 (fixtures)


@pytest.fixture
def served(folder, nginx_server):
    """The folder under nginx's root as photos/: its URL through the HTML index, and the JSON."""
    shutil.copytree(folder, nginx_server.root / "photos")
    return [f"{nginx_server.url}/{index}/photos/" for index in ("_index", "_index_json")]


def image_gets(tmp_path):
    """The GETs of images (not index pages) in nginx_server's access log."""
    with open(tmp_path / "nginx" / "access.log") as log:
        return sum(line.startswith("GET /") and "/ 200 " not in line and " 200 " in line
                   for line in log)


def test_classes_and_samples_are_the_local_folders(folder, served, cache):
    local = stoker.Loader(folder, batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE).dataset
    for url in served:
        remote = stoker.Loader(url, batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE).dataset
        assert remote.classes == local.classes == list(CLASSES)
        base = url.rstrip("/")
        assert remote.samples == [(base + path[len(str(folder)):], label)
                                  for path, label in local.samples]


def test_batches_are_the_local_folders(folder, served, cache):
    want = epochs(crop_loader(folder, cache), 2)
    for url in served:
        for workers in (0, 1, 3):  # 0: one thread, deterministic
            assert_same(epochs(crop_loader(url, cache, workers=workers), 2), want)
    assert_same(epochs(crop_loader(stoker.ImageFolder(served[0].rstrip("/")), cache), 2), want)


def test_source_contract_order_ranks_and_resume(served, cache):
    check_source_contract(stoker.ImageFolder(served[0]), cache)
    check_source_contract(served[1], cache)  # a folder URL found out as an image folder


def test_a_later_run_reads_the_cache(folder, served, cache, tmp_path):
    first = checksums(stoker.Loader(served[1], batch_size=4, shuffle=False, batch_format="dict",
                                    cache_dir=cache, transforms=NO_IMAGE))
    gets = image_gets(tmp_path)
    assert gets == 23  # each file once
    again = checksums(stoker.Loader(served[1], batch_size=4, shuffle=False, batch_format="dict",
                                    cache_dir=cache, transforms=NO_IMAGE))
    assert again == first and image_gets(tmp_path) == gets


def test_an_s3_folder_reads_as_the_local_folder(folder, s3_env, cache):
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            key = f"/{s3_env.bucket}/photos/{path.relative_to(folder).as_posix()}"
            status, _ = s3_env.request("PUT", key, path.read_bytes())
            assert status == 200
    url = f"s3://{s3_env.bucket}/photos/"
    assert_same(epochs(crop_loader(url, cache, workers=2), 1),
                epochs(crop_loader(folder, cache, workers=2), 1))
    check_source_contract(stoker.ImageFolder(url), cache)


def test_bad_files_are_one_line_naming_their_url(served, nginx_server, cache):
    url = served[1]
    (nginx_server.root / "photos" / "dog" / "10.jpg").write_bytes(b"text, not a JPEG")
    loader = crop_loader(url, cache, shuffle=False)
    skipping = crop_loader(url, cache, shuffle=False, on_error="skip")
    os.remove(nginx_server.root / "photos" / "cat" / "00.jpg")  # listed, then gone: a 404
    with pytest.raises(stoker.Error) as raised:
        epochs(loader, 1)
    message = str(raised.value)
    assert message.startswith(f"{url}cat/00.jpg: HTTP 404") and "\n" not in message, message
    kept = epochs(skipping, 1)
    assert sum(len(labels) for _, labels in kept) == 21
    # Listed now, the folder has no cat/00.jpg; dog/10.jpg is no JPEG.
    with pytest.raises(stoker.Error, match=f"{served[0]}dog/10.jpg: .*JPEG"):
        epochs(crop_loader(served[0], cache, shuffle=False), 1)


def test_a_folder_without_classes_is_one_line(nginx_server, cache):
    (nginx_server.root / "flat").mkdir()
    (nginx_server.root / "flat" / "a.jpg").write_bytes(b"x")
    url = f"{nginx_server.url}/_index/flat/"
    with pytest.raises(ValueError, match=f"{url[:-1]}: no class folders"):
        stoker.Loader(stoker.ImageFolder(url), batch_size=256, shuffle=True, cache_dir=cache)


def test_inspect_and_verify_take_a_remote_image_folder(served, cache):
    info = stoker.inspect(served[1], cache_dir=cache)
    assert (info["records"], info["class_names"]) == (23, list(CLASSES))
    assert stoker.verify(served[0], cache_dir=cache)["datasets"][0]["records"] == 23


INTERRUPTED_LISTING = """
import sys
import stoker
try:
    stoker.Loader(stoker.ImageFolder(sys.argv[1]), batch_size=4, cache_dir=sys.argv[2])
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


class SlowListing(http.server.BaseHTTPRequestHandler):
    """A folder of 1,000 class folders whose pages each take 2 s (8 at a time: minutes in all);
    `asked` is set at the first class page asked for."""

    asked = threading.Event()

    def do_GET(self):
        if self.path == "/looping/":
            body = "".join(f'<a href="c{i}/">c{i}/</a>' for i in range(1000))
        else:
            SlowListing.asked.set()
            time.sleep(2)
            body = '<a href="a/">a/</a><a href="b/">b/</a>'
        data = body.encode()
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the listing was cancelled

    def log_message(self, *args):
        pass


@pytest.mark.skipif(sys.platform != "linux", reason="signals as on Linux")
def test_ctrl_c_stops_a_listing(tmp_path):
    """SIGINT while a remote image folder is listed raises KeyboardInterrupt there and then, not
    after the listing's minutes (issue 66, H5: ignored before)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowListing)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/looping/"
    process = subprocess.Popen([sys.executable, "-c", INTERRUPTED_LISTING, url,
                                str(tmp_path / "cache")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert SlowListing.asked.wait(timeout=120), "no class folder was asked for"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)  # a guard: the listing takes minutes
    finally:
        process.kill()
        server.shutdown()
    assert (process.returncode, out) == (3, "interrupted\n"), err
