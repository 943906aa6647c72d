"""Local stand-ins for object storage, for testing tokpack's remote reader.

RangeServer serves a directory over HTTP with byte ranges and counts what was
asked for; FaultProxy sits in front of any server and breaks a chosen share of
its responses (5xx, resets, stalls, short bodies, flipped bits, other ranges)
in a way that is reproducible and never so persistent that a retrying client
cannot finish, and can add an object store's latency and per-connection
bandwidth to every request;
StalledServer accepts connections and never answers; MotoServer is a local S3
(moto) that checks SigV4 signatures.
"""
import collections
import http.client
import http.server
import random
import re
import socket
import struct
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

# Headers that describe one connection, not the message (RFC 9110 7.6.1); a
# proxy must not pass them on.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
              "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}

FAULTS = ("http500", "http503", "reset", "reset_body", "stall", "stall_body", "truncate",
          "bitflip", "shift_range")
# Faults that damage a body, so they need one from upstream to damage.
BODY_FAULTS = {"reset_body", "stall_body", "truncate", "bitflip"}
# A bandwidth-capped FaultProxy writes bodies in pieces of this size.
PACE_BYTES = 64 << 10


class _Server(http.server.ThreadingHTTPServer):
    """Remembers open connections so stop() can end idle keep-alive ones,
    whose handler threads would otherwise wait on them forever."""
    daemon_threads = True
    # socketserver's default backlog of 5 drops the connections of a client
    # that opens more at once (a reader's prefetch threads), costing each a
    # retransmitted handshake: hundreds of ms that no real store charges.
    request_queue_size = 128

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)
        self.live = set()
        self.live_lock = threading.Lock()

    def process_request(self, request, client_address):
        with self.live_lock:
            self.live.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.live_lock:
            self.live.discard(request)
        super().shutdown_request(request)

    def close_live(self):
        with self.live_lock:
            live = list(self.live)
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the reader's connection pool expects
    # Headers and body go out in separate writes; with Nagle's algorithm and
    # delayed ACKs that costs 40 ms a response on loopback.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass  # pytest shows failures; a line per request would bury them

    def send_body_response(self, status, headers, body, head=False):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def handle_one_request(self):
        # A client that gives up mid-response (its timeout, its own reset) is
        # what these servers exist to provoke, not an error worth a traceback.
        try:
            super().handle_one_request()
        except OSError:
            self.close_connection = True


class _Base:
    """start()/stop(), a context manager, and .url for a _Server."""

    def _handler(self):
        raise NotImplementedError

    def start(self):
        self._server = _Server(self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)  # stop() waits one poll interval
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def stop(self):
        self._server.shutdown()
        self._server.close_live()
        self._server.server_close()
        self._thread.join()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def parse_range(header, size):
    """(start, end) inclusive for a `bytes=a-b`, `bytes=a-` or `bytes=-n` header;
    "unsatisfiable" when no byte of it exists; None when it is not one range of
    that form (RFC 9110 would ignore it; this server refuses it, so that a
    client sending anything else finds out)."""
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
    if not m or m.group(1) == m.group(2) == "":
        return None
    first, last = m.group(1), m.group(2)
    if first == "":
        n = int(last)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size - 1
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if last != "" and int(last) < start:
        return None
    if start >= size:
        return "unsatisfiable"
    return start, end


class RangeServer(_Base):
    """Serves the files under root_dir at http://127.0.0.1:PORT/<relative path>.

    requests: a Counter of (path, range header or None) -> number of requests
    (GET and HEAD, any outcome), e.g. requests[("/ds/shard-00000.bin",
    "bytes=0-1048575")]; take lock when reading it while a client runs.
    """

    def __init__(self, root_dir):
        self.root = Path(root_dir).resolve()
        self.requests = collections.Counter()
        self.lock = threading.Lock()

    def _handler(self):
        server = self

        class Handler(_Handler):
            def do_HEAD(self):
                self.serve(head=True)

            def do_GET(self):
                self.serve(head=False)

            def serve(self, head):
                path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
                rng = self.headers.get("Range")
                with server.lock:
                    server.requests[(path, rng)] += 1
                file = (server.root / path.lstrip("/")).resolve()
                if not file.is_relative_to(server.root) or not file.is_file():
                    self.send_body_response(404, [("Content-Length", "0")], b"", head)
                    return
                size = file.stat().st_size
                if rng is None:
                    start, end, status = 0, size - 1, 200
                else:
                    r = parse_range(rng, size)
                    if r is None:
                        self.send_body_response(400, [("Content-Length", "0")], b"", head)
                        return
                    if r == "unsatisfiable":
                        self.send_body_response(
                            416, [("Content-Range", f"bytes */{size}"),
                                  ("Content-Length", "0")], b"", head)
                        return
                    (start, end), status = r, 206
                headers = [("Content-Type", "application/octet-stream"),
                           ("Content-Length", str(end - start + 1)),
                           ("Accept-Ranges", "bytes")]
                if status == 206:
                    headers.append(("Content-Range", f"bytes {start}-{end}/{size}"))
                with file.open("rb") as f:
                    f.seek(start)
                    body = f.read(end - start + 1)
                self.send_body_response(status, headers, body, head)

        return Handler


