#!/usr/bin/env python3
"""An HTTP/1.1 proxy for the remote tests and benchmarks: sits between stoker and a real server
(nginx, SeaweedFS) on loopback, forwards every byte unchanged (so S3 signatures still match:
the client signs the Host it connects to, and the proxy keeps it), and injects the faults a
script asks for, per request, in order.

    fault_proxy.py --upstream 127.0.0.1:PORT [--listen 127.0.0.1:0] [--script FILE]

Prints `listening HOST:PORT` on stdout once it accepts, then serves until SIGTERM or SIGINT.

The script (JSON) is an object:
  {"delay_ms": 0,            added before each response's first byte (a round trip's latency)
   "rate_mb_s": 0,           a cap on each connection's response bytes, MB/s (0: none)
   "faults": [RULE, ...]}    tried in order for each request; the first that matches acts
A RULE: {"path": SUBSTRING (default: every path), "method": "GET" (default: any),
         "times": N (default 1: how many requests it acts on, then it is spent),
         "skip": N (default 0: matching requests let through first),
         and one action:
  "status": 503             answer with that status and an empty body, upstream not asked
  "reset_after": BYTES      forward, then reset the connection (RST) after BYTES of the body
  "close_after": BYTES      forward, then close cleanly after BYTES of the body (cut short)
  "stall_after": BYTES, "stall_s": S   forward, pause S seconds after BYTES of the body
  "corrupt_at": OFFSET      forward, with the body byte at OFFSET inverted}

Control, answered by the proxy itself (never forwarded):
  PUT /__fault_proxy__/script   replaces the script with the request's JSON body
  GET /__fault_proxy__/log      the requests so far, one JSON object a line: method, path,
                                status, bytes sent after the head, and the fault applied
"""
import argparse
import asyncio
import json
import signal
import socket
import struct
import sys

CONTROL = "/__fault_proxy__/"
CHUNK = 64 * 1024
ACTIONS = ("status", "reset_after", "close_after", "stall_after", "corrupt_at")


class Script:
    """The faults to inject; each rule counts the requests it has seen."""

    def __init__(self, spec):
        spec = dict(spec)
        self.delay_s = float(spec.pop("delay_ms", 0)) / 1000
        self.rate = float(spec.pop("rate_mb_s", 0)) * 1e6
        self.rules = [dict(rule, seen=0) for rule in spec.pop("faults", [])]
        if spec:
            raise ValueError(f"unknown script keys: {', '.join(sorted(spec))}")
        for rule in self.rules:
            actions = [a for a in ACTIONS if a in rule]
            if len(actions) != 1:
                raise ValueError(f"a rule needs exactly one of {', '.join(ACTIONS)}: {rule}")
            rule["action"] = actions[0]

    def fault_for(self, method, path):
        """The rule that acts on this request, or None; counts it."""
        for rule in self.rules:
            if rule.get("path", "") not in path or rule.get("method", method) != method:
                continue
            rule["seen"] += 1
            skip = rule.get("skip", 0)
            if skip < rule["seen"] <= skip + rule.get("times", 1):
                return rule
        return None


