"""tests/fault_proxy.py, the proxy the remote tests inject faults with: in front of a real HTTP
server on loopback (Python's), it forwards bytes unchanged and does what its script says."""
import functools
import http.client
import http.server
import json
import subprocess
import sys
import threading
import time

import pytest

from fault_proxies import PROXY, proxy_log, start_fault_proxy

BODY = bytes(range(256)) * 1024  # 256 KiB: several of the proxy's pieces


@pytest.fixture
def server(tmp_path):
    (tmp_path / "shard-00000.stk").write_bytes(BODY)
    (tmp_path / "manifest.json").write_bytes(b"{}")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.func.protocol_version = "HTTP/1.1"  # keep-alive, as libcurl uses it
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.func.log_message = lambda *args: None
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address
    httpd.shutdown()


@pytest.fixture
def proxy(server, fault_proxy):
    def start(script=None):
        host, port = fault_proxy(server, script).rsplit(":", 1)
        return host, int(port)
    return start


def get(address, path, connection=None):
    conn = connection or http.client.HTTPConnection(*address, timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()


def log(address):
    return proxy_log(f"{address[0]}:{address[1]}")


def test_without_faults_every_byte_is_forwarded_over_one_kept_connection(proxy):
    address = proxy()
    conn = http.client.HTTPConnection(*address, timeout=10)
    for _ in range(3):
        assert get(address, "/shard-00000.stk", conn) == (200, BODY)
    assert [(e["path"], e["status"], e["bytes"], e["fault"]) for e in log(address)] == [
        ("/shard-00000.stk", 200, len(BODY), None)] * 3


def test_a_status_burst_answers_for_the_server_then_lets_requests_through(proxy):
    address = proxy({"faults": [{"path": "shard", "status": 503, "times": 2, "skip": 1}]})
    statuses = [get(address, "/shard-00000.stk")[0] for _ in range(4)]
    assert statuses == [200, 503, 503, 200]
    assert get(address, "/manifest.json") == (200, b"{}")  # another path: untouched


def test_a_body_cut_short_ends_the_connection_after_the_bytes_asked(proxy):
    address = proxy({"faults": [{"close_after": 100_000}]})
    conn = http.client.HTTPConnection(*address, timeout=10)
    conn.request("GET", "/shard-00000.stk")
    response = conn.getresponse()
    with pytest.raises(http.client.IncompleteRead) as cut:
        response.read()
    assert cut.value.partial == BODY[:100_000]
    assert get(address, "/shard-00000.stk") == (200, BODY)  # spent after one request


def test_a_reset_mid_body_is_a_reset_not_a_clean_end(proxy):
    address = proxy({"faults": [{"reset_after": 70_000}]})
    conn = http.client.HTTPConnection(*address, timeout=10)
    conn.request("GET", "/shard-00000.stk")
    response = conn.getresponse()
    got = b""
    with pytest.raises(ConnectionResetError):  # a clean close would end the reads instead
        while piece := response.read1(65536):
            got += piece
    assert BODY.startswith(got) and len(got) <= 70_000


def test_a_corrupt_byte_is_inverted_where_asked_and_nowhere_else(proxy):
    address = proxy({"faults": [{"corrupt_at": 65_537}]})
    status, got = get(address, "/shard-00000.stk")
    assert status == 200 and len(got) == len(BODY)
    assert [i for i in range(len(BODY)) if got[i] != BODY[i]] == [65_537]
    assert got[65_537] == BODY[65_537] ^ 0xFF


def test_a_stall_pauses_then_delivers_the_whole_body(proxy):
    address = proxy({"faults": [{"stall_after": 1000, "stall_s": 0.5}]})
    start = time.monotonic()
    assert get(address, "/shard-00000.stk") == (200, BODY)
    assert time.monotonic() - start >= 0.5


def test_the_script_is_replaced_at_run_time_and_a_bad_one_refused(proxy):
    address = proxy()
    conn = http.client.HTTPConnection(*address, timeout=10)
    conn.request("PUT", "/__fault_proxy__/script",
                 body=json.dumps({"faults": [{"path": "manifest", "status": 500}]}))
    response = conn.getresponse()
    assert (response.status, response.read()) == (204, b"")
    assert get(address, "/manifest.json")[0] == 500
    conn.request("PUT", "/__fault_proxy__/script", body=json.dumps({"faults": [{"times": 1}]}))
    response = conn.getresponse()
    assert response.status == 400 and b"exactly one of" in response.read()


def test_a_bad_script_file_is_one_line_and_exit_status_2(server, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"delay": 5}')
    run = subprocess.run([sys.executable, PROXY, "--upstream", f"{server[0]}:{server[1]}",
                          "--script", str(path)], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert run.stderr.strip() == f"fault_proxy: {path}: unknown script keys: delay"


def test_sigterm_ends_it_cleanly_while_a_client_stays_connected(server, tmp_path):
    # A kept connection idle, and one stalled mid-body: the stop waits for neither (on Python
    # 3.12.1 and later, leaving the server's `async with` waited for both, forever).
    process, address = start_fault_proxy(
        server, {"faults": [{"stall_after": 1024, "stall_s": 60}]}, tmp_path)
    host, port = address.rsplit(":", 1)
    idle = http.client.HTTPConnection(host, int(port), timeout=10)
    idle.connect()
    stalled = http.client.HTTPConnection(host, int(port), timeout=10)
    stalled.request("GET", "/shard-00000.stk")
    assert stalled.getresponse().read(1024) == BODY[:1024]
    process.terminate()
    try:
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        idle.close()
        stalled.close()