class FaultProxy(_Base):
    """An HTTP proxy at .url that forwards every request to upstream_url and
    damages some of the responses.

    faults: the kinds to inject, an iterable of names from FAULTS (equal
      weights) or a dict name -> weight:
        http500     500 with an S3-style InternalError body, upstream not asked
        http503     503 SlowDown with Retry-After: 0, upstream not asked
        reset       RST (SO_LINGER 0) before any byte of the response
        reset_body  headers and part of the body, then RST
        stall       nothing for stall_s seconds, then the real response
        stall_body  headers and part of the body, stall_s seconds, then the rest
        truncate    headers with the full Content-Length, part of the body, then
                    a clean close (FIN)
        bitflip     the full response with one bit of the body flipped
        shift_range upstream is asked for the Range moved by shift_bytes (back,
                    or on where the range starts before shift_bytes), and its
                    reply relayed: a 206 of another range, usually of the same
                    length, with that range's own Content-Range
      Body faults need a non-empty body (not HEAD, 404, 416, ...), and
      shift_range a request with a "Range: bytes=a-b": on other requests they
      are not injected and the response counts as clean.
    rate: the probability that a request gets a fault.
    seed: makes the choices reproducible. Each choice is drawn from (seed,
      method, path, Range, attempt number), not from one shared stream, so it
      does not depend on how concurrent requests interleave.
    max_consecutive: a request (same method, path and Range) is never faulted
      more than this many times in a row, so a client that retries at least
      that often always gets through.
    stall_s: how long stalls last; stop() ends them early.
    shift_bytes: how far shift_range moves a range.
    match: a regex; only requests whose path it matches (re.search) get faults.
    schedule: a list of fault names or None (clean) for the first matching
      requests in arrival order, before rate and max_consecutive take over.
    latency_s: every request waits this long before it is relayed (an
      object store's time to first byte; stop() ends the wait early).
    bytes_per_s: every response body is sent at most this fast, per
      connection (object stores cap each connection, not the sum), in
      PACE_BYTES writes; None: as fast as the socket takes it.
    With faults=() and rate=0 it only shapes: a stand-in for a real link to
    object storage, for benchmarks (`tc netem` needs a kernel module and
    root, which not every machine has).

    The client's Host header is forwarded unchanged, so a SigV4 signature made
    for the proxy's address (the URL the client was given) stays valid.

    counts: a Counter of injected fault name -> number, plus "clean".
    events: (method, path, Range or None, fault name or "clean") per request,
    in the order they were recorded. Take lock when reading them while a client
    runs.
    """

    def __init__(self, upstream_url, faults, *, rate=0.2, seed=0, max_consecutive=2,
                 stall_s=5.0, match=None, schedule=None, latency_s=0.0, bytes_per_s=None,
                 shift_bytes=1):
        up = urllib.parse.urlsplit(upstream_url)
        self.upstream = (up.hostname, up.port or 80)
        self.weights = dict(faults) if isinstance(faults, dict) else {f: 1 for f in faults}
        unknown = (set(self.weights) | set(schedule or [])) - set(FAULTS) - {None}
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULTS}")
        self.rate = rate
        self.seed = seed
        self.max_consecutive = max_consecutive
        self.stall_s = stall_s
        self.shift_bytes = shift_bytes
        self.match = re.compile(match) if match else None
        self.schedule = collections.deque(schedule or [])
        self.latency_s = latency_s
        self.bytes_per_s = bytes_per_s
        self.counts = collections.Counter()
        self.events = []
        self.lock = threading.Lock()
        self._attempts = collections.Counter()
        self._streak = collections.Counter()
        self._stopping = threading.Event()

    def stop(self):
        self._stopping.set()
        super().stop()

    def _choose(self, key):
        """The fault for this attempt at request `key` (or None), and a Random
        for where in the body to apply it."""
        with self.lock:
            attempt = self._attempts[key]
            self._attempts[key] += 1
            rng = random.Random(f"{self.seed}|{key}|{attempt}")
            if self.match and not self.match.search(key[1]):
                return None, rng
            if self.schedule:
                return self.schedule.popleft(), rng
            if self._streak[key] >= self.max_consecutive or rng.random() >= self.rate:
                return None, rng
            kinds = [k for k, w in self.weights.items() if w > 0]
            if not kinds:
                return None, rng
            return rng.choices(kinds, [self.weights[k] for k in kinds])[0], rng

    def _shifted(self, rng):
        """The Range header shift_range sends upstream instead of `rng`, or
        None when `rng` is not one range "bytes=a-b"."""
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", (rng or "").strip())
        if not m:
            return None
        a, b = int(m.group(1)), int(m.group(2))
        d = -self.shift_bytes if a >= self.shift_bytes else self.shift_bytes
        return f"bytes={a + d}-{b + d}"

    def _record(self, key, fault):
        with self.lock:
            self._streak[key] = self._streak[key] + 1 if fault else 0
            self.counts[fault or "clean"] += 1
            self.events.append((*key, fault or "clean"))

    def _handler(self):
        proxy = self

        class Handler(_Handler):
            upstream = None

            def do_GET(self):
                self.relay()

            do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

            def fetch(self, body, rng=None):
                """The upstream's (status, headers, body), on this client
                connection's own upstream connection, with Range `rng`
                instead of the client's when given; a stale keep-alive
                connection gets one retry on a fresh one."""
                headers = [(k, rng if rng and k.lower() == "range" else v)
                           for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
                for retry in (False, True):
                    if self.upstream is None:
                        self.upstream = http.client.HTTPConnection(*proxy.upstream, timeout=30)
                    try:
                        # skip_host: the client's own Host goes through (see the class doc).
                        self.upstream.putrequest(self.command, self.path, skip_host=True,
                                                 skip_accept_encoding=True)
                        for k, v in headers:
                            self.upstream.putheader(k, v)
                        self.upstream.endheaders(body or None)
                        resp = self.upstream.getresponse()
                        data = resp.read()
                        # send_response() writes its own Date and Server.
                        out = [(k, v) for k, v in resp.getheaders()
                               if k.lower() not in HOP_BY_HOP | {"date", "server"}]
                        if self.command != "HEAD":
                            out = [(k, v) for k, v in out if k.lower() != "content-length"]
                            out.append(("Content-Length", str(len(data))))
                        return resp.status, out, data
                    except (OSError, http.client.HTTPException):
                        self.upstream.close()
                        self.upstream = None
                        if retry:
                            raise

            def reset(self):
                # SO_LINGER 0 turns close() into an RST. rfile holds a reference
                # to the socket, so it must be closed too for close() to happen.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
                self.rfile.close()
                self.close_connection = True

            def send_body_response(self, status, headers, body, head=False):
                if not proxy.bytes_per_s or head:
                    super().send_body_response(status, headers, body, head)
                    return
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                t0 = time.monotonic()
                for at in range(0, len(body), PACE_BYTES):
                    self.wfile.write(body[at:at + PACE_BYTES])
                    early = t0 + (at + PACE_BYTES) / proxy.bytes_per_s - time.monotonic()
                    if early > 0 and proxy._stopping.wait(early):
                        return

            def relay(self):
                if proxy.latency_s:
                    proxy._stopping.wait(proxy.latency_s)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = (self.command, urllib.parse.urlsplit(self.path).path,
                       self.headers.get("Range"))
                fault, rng = proxy._choose(key)
                head = self.command == "HEAD"
                shifted = proxy._shifted(key[2]) if fault == "shift_range" else None
                if fault == "shift_range" and shifted is None:
                    fault = None
                if fault not in BODY_FAULTS:
                    # Before a stall, not after: a client that timed out and
                    # retries must find this fault already on the streak.
                    proxy._record(key, fault)
                if fault in ("http500", "http503", "reset"):
                    if fault == "reset":
                        self.reset()
                        return
                    code, status = ("InternalError", 500) if fault == "http500" \
                        else ("SlowDown", 503)
                    err = f"<Error><Code>{code}</Code><Message>injected by FaultProxy" \
                          f"</Message></Error>".encode()
                    headers = [("Content-Type", "application/xml"),
                               ("Content-Length", str(len(err)))]
                    if status == 503:
                        headers.append(("Retry-After", "0"))
                    self.send_body_response(status, headers, err, head)
                    return
                if fault == "stall":
                    proxy._stopping.wait(proxy.stall_s)
                try:
                    status, headers, data = self.fetch(body, shifted)
                except (OSError, http.client.HTTPException):
                    if fault in BODY_FAULTS:
                        proxy._record(key, None)
                    self.send_body_response(502, [("Content-Length", "0")], b"", head)
                    return
                if fault in BODY_FAULTS:
                    if head or not data:
                        fault = None
                    proxy._record(key, fault)
                cut = rng.randrange(len(data)) if fault in BODY_FAULTS else 0
                if fault == "bitflip":
                    data = bytearray(data)
                    data[cut] ^= 1 << rng.randrange(8)
                    data = bytes(data)
                if fault not in ("reset_body", "stall_body", "truncate"):
                    self.send_body_response(status, headers, data, head)
                    return
                self.send_body_response(status, headers, data[:cut])
                if fault == "reset_body":
                    self.reset()
                elif fault == "truncate":
                    self.close_connection = True
                else:
                    proxy._stopping.wait(proxy.stall_s)
                    self.wfile.write(data[cut:])

            def finish(self):
                super().finish()
                if self.upstream is not None:
                    self.upstream.close()

        return Handler


class StalledServer:
    """Listens on 127.0.0.1 at .url, reads each request and never answers (a
    server that hangs), until the client gives up or stop().

    connected: an Event set once a client has connected and sent a whole
    request, so a test knows the client is now waiting for the answer.
    requests: how many requests arrived (take lock to read it while a client
    runs).
    """

    def start(self):
        self.connected = threading.Event()
        self.requests = 0
        self.lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # stop() waits one poll interval
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        return self

    def _accept(self):
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            t = threading.Thread(target=self._hold, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _hold(self, conn):
        conn.settimeout(0.05)
        data = b""
        with conn:
            while not self._stopping.is_set():
                try:
                    chunk = conn.recv(4096)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not chunk:
                    return  # the client gave up
                data += chunk
                if b"\r\n\r\n" in data:
                    data = b""
                    with self.lock:
                        self.requests += 1
                    self.connected.set()

    def stop(self):
        self._stopping.set()
        for t in list(self._threads):
            t.join()
        self._listener.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class MotoServer:
    """moto's S3 on 127.0.0.1 at .url (ephemeral port), checking SigV4.

    At start it creates an IAM user with full access and turns on moto's
    request authentication, so only requests signed with .access_key /
    .secret_key (and for the Host they were sent with) succeed; moto's default
    accepts any signature, which would hide a broken signer. moto's state
    (buckets, users, the authentication switch) is global to the process, so
    stop() resets it; run one MotoServer at a time.

    upload(local_dir, "s3://bucket/prefix") copies a directory's files (the
    bucket is created if missing); client() is a path-style boto3 S3 client;
    env(endpoint_url=None) gives the variables a client needs (pass a
    FaultProxy's .url to send it through the proxy).
    """

    def __init__(self, region="us-east-1"):
        self.region = region

    def start(self):
        moto_server = pytest.importorskip("moto.server", reason="pip install 'moto[server]'")
        self._moto = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0,
                                                    verbose=False)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.url = f"http://{host}:{port}"
        self.access_key, self.secret_key = "testing", "testing"  # anything, until auth is on
        iam = self.client("iam")
        iam.create_user(UserName="tokpack")
        iam.put_user_policy(
            UserName="tokpack", PolicyName="all",
            PolicyDocument='{"Version": "2012-10-17", "Statement": '
                           '[{"Effect": "Allow", "Action": "*", "Resource": "*"}]}')
        key = iam.create_access_key(UserName="tokpack")["AccessKey"]
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        self._moto_api("reset-auth", b"0")
        return self

    def _moto_api(self, what, body):
        conn = http.client.HTTPConnection(self.url.split("//")[1], timeout=10)
        try:
            conn.request("POST", f"/moto-api/{what}", body=body)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200, (what, resp.status)
        finally:
            conn.close()

    def stop(self):
        self._moto_api("reset-auth", b"inf")
        self._moto_api("reset", b"")
        self._moto.stop()
        # ThreadedMotoServer.stop() leaves the listening socket open.
        self._moto._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def client(self, service="s3", endpoint_url=None, **config):
        import boto3
        from botocore.config import Config
        return boto3.client(
            service, endpoint_url=endpoint_url or self.url, region_name=self.region,
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
            config=Config(s3={"addressing_style": "path"}, **config))

    def upload(self, local_dir, s3_url):
        u = urllib.parse.urlsplit(s3_url)
        bucket, prefix = u.netloc, u.path.strip("/")
        s3 = self.client()
        if bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
            # us-east-1 is the one region that refuses a LocationConstraint.
            where = {} if self.region == "us-east-1" else {
                "CreateBucketConfiguration": {"LocationConstraint": self.region}}
            s3.create_bucket(Bucket=bucket, **where)
        for f in sorted(Path(local_dir).rglob("*")):
            if f.is_file():
                key = "/".join(filter(None, [prefix, f.relative_to(local_dir).as_posix()]))
                with f.open("rb") as body:
                    s3.put_object(Bucket=bucket, Key=key, Body=body)

    def env(self, endpoint_url=None):
        return {"AWS_ENDPOINT_URL": endpoint_url or self.url,
                "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": self.region}

    def setenv(self, monkeypatch, endpoint_url=None):
        """Points this process (and children given os.environ) at the
        server, or at endpoint_url (a proxy in front of it), for one test."""
        for k, v in self.env(endpoint_url).items():
            monkeypatch.setenv(k, v)