class Proxy:
    def __init__(self, upstream, script):
        self.upstream = upstream
        self.script = script
        self.log = []

    async def serve_client(self, reader, writer):
        upstream = None
        try:
            while True:
                head = await read_head(reader)
                if head is None:
                    return
                method, path, headers = parse_request(head)
                if headers.get("expect", "").lower() == "100-continue":
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # upstream's is dropped
                body = await read_body(reader, headers, method=method)
                if path.startswith(CONTROL):
                    await self.control(method, path, body, writer)
                    continue
                rule = self.script.fault_for(method, path)
                entry = {"method": method, "path": path, "fault": rule and rule["action"]}
                self.log.append(entry)
                if rule and rule["action"] == "status":
                    entry.update(status=rule["status"], bytes=0)
                    writer.write(f"HTTP/1.1 {rule['status']} Injected\r\nContent-Length: 0\r\n"
                                 "\r\n".encode())
                    await writer.drain()
                    continue
                if upstream is None:
                    upstream = await asyncio.open_connection(*self.upstream)
                up_reader, up_writer = upstream
                up_writer.write(head + body)
                await up_writer.drain()
                if not await self.relay_response(up_reader, writer, method, rule, entry):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            if upstream is not None:
                upstream[1].close()
            writer.close()

    async def relay_response(self, up_reader, writer, method, rule, entry):
        """Forwards one response (after any interim 1xx); False once the connection is over."""
        while True:
            head = await read_head(up_reader)
            if head is None:
                return False
            status = int(head.split(b" ", 2)[1])
            if status >= 200:
                break  # interim responses (100 Continue) are not forwarded: see serve_client
        entry["status"] = status
        headers = parse_headers(head)
        if self.script.delay_s:
            await asyncio.sleep(self.script.delay_s)
        writer.write(head)
        sent = 0
        action = rule and rule["action"]
        async for piece in body_pieces(up_reader, headers, method, status):
            if action in ("reset_after", "close_after", "stall_after"):
                cut = rule[action] - sent
                if cut <= len(piece):
                    writer.write(piece[:cut])
                    await writer.drain()
                    if action != "stall_after":
                        entry["bytes"] = sent + cut
                        if action == "reset_after":
                            reset(writer)
                        return False
                    await asyncio.sleep(rule["stall_s"])
                    piece, sent, action = piece[cut:], sent + cut, None
            if action == "corrupt_at" and sent <= rule["corrupt_at"] < sent + len(piece):
                at = rule["corrupt_at"] - sent
                piece = piece[:at] + bytes([piece[at] ^ 0xFF]) + piece[at + 1:]
            writer.write(piece)
            sent += len(piece)
            await writer.drain()
            if self.script.rate:
                await asyncio.sleep(len(piece) / self.script.rate)
        entry["bytes"] = sent
        return headers.get("connection", "").lower() != "close"

    async def control(self, method, path, body, writer):
        if method == "PUT" and path == CONTROL + "script":
            try:
                self.script = Script(json.loads(body))
                status, reply = 204, b""
            except (ValueError, TypeError) as e:
                status, reply = 400, str(e).encode()
        elif method == "GET" and path == CONTROL + "log":
            status, reply = 200, "".join(json.dumps(e) + "\n" for e in self.log).encode()
        else:
            status, reply = 404, b""
        writer.write(f"HTTP/1.1 {status} Control\r\nContent-Length: {len(reply)}\r\n\r\n"
                     .encode() + reply)
        await writer.drain()


async def read_head(reader):
    """The bytes of a request's or response's head, or None at a clean end of the stream."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise
        return None


def parse_headers(head):
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        if b":" in line:
            name, value = line.split(b":", 1)
            headers[name.strip().lower().decode()] = value.strip().decode()
    return headers


def parse_request(head):
    method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
    return method, path, parse_headers(head)


async def read_body(reader, headers, method):
    """A request's body (Content-Length only: the clients here send no chunked bodies)."""
    if "chunked" in headers.get("transfer-encoding", ""):
        raise ConnectionError(f"{method}: chunked request bodies are not supported")
    return await reader.readexactly(int(headers.get("content-length", 0)))


async def body_pieces(reader, headers, method, status):
    """A response's body as raw pieces, framing bytes included (forwarded as they came)."""
    if method == "HEAD" or status in (204, 304):
        return
    if "chunked" in headers.get("transfer-encoding", ""):
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            yield size_line
            if size == 0:
                yield await reader.readuntil(b"\r\n")  # no trailers from these servers
                return
            yield await reader.readexactly(size + 2)
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left:
            piece = await reader.read(min(CHUNK, left))
            if not piece:
                raise ConnectionError("upstream closed mid-body")
            left -= len(piece)
            yield piece
    else:  # the body runs to the end of the connection
        while piece := await reader.read(CHUNK):
            yield piece


def reset(writer):
    """Closes with an RST, not a FIN: SO_LINGER on, timeout 0."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def host_port(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


async def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--upstream", required=True, type=host_port)
    p.add_argument("--listen", default="127.0.0.1:0", type=host_port)
    p.add_argument("--script", help="a JSON file (default: no faults)")
    a = p.parse_args(argv)
    try:
        spec = json.load(open(a.script)) if a.script else {}
        proxy = Proxy(a.upstream, Script(spec))
    except (OSError, ValueError) as e:
        p.exit(2, f"fault_proxy: {a.script}: {e}\n")
    server = await asyncio.start_server(proxy.serve_client, *a.listen)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening {host}:{port}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        # Not `async with server`: from Python 3.12.1 its exit waits for the clients still
        # connected (a stalled read), forever; asyncio.run's end cancels their handlers.
        server.close()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
