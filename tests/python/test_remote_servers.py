"""The object-storage stand-ins in remote_servers.py do what the remote
reader's tests rely on: ranges and request counts are exact, every fault kind
really happens, and a client that retries always gets through."""
import http.client
import http.server
import json
import os
import threading
import time

import pytest

from remote_servers import FAULTS, FaultProxy, MotoServer, RangeServer, StalledServer

DATA = os.urandom(1000)


@pytest.fixture
def upstream(tmp_path):
    (tmp_path / "root" / "ds").mkdir(parents=True)
    (tmp_path / "root" / "ds" / "shard-00000.bin").write_bytes(DATA)
    (tmp_path / "root" / "ds" / "manifest.json").write_text('{"shards": 1}')
    (tmp_path / "outside").write_text("not served")
    with RangeServer(tmp_path / "root") as server:
        yield server


def connect(url, timeout=5):
    return http.client.HTTPConnection(url.split("//")[1], timeout=timeout)


def get(conn, path, rng=None, method="GET", headers=()):
    conn.request(method, path, headers={**({"Range": rng} if rng else {}), **dict(headers)})
    resp = conn.getresponse()
    return resp.status, resp, resp.read()


def test_range_server_ranges_counts_and_keep_alive(upstream):
    conn = connect(upstream.url)
    path = "/ds/shard-00000.bin"
    status, resp, body = get(conn, path)
    assert (status, body, resp.getheader("Content-Length")) == (200, DATA, "1000")
    sock = conn.sock
    for rng, want in [("bytes=10-19", (10, 19)), ("bytes=990-", (990, 999)),
                      ("bytes=-5", (995, 999)), ("bytes=900-5000", (900, 999))]:
        status, resp, body = get(conn, path, rng)
        assert status == 206 and body == DATA[want[0]:want[1] + 1]
        assert resp.getheader("Content-Range") == f"bytes {want[0]}-{want[1]}/1000"
    status, resp, _ = get(conn, path, "bytes=1000-")
    assert (status, resp.getheader("Content-Range")) == (416, "bytes */1000")
    assert get(conn, path, "bytes=5-2")[0] == 400
    assert get(conn, path, "bytes=0-1,5-9")[0] == 400
    status, resp, body = get(conn, path, "bytes=0-99", method="HEAD")
    assert (status, resp.getheader("Content-Length"), body) == (206, "100", b"")
    assert get(conn, "/ds/shard-00001.bin")[0] == 404
    assert get(conn, "/ds")[0] == 404
    assert get(conn, "/../outside")[0] == 404
    get(conn, path, "bytes=10-19")
    assert conn.sock is sock  # one connection served all of them
    assert upstream.requests[(path, "bytes=10-19")] == 2
    assert upstream.requests[(path, "bytes=0-99")] == 1
    assert upstream.requests[(path, None)] == 1
    assert sum(upstream.requests.values()) == 13


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = json.dumps(dict(self.headers.items())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_proxy_passes_host_authorization_and_range_through_unchanged():
    echo = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=echo.serve_forever, args=(0.05,), daemon=True).start()
    try:
        with FaultProxy(f"http://127.0.0.1:{echo.server_address[1]}", [], rate=0) as proxy:
            conn = connect(proxy.url)
            sent = {"Authorization": "AWS4-HMAC-SHA256 Credential=x", "Range": "bytes=0-9",
                    "X-Amz-Date": "20250101T000000Z"}
            status, _, body = get(conn, "/b/k", headers=sent)
            seen = json.loads(body)
            assert status == 200
            assert seen["Host"] == proxy.url.split("//")[1]
            assert {k: seen[k] for k in sent} == sent
    finally:
        echo.shutdown()
        echo.server_close()


def test_a_shaping_proxy_relays_ranges_and_whole_bodies_intact(upstream):
    # Latency and a bandwidth cap change when bytes arrive, never which:
    # paced bodies of several PACE_BYTES pieces and of none arrive whole.
    big = os.urandom(300_000)
    (upstream.root / "ds" / "big.bin").write_bytes(big)
    with FaultProxy(upstream.url, (), rate=0, latency_s=0.01, bytes_per_s=20e6) as proxy:
        conn = connect(proxy.url)
        assert get(conn, "/ds/big.bin")[::2] == (200, big)
        assert get(conn, "/ds/big.bin", "bytes=70000-270000")[::2] == (206, big[70000:270001])
        status, resp, body = get(conn, "/ds/shard-00000.bin", method="HEAD")
        assert (status, resp.getheader("Content-Length"), body) == (200, str(len(DATA)), b"")
        assert proxy.counts == {"clean": 3}


