"""Download with resume, retries and checksums, against a local HTTP server (no network)."""

from __future__ import annotations

import gzip
import hashlib
import logging
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from personalir.data.download import (
    ChecksumMismatch,
    DownloadError,
    MissingChecksum,
    download_domain,
    download_file,
    locate_local,
    read_checksums,
    remote_paths,
)

NAME = "Toys.jsonl.gz"
PAYLOAD = gzip.compress(random.Random(0).randbytes(40_000), mtime=0)  # incompressible, ~40 kB
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


class Handler(BaseHTTPRequestHandler):
    """Serves ``server.files``; honours ``Range: bytes=N-`` when ``server.honor_range``.

    ``server.actions`` is consumed one per request: ``"500"`` answers an error, ``"truncate"``
    announces the full length but sends half the body and closes the connection.
    """

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        srv = self.server
        rng = self.headers.get("Range")
        srv.requests.append((self.path, rng))
        action = srv.actions.pop(0) if srv.actions else None
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        if action == "500":
            self.send_error(500)
            return
        start = 0
        if rng and srv.honor_range:
            start = int(rng.removeprefix("bytes=").rstrip("-"))
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        chunk = body[start:]
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        if action == "truncate":
            chunk = chunk[: len(chunk) // 2]
            self.close_connection = True
        self.wfile.write(chunk)
        srv.bytes_sent += len(chunk)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.files = {f"/data/{NAME}": PAYLOAD}
    srv.honor_range = True
    srv.actions = []
    srv.requests = []
    srv.bytes_sent = 0
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/data/"
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


@pytest.fixture
def sums(tmp_path):
    path = tmp_path / "checksums.sha256"
    path.write_text(f"# recorded\n{PAYLOAD_SHA}  {NAME}\n")
    return path


def fetch(server, tmp_path, checksums, **kw):
    kw.setdefault("progress", False)
    kw.setdefault("sleep", lambda s: None)
    kw.setdefault("chunk_size", 4096)
    return download_file(server.url + NAME, tmp_path / "raw" / NAME, checksums_path=checksums, **kw)


def test_full_download(server, tmp_path, sums):
    dest = fetch(server, tmp_path, sums, progress=True)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [(f"/data/{NAME}", None)]
    assert sorted(p.name for p in dest.parent.iterdir()) == [NAME]  # no .part left


def test_resume_from_partial_file(server, tmp_path, sums):
    part = tmp_path / "raw" / f"{NAME}.part"
    part.parent.mkdir()
    part.write_bytes(PAYLOAD[:10_000])
    dest = fetch(server, tmp_path, sums)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [(f"/data/{NAME}", "bytes=10000-")]
    assert server.bytes_sent == len(PAYLOAD) - 10_000


def test_server_ignoring_range_restarts_from_zero(server, tmp_path, sums):
    server.honor_range = False
    part = tmp_path / "raw" / f"{NAME}.part"
    part.parent.mkdir()
    part.write_bytes(b"X" * 10_000)  # appending to this would corrupt the file
    dest = fetch(server, tmp_path, sums)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [(f"/data/{NAME}", "bytes=10000-")]


def test_complete_part_answered_416_is_kept(server, tmp_path, sums):
    part = tmp_path / "raw" / f"{NAME}.part"
    part.parent.mkdir()
    part.write_bytes(PAYLOAD)
    assert fetch(server, tmp_path, sums).read_bytes() == PAYLOAD
    assert server.bytes_sent == 0


def test_part_longer_than_file_restarts(server, tmp_path, sums):
    part = tmp_path / "raw" / f"{NAME}.part"
    part.parent.mkdir()
    part.write_bytes(PAYLOAD + b"stale tail")
    assert fetch(server, tmp_path, sums).read_bytes() == PAYLOAD
    assert [r for _, r in server.requests] == [f"bytes={len(PAYLOAD) + 10}-", None]


def test_interrupted_transfer_is_retried_and_resumed(server, tmp_path, sums):
    server.actions = ["truncate"]
    delays = []
    dest = fetch(server, tmp_path, sums, sleep=delays.append, backoff_s=0.5)
    assert dest.read_bytes() == PAYLOAD
    half = len(PAYLOAD) // 2
    assert server.requests == [(f"/data/{NAME}", None), (f"/data/{NAME}", f"bytes={half}-")]
    assert delays == [0.5]


def test_server_error_is_retried_then_given_up(server, tmp_path, sums):
    server.actions = ["500"] * 10
    with pytest.raises(DownloadError, match="giving up after 3 attempts"):
        fetch(server, tmp_path, sums, retries=2)
    assert len(server.requests) == 3


def test_not_found_is_not_retried(server, tmp_path, sums):
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_file(server.url + "nope.gz", tmp_path / NAME, checksums_path=sums, progress=False)
    assert len(server.requests) == 1


def test_checksum_mismatch_raises_and_quarantines(server, tmp_path):
    wrong = "0" * 64
    sums = tmp_path / "checksums.sha256"
    sums.write_text(f"{wrong}  {NAME}\n")
    with pytest.raises(ChecksumMismatch) as info:
        fetch(server, tmp_path, sums)
    message = str(info.value)
    assert NAME in message and wrong in message and PAYLOAD_SHA in message
    raw = tmp_path / "raw"
    assert sorted(p.name for p in raw.iterdir()) == [f"{NAME}.corrupt"]
    assert (raw / f"{NAME}.corrupt").read_bytes() == PAYLOAD


def test_existing_file_is_verified_not_fetched(server, tmp_path, sums):
    dest = tmp_path / "raw" / NAME
    dest.parent.mkdir()
    dest.write_bytes(PAYLOAD)
    fetch(server, tmp_path, sums)
    assert server.requests == []
    dest.write_bytes(PAYLOAD[:-1] + b"!")
    with pytest.raises(ChecksumMismatch):
        fetch(server, tmp_path, sums)
    assert not dest.exists()


def test_missing_checksum_error_mode_refuses_before_downloading(server, tmp_path):
    sums = tmp_path / "checksums.sha256"
    sums.write_text("")
    with pytest.raises(MissingChecksum, match=NAME):
        fetch(server, tmp_path, sums, on_missing_checksum="error")
    assert server.requests == []
    assert not (tmp_path / "raw").exists()


def test_missing_checksum_record_mode_writes_observed_and_warns(server, tmp_path, caplog):
    sums = tmp_path / "checksums.sha256"
    sums.write_text("")
    with caplog.at_level(logging.WARNING, logger="personalir.data.download"):
        dest = fetch(server, tmp_path, sums, on_missing_checksum="record")
    assert dest.read_bytes() == PAYLOAD
    observed = tmp_path / "checksums.observed.sha256"
    assert read_checksums(observed) == {NAME: PAYLOAD_SHA}
    assert sums.read_text() == ""  # the recorded file is never written
    assert "UNVERIFIED DOWNLOAD" in caplog.text and PAYLOAD_SHA in caplog.text


def test_rejects_unknown_missing_checksum_mode(tmp_path, sums):
    with pytest.raises(ValueError, match="on_missing_checksum"):
        download_file(
            "http://127.0.0.1:9/x",
            tmp_path / NAME,
            checksums_path=sums,
            on_missing_checksum="ignore",
        )


def test_refuses_non_http_urls(tmp_path, sums):
    # urlopen would read a local file for file:; only http(s) answers are handled.
    local = tmp_path / "local.bin"
    local.write_bytes(PAYLOAD)
    with pytest.raises(DownloadError, match="only http and https"):
        download_file(local.as_uri(), tmp_path / NAME, checksums_path=sums, progress=False)
    assert not (tmp_path / NAME).exists()


def test_download_domain_uses_official_layout(server, tmp_path):
    meta = gzip.compress(b'{"parent_asin": "P1"}\n', mtime=0)
    rel = remote_paths("Toys")
    assert rel == {
        "review": "raw/review_categories/Toys.jsonl.gz",
        "meta": "raw/meta_categories/meta_Toys.jsonl.gz",
    }
    server.files = {"/data/" + rel["review"]: PAYLOAD, "/data/" + rel["meta"]: meta}
    sums = tmp_path / "sums.txt"
    sums.write_text(
        f"{PAYLOAD_SHA}  Toys.jsonl.gz\n{hashlib.sha256(meta).hexdigest()} *meta_Toys.jsonl.gz\n"
    )
    paths = download_domain(
        "Toys",
        tmp_path / "raw",
        checksums_path=sums,
        base_url=server.url.rstrip("/"),
        progress=False,
    )
    assert paths["review"].read_bytes() == PAYLOAD and paths["meta"].read_bytes() == meta


def test_read_checksums_rejects_malformed_lines(tmp_path):
    path = tmp_path / "s.sha256"
    path.write_text("not-a-hash  file.gz\n")
    with pytest.raises(ValueError, match=r"s\.sha256:1"):
        read_checksums(path)
    assert read_checksums(tmp_path / "absent.sha256") == {}


# ---------------------------------------------------------------------------------------------
# Local folder


def test_locate_local_finds_plain_and_gz(tmp_path):
    (tmp_path / "Toys.jsonl").write_text("")
    (tmp_path / "meta_Toys.jsonl.gz").write_bytes(b"")
    assert locate_local(tmp_path, "Toys") == {
        "review": tmp_path / "Toys.jsonl",
        "meta": tmp_path / "meta_Toys.jsonl.gz",
    }


def test_locate_local_lists_what_it_looked_for(tmp_path):
    (tmp_path / "Toys.jsonl.gz").write_bytes(b"")
    with pytest.raises(FileNotFoundError) as info:
        locate_local(tmp_path, "Toys")
    assert "meta_Toys.jsonl or meta_Toys.jsonl.gz" in str(info.value)
    assert "Toys" in str(info.value) and str(tmp_path) in str(info.value)


def test_locate_local_rejects_ambiguous_and_missing_folder(tmp_path):
    for name in ("Toys.jsonl", "Toys.jsonl.gz", "meta_Toys.jsonl"):
        (tmp_path / name).write_text("")
    with pytest.raises(ValueError, match="keep one"):
        locate_local(tmp_path, "Toys")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        locate_local(tmp_path / "absent", "Toys")
