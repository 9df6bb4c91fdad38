"""tests/fault_proxy.py for the pytest suites: the fixture `fault_proxy(upstream, script)`
starts one in front of a server ("host:port" or (host, port)) and returns its "host:port";
each is stopped (SIGTERM, a clean exit checked) at the test's end. `proxy_log(address)` reads
the requests it saw."""
import http.client
import json
import os
import subprocess
import sys

import pytest

PROXY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "tests", "fault_proxy.py")


def start_fault_proxy(upstream, script, work):
    """A running proxy to `upstream` with `script` (a dict): (its Popen, "host:port")."""
    if not isinstance(upstream, str):
        upstream = f"{upstream[0]}:{upstream[1]}"
    path = work / f"fault-script-{os.urandom(4).hex()}.json"
    path.write_text(json.dumps(script))
    process = subprocess.Popen([sys.executable, PROXY, "--upstream", upstream, "--script",
                                str(path)], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.startswith("listening "), line
    return process, line.split()[1]


def proxy_log(address):
    """The requests the proxy at `address` ("host:port") has seen, as dicts."""
    connection = http.client.HTTPConnection(address, timeout=10)
    try:
        connection.request("GET", "/__fault_proxy__/log")
        return [json.loads(line) for line in connection.getresponse().read().splitlines()]
    finally:
        connection.close()


@pytest.fixture
def fault_proxy(tmp_path):
    started = []

    def start(upstream, script=None):
        process, address = start_fault_proxy(upstream, script or {}, tmp_path)
        started.append(process)
        return address
    yield start
    for process in started:
        process.terminate()
        assert process.wait(timeout=10) == 0  # SIGTERM ends it cleanly