def test_each_fault_kind_happens(upstream):
    path = "/ds/shard-00000.bin"
    with FaultProxy(upstream.url, FAULTS, rate=0, stall_s=3,
                    schedule=["http500", "http503", "bitflip", "shift_range", "shift_range",
                              "truncate", "reset", "reset_body", "stall",
                              "stall_body"]) as proxy:
        conn = connect(proxy.url, timeout=0.3)
        status, _, body = get(conn, path, "bytes=0-499")
        assert status == 500 and b"InternalError" in body
        status, resp, _ = get(conn, path, "bytes=0-499")
        assert (status, resp.getheader("Retry-After")) == (503, "0")
        # Neither reached the upstream.
        assert upstream.requests[(path, "bytes=0-499")] == 0

        status, _, body = get(conn, path, "bytes=0-499")
        assert status == 206 and len(body) == 500
        diff = int.from_bytes(body, "big") ^ int.from_bytes(DATA[:500], "big")
        assert bin(diff).count("1") == 1

        # Another range of the same length, with its own Content-Range: back
        # by shift_bytes (1), or on where the range starts before that.
        for asked, got in [("bytes=10-509", (9, 508)), ("bytes=0-499", (1, 500))]:
            status, resp, body = get(conn, path, asked)
            assert (status, resp.getheader("Content-Range")) == (
                206, f"bytes {got[0]}-{got[1]}/1000")
            assert body == DATA[got[0]:got[1] + 1]

        conn.request("GET", path, headers={"Range": "bytes=0-499"})
        resp = conn.getresponse()
        assert resp.getheader("Content-Length") == "500"
        with pytest.raises(http.client.IncompleteRead) as short:
            resp.read()
        assert len(short.value.partial) < 500
        assert DATA.startswith(short.value.partial)

        conn = connect(proxy.url, timeout=0.3)
        with pytest.raises(ConnectionResetError):
            get(conn, path, "bytes=0-499")
        conn = connect(proxy.url, timeout=0.3)
        with pytest.raises((ConnectionResetError, http.client.IncompleteRead)):
            get(conn, path, "bytes=0-499")

        conn = connect(proxy.url, timeout=0.3)
        with pytest.raises(TimeoutError):
            get(conn, path, "bytes=0-499")
        conn = connect(proxy.url, timeout=0.3)
        conn.request("GET", path, headers={"Range": "bytes=0-499"})
        resp = conn.getresponse()
        assert resp.status == 206
        with pytest.raises(TimeoutError):
            resp.read()

        # The schedule is used up: clean from here on.
        conn = connect(proxy.url)
        assert get(conn, path, "bytes=0-499")[2] == DATA[:500]
        assert proxy.counts == {**{f: 1 for f in FAULTS}, "shift_range": 2, "clean": 1}
        assert [e[3] for e in proxy.events][-1] == "clean"
        started = time.monotonic()
    # stop() does not wait out the stalls.
    assert time.monotonic() - started < 2


def test_no_request_is_faulted_more_than_max_consecutive_times(upstream):
    with FaultProxy(upstream.url, ["http503"], rate=1, max_consecutive=2) as proxy:
        conn = connect(proxy.url)
        statuses = [get(conn, "/ds/manifest.json")[0] for _ in range(6)]
        assert statuses == [503, 503, 200, 503, 503, 200]
        # A different Range is a different request with its own count.
        assert get(conn, "/ds/manifest.json", "bytes=0-3")[0] == 503
        assert proxy.counts == {"http503": 5, "clean": 2}


def test_match_limits_faults_to_matching_paths(upstream):
    with FaultProxy(upstream.url, ["http500"], rate=1, match=r"\.bin$") as proxy:
        conn = connect(proxy.url)
        assert get(conn, "/ds/manifest.json")[0] == 200
        assert get(conn, "/ds/shard-00000.bin")[0] == 500


def fault_pattern(url, seed):
    with FaultProxy(url, {"http500": 1, "http503": 1, "bitflip": 2}, rate=0.2,
                    seed=seed) as proxy:
        conn = connect(proxy.url)
        for i in range(200):
            get(conn, "/ds/shard-00000.bin", f"bytes={i}-{i + 99}")
        return [e[3] for e in proxy.events], proxy.counts


