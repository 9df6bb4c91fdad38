"""The remote-dataset tests' servers (servers.py) do what the tests rely on: nginx serves byte
ranges and ETags; weed checks SigV4 signatures and keeps its objects over a kill and restart;
and the curl CLI, on the libcurl stoker links, signs S3 requests the way AWS's algorithm says,
the x-amz-content-sha256 and x-amz-security-token headers included (docs/REMOTE-DESIGN.md,
section 4)."""

import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

import servers

BODY = bytes(range(256)) * 40 + b"tail"


def fetch(url, headers=None):
    """(status, headers, body) of a GET."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def test_nginx_serves_whole_files_ranges_and_etags(nginx_server):
    (nginx_server.root / "ds").mkdir()
    (nginx_server.root / "ds" / "shard.stk").write_bytes(BODY)
    url = nginx_server.url + "/ds/shard.stk"
    status, headers, body = fetch(url)
    assert (status, body) == (200, BODY)
    etag = headers["ETag"]
    assert etag
    status, headers, body = fetch(url, {"Range": "bytes=100-1099"})
    assert (status, body, headers["Content-Range"]) == (206, BODY[100:1100],
                                                        f"bytes 100-1099/{len(BODY)}")
    assert fetch(url, {"If-None-Match": etag})[0] == 304
    assert fetch(nginx_server.url + "/ds/missing.stk")[0] == 404


def test_weed_checks_signatures(s3_server):
    path = f"/{s3_server.bucket}/ds/object.bin"
    assert s3_server.request("PUT", path, BODY)[0] == 200
    assert s3_server.request("GET", path) == (200, BODY)
    forged = servers.signed_request(s3_server.url, s3_server.region, s3_server.access_key,
                                    "not-the-secret", "GET", path)
    assert forged[0] == 403 and b"SignatureDoesNotMatch" in forged[1]
    assert fetch(s3_server.url + path)[0] == 403  # unsigned


def test_weed_killed_and_restarted_keeps_its_objects_and_address(s3_alone):
    """After a restart its port opens before the volume behind it serves: GETs answer 500 for
    a few seconds (stoker's retries wait them out), then the object as it was."""
    path = f"/{s3_alone.bucket}/ds/object.bin"
    assert s3_alone.request("PUT", path, BODY)[0] == 200
    s3_alone.kill()
    with pytest.raises(ConnectionRefusedError):
        s3_alone.request("GET", path)
    s3_alone.restart()
    deadline, answer = time.monotonic() + 30, None
    while answer is None or answer[0] != 200:
        assert time.monotonic() < deadline, (answer, servers.log_tail(s3_alone.log))
        time.sleep(0.1)
        answer = s3_alone.request("GET", path)
    assert answer == (200, BODY)


def test_program_prints_one_json_line_and_stops_at_eof(tmp_path):
    """The C++ tests' launcher: one line, then the server goes when stdin closes."""
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "f").write_bytes(b"x")
    launcher = subprocess.Popen([sys.executable, servers.__file__, "nginx", tmp_path / "root",
                                 tmp_path / "work"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    info = json.loads(launcher.stdout.readline())
    if "skip" in info:
        launcher.communicate()
        pytest.skip(info["skip"])
    assert fetch(info["url"] + "/f")[2] == b"x"
    launcher.stdin.close()
    assert launcher.wait(30) == 0
    assert not servers.port_open(int(info["url"].rsplit(":", 1)[1]))


def curl(*args):
    if not shutil.which("curl"):
        pytest.skip("curl is not installed (Debian package curl)")
    return subprocess.run(["curl", "-s", "-v", *args], capture_output=True, check=True)


def sent_header(result, name):
    match = re.search(rf"^> {name}: (.*?)\r?$", result.stderr.decode(), re.M | re.I)
    return match.group(1) if match else None


def status_of(result):
    return int(re.findall(r"^< HTTP/\S+ (\d+)", result.stderr.decode(), re.M)[-1])


def sigv4_args(server, secret=None):
    return ["--aws-sigv4", f"aws:amz:{server.region}:s3", "--user",
            f"{server.access_key}:{secret or server.secret_key}"]


@pytest.mark.parametrize("payload", ["UNSIGNED-PAYLOAD", "sha256"])
@pytest.mark.parametrize("upload", ["file", "buffer"])
def test_curl_signs_put_get_and_head_that_weed_accepts(s3_server, tmp_path, payload, upload):
    source = tmp_path / "upload.bin"
    source.write_bytes(BODY)
    content = "UNSIGNED-PAYLOAD" if payload == "UNSIGNED-PAYLOAD" else hashlib.sha256(
        BODY).hexdigest()
    url = f"{s3_server.url}/{s3_server.bucket}/curl/{payload}/{upload}/b%20c%2Bd~%C3%A9.bin"
    header = ["-H", f"x-amz-content-sha256: {content}"]
    body = ["-T", source] if upload == "file" else ["-X", "PUT", "--data-binary", f"@{source}"]
    put = curl(*sigv4_args(s3_server), *header, *body, url)
    assert status_of(put) == 200
    assert "x-amz-content-sha256" in sent_header(put, "Authorization")
    head = curl(*sigv4_args(s3_server), "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-I",
                url)
    assert status_of(head) == 200
    assert sent_header(head, "Authorization")
    get = curl(*sigv4_args(s3_server), "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url)
    assert (status_of(get), get.stdout) == (200, BODY)
    ranged = curl(*sigv4_args(s3_server), "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                  "-r", "5-9", url)
    assert (status_of(ranged), ranged.stdout) == (206, BODY[5:10])
    wrong = curl(*sigv4_args(s3_server, "wrong-secret"), *header, url)
    assert status_of(wrong) == 403 and b"SignatureDoesNotMatch" in wrong.stdout


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_curl_signature_covers_the_session_token(s3_server, tmp_path, method):
    """weed refuses session tokens for its static identities (InvalidAccessKeyId), so curl's
    signature over x-amz-security-token is checked against servers.py's signer, which weed
    accepts above: the same Authorization for the same request and date."""
    source = tmp_path / "upload.bin"
    source.write_bytes(BODY)
    content = hashlib.sha256(BODY).hexdigest() if method == "PUT" else "UNSIGNED-PAYLOAD"
    url = f"{s3_server.url}/{s3_server.bucket}/token.bin"
    extra = {"x-amz-security-token": "session-token-sentinel/+="}
    upload = ["-T", source] if method == "PUT" else []
    result = curl(*sigv4_args(s3_server), "-H", f"x-amz-content-sha256: {content}", "-H",
                  f"x-amz-security-token: {extra['x-amz-security-token']}", *upload, url)
    expected = servers.sigv4_headers(method, url, s3_server.region, s3_server.access_key,
                                     s3_server.secret_key, content,
                                     sent_header(result, "X-Amz-Date"), extra)
    assert sent_header(result, "Authorization") == expected["authorization"]
    assert "x-amz-security-token" in expected["authorization"]