def test_faults_hit_the_configured_fraction_reproducibly(upstream):
    pattern, counts = fault_pattern(upstream.url, seed=1)
    assert 20 <= 200 - counts["clean"] <= 60
    assert counts["http500"] and counts["http503"] and counts["bitflip"]
    assert fault_pattern(upstream.url, seed=1)[0] == pattern
    assert fault_pattern(upstream.url, seed=2)[0] != pattern


def test_a_retrying_client_reads_every_chunk_intact(upstream):
    # Every fault kind, often; bit flips are caught by comparing with the data,
    # as the reader compares with the manifest's checksums.
    with FaultProxy(upstream.url, FAULTS, rate=0.5, max_consecutive=2, stall_s=0.4,
                    seed=3) as proxy:
        attempts = 0
        for start in range(0, 1000, 50):
            want = DATA[start:start + 50]
            for _ in range(3):
                attempts += 1
                conn = connect(proxy.url, timeout=0.15)
                try:
                    status, _, body = get(conn, "/ds/shard-00000.bin",
                                          f"bytes={start}-{start + 49}")
                except (OSError, http.client.HTTPException):
                    continue
                finally:
                    conn.close()
                if status == 206 and body == want:
                    break
            else:
                pytest.fail(f"chunk at {start} never arrived intact")
        assert sum(proxy.counts.values()) == attempts
        assert proxy.counts["clean"] == 20
        assert len(proxy.counts) > 4  # several kinds were actually survived


def test_stalled_server_signals_each_request_and_never_answers():
    with StalledServer() as server:
        conn = connect(server.url, timeout=0.5)
        conn.request("GET", "/ds/manifest.json")
        assert server.connected.wait(30)
        with pytest.raises(TimeoutError):
            conn.getresponse()  # nothing ever comes
        conn.close()
        with server.lock:
            assert server.requests == 1
    # stop() ended the server even with no client left to give up


def test_unknown_fault_names_are_refused():
    with pytest.raises(ValueError, match="bitflop"):
        FaultProxy("http://127.0.0.1:1", ["bitflop"])
    with pytest.raises(ValueError, match="stal"):
        FaultProxy("http://127.0.0.1:1", [], schedule=[None, "stal"])


def sigv4_headers(moto, url, rng):
    """The headers a SigV4 client sends for a ranged GET of url (signed for
    url's host, which is the Host header http.client will send)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest("GET", url, headers={"Range": rng})
    S3SigV4Auth(Credentials(moto.access_key, moto.secret_key), "s3", moto.region).add_auth(req)
    return dict(req.headers.items())


def test_moto_serves_uploads_and_checks_signatures_through_the_proxy(upstream):
    pytest.importorskip("moto.server")
    from botocore.exceptions import ClientError
    with MotoServer() as moto:
        moto.upload(upstream.root / "ds", "s3://bucket/some/ds")
        s3 = moto.client()
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="bucket")["Contents"]]
        assert keys == ["some/ds/manifest.json", "some/ds/shard-00000.bin"]
        got = s3.get_object(Bucket="bucket", Key="some/ds/shard-00000.bin", Range="bytes=5-9")
        assert got["Body"].read() == DATA[5:10] and got["ContentRange"] == "bytes 5-9/1000"

        import boto3
        forged = boto3.client("s3", endpoint_url=moto.url, region_name=moto.region,
                              aws_access_key_id=moto.access_key, aws_secret_access_key="wrong")
        with pytest.raises(ClientError, match="SignatureDoesNotMatch"):
            forged.get_object(Bucket="bucket", Key="some/ds/manifest.json")

        path = "/bucket/some/ds/shard-00000.bin"
        with FaultProxy(moto.url, ["http503"], rate=0, schedule=["http503"]) as proxy:
            conn = connect(proxy.url)
            headers = sigv4_headers(moto, proxy.url + path, "bytes=100-199")
            assert get(conn, path, headers=headers)[0] == 503
            status, _, body = get(conn, path, headers=headers)
            assert (status, body) == (206, DATA[100:200])
            # Signed for moto's own address, the request fails through the
            # proxy: the Host it arrives with is the proxy's.
            headers = sigv4_headers(moto, moto.url + path, "bytes=100-199")
            assert get(conn, path, headers=headers)[0] == 403
        assert moto.env(proxy.url)["AWS_ENDPOINT_URL"] == proxy.url
