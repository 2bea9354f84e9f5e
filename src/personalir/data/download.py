"""Fetch the official Amazon Reviews 2023 files, resumably, and verify them against checksums.

A file is streamed to ``<dest>.part`` and renamed onto ``<dest>`` only after its SHA-256 was
checked, so ``<dest>`` is always complete and verified (the ``.part`` name is fixed, not a
random temp name, so an interrupted download can resume with an HTTP Range request). A server
that ignores Range (answers 200) makes the download restart from byte 0.

Checksums come from a text file of ``<sha256>  <filename>`` lines (``sha256sum`` format,
``#`` comments allowed), keyed by file name. A file without a recorded checksum is never
accepted silently: ``on_missing_checksum="error"`` refuses before downloading;
``"record"`` (trust on first use) downloads, writes the observed hash to a separate
*observed* checksum file and logs a loud warning, so the value can be reviewed and copied into
the recorded file. A mismatch always raises :class:`ChecksumMismatch` and moves the bad file to
``<dest>.corrupt``.

Only the standard library is used for HTTP (urllib). ``locate_local`` is the offline
alternative: it finds the same files in a local folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from personalir.common.io import atomic_open, sha256_file

__all__ = [
    "DEFAULT_BASE_URL",
    "ChecksumError",
    "ChecksumMismatch",
    "DownloadError",
    "MissingChecksum",
    "download_domain",
    "download_file",
    "locate_local",
    "read_checksums",
    "record_checksum",
    "remote_paths",
    "sha256_file",
]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://datarepo.eng.ucsd.edu/mcauley_group/data/amazon_2023/"
MISSING_CHECKSUM_MODES = ("error", "record")
_CHUNK = 1 << 20
_USER_AGENT = "personalir-download/1 (+urllib)"
_RETRYABLE_HTTP = {408, 425, 429, 500, 502, 503, 504}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class DownloadError(RuntimeError):
    """A download that could not be completed (after retries, where retrying makes sense)."""


class ChecksumError(DownloadError):
    """Base class of checksum problems."""


class ChecksumMismatch(ChecksumError):
    def __init__(self, filename: str, expected: str, actual: str, moved_to: Path | None):
        self.filename, self.expected, self.actual, self.moved_to = (
            filename,
            expected,
            actual,
            moved_to,
        )
        where = f"; the file was moved to {moved_to}" if moved_to is not None else ""
        super().__init__(
            f"checksum mismatch for {filename}: expected sha256 {expected}, got {actual}{where}"
        )


class MissingChecksum(ChecksumError):
    def __init__(self, filename: str, checksums_path: Path):
        self.filename, self.checksums_path = filename, checksums_path
        super().__init__(
            f"no recorded sha256 for {filename} in {checksums_path}; refusing to use an "
            "unverified file (pass on_missing_checksum='record' to trust it on first use)"
        )


class _Retryable(Exception):
    """Internal: a transient failure; the next attempt resumes from the .part file."""


# ---------------------------------------------------------------------------------------------
# Checksum files


def read_checksums(path: str | os.PathLike) -> dict[str, str]:
    """Parse ``<sha256>  <filename>`` lines (``*filename`` binary marker accepted).

    A missing file reads as empty; a malformed line or a name listed twice with different
    hashes raises ``ValueError``.
    """
    path = Path(path)
    if not path.exists():
        return {}
    sums: dict[str, str] = {}
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split(maxsplit=1)
        if len(parts) != 2 or not _SHA256.match(parts[0].lower()):
            raise ValueError(f"{path}:{n}: expected '<sha256>  <filename>', got {text!r}")
        digest, name = parts[0].lower(), parts[1].lstrip("*")
        if sums.get(name, digest) != digest:
            raise ValueError(f"{path}:{n}: {name} is listed twice with different hashes")
        sums[name] = digest
    return sums


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise read-modify-write of a checksum file across processes (parallel jobs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def record_checksum(path: str | os.PathLike, filename: str, digest: str) -> None:
    """Add or replace ``filename``'s hash in a checksum file (sorted by name, atomic)."""
    path = Path(path)
    with _locked(path):
        sums = read_checksums(path)
        sums[filename] = digest
        with atomic_open(path) as fh:
            fh.write("# sha256 observed on first download (trust on first use); review me\n")
            for name in sorted(sums):
                fh.write(f"{sums[name]}  {name}\n")


def default_observed_path(checksums_path: str | os.PathLike) -> Path:
    """``checksums.sha256`` -> ``checksums.observed.sha256``."""
    p = Path(checksums_path)
    return p.with_name(f"{p.stem}.observed{p.suffix}" if p.suffix else f"{p.name}.observed")


# ---------------------------------------------------------------------------------------------
# HTTP


def remote_paths(domain: str) -> dict[str, str]:
    """Paths of a domain's review and meta files relative to the base URL."""
    return {
        "review": f"raw/review_categories/{domain}.jsonl.gz",
        "meta": f"raw/meta_categories/meta_{domain}.jsonl.gz",
    }


def _progress(total: int | None, initial: int, desc: str, enabled: bool):
    if not enabled:
        return contextlib.nullcontext(None)
    from tqdm import tqdm

    return tqdm(
        total=total, initial=initial, desc=desc, unit="B", unit_scale=True, unit_divisor=1024
    )


def _content_range_start(header: str | None) -> int | None:
    match = re.match(r"bytes\s+(\d+)-\d+/(?:\d+|\*)", header or "")
    return int(match.group(1)) if match else None


def _fetch_once(url: str, part: Path, *, timeout_s: float, chunk_size: int, progress: bool):
    """One attempt: resume ``part`` if possible, stream the rest; return when complete."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        # urlopen would also read file:, ftp: or data: URLs; only HTTP answers are handled.
        raise DownloadError(f"{url}: only http and https URLs can be downloaded, not {scheme!r}")
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout_s)  # nosec B310  # http(s)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:
            total = re.fullmatch(r"bytes\s+\*/(\d+)", err.headers.get("Content-Range") or "")
            if total is not None and int(total.group(1)) == offset:
                return  # the .part is already complete
            # Our offset is past the end: the .part cannot be trusted; start over.
            log.warning("%s: server refused range %d- (416); restarting from 0", url, offset)
            part.unlink()
            raise _Retryable("range not satisfiable") from err
        if err.code in _RETRYABLE_HTTP:
            raise _Retryable(f"HTTP {err.code}") from err
        raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from err
    except (OSError, http.client.HTTPException) as err:  # URLError, timeouts, resets
        raise _Retryable(str(err)) from err

    with response:
        status = response.status
        if offset and status == 206:
            start = _content_range_start(response.headers.get("Content-Range"))
            if start != offset:
                log.warning("%s: asked for byte %d, server sent %s; restarting", url, offset, start)
                part.unlink()
                raise _Retryable("unexpected Content-Range")
            mode = "ab"
        elif status == 200:
            if offset:
                log.warning("%s: server ignored Range; restarting from byte 0", url)
            offset, mode = 0, "wb"
        else:
            raise DownloadError(f"{url}: unexpected HTTP status {status}")
        length = response.headers.get("Content-Length")
        expected = int(length) if length is not None and length.isdigit() else None
        received = 0
        total = offset + expected if expected is not None else None
        try:
            with (
                open(part, mode) as out,
                _progress(total, offset, part.name.removesuffix(".part"), progress) as bar,
            ):
                while block := response.read(chunk_size):
                    out.write(block)
                    received += len(block)
                    if bar is not None:
                        bar.update(len(block))
                out.flush()
                os.fsync(out.fileno())
        except (OSError, http.client.HTTPException) as err:  # includes IncompleteRead
            raise _Retryable(f"transfer interrupted after {received} bytes: {err}") from err
        if expected is not None and received != expected:
            raise _Retryable(f"short read: {received} of {expected} bytes")


def download_file(
    url: str,
    dest: str | os.PathLike,
    *,
    checksums_path: str | os.PathLike,
    observed_checksums_path: str | os.PathLike | None = None,
    on_missing_checksum: str = "error",
    retries: int = 5,
    backoff_s: float = 2.0,
    timeout_s: float = 60.0,
    chunk_size: int = _CHUNK,
    progress: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> Path:
    """Download ``url`` to ``dest`` (resuming ``<dest>.part``) and verify its SHA-256.

    The expected hash is looked up by ``dest``'s file name in ``checksums_path``. Without one,
    ``on_missing_checksum="error"`` raises :class:`MissingChecksum` before any transfer and
    ``"record"`` writes the observed hash to ``observed_checksums_path`` (default
    ``<checksums stem>.observed<suffix>``) with a warning. An existing ``dest`` is verified the
    same way instead of being fetched again. Transient failures (connection errors, timeouts,
    short reads, HTTP 408/429/5xx) are retried ``retries`` times with exponential backoff,
    each retry resuming from the bytes already on disk.
    """
    if on_missing_checksum not in MISSING_CHECKSUM_MODES:
        raise ValueError(
            f"on_missing_checksum must be one of {MISSING_CHECKSUM_MODES}, "
            f"got {on_missing_checksum!r}"
        )
    dest, checksums_path = Path(dest), Path(checksums_path)
    observed_path = (
        Path(observed_checksums_path)
        if observed_checksums_path is not None
        else default_observed_path(checksums_path)
    )
    expected = read_checksums(checksums_path).get(dest.name)
    if expected is None and on_missing_checksum == "error":
        raise MissingChecksum(dest.name, checksums_path)

    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        for attempt in range(retries + 1):
            try:
                _fetch_once(
                    url, part, timeout_s=timeout_s, chunk_size=chunk_size, progress=progress
                )
                break
            except _Retryable as err:
                if attempt == retries:
                    raise DownloadError(
                        f"{url}: giving up after {retries + 1} attempts: {err}"
                    ) from err
                delay = backoff_s * 2**attempt
                log.warning("%s: %s; retry %d/%d in %.1fs", url, err, attempt + 1, retries, delay)
                sleep(delay)
        candidate = part
    else:
        candidate = dest

    actual = sha256_file(candidate)
    if expected is None:
        record_checksum(observed_path, dest.name, actual)
        log.warning(
            "\n%s\nUNVERIFIED DOWNLOAD: no recorded sha256 for %s.\nObserved sha256 %s was "
            "written to %s (trust on first use).\nReview it and copy it into %s.\n%s",
            "!" * 78,
            dest.name,
            actual,
            observed_path,
            checksums_path,
            "!" * 78,
        )
    elif actual != expected:
        corrupt = dest.with_name(dest.name + ".corrupt")
        os.replace(candidate, corrupt)
        raise ChecksumMismatch(dest.name, expected, actual, corrupt)
    if candidate != dest:
        os.replace(candidate, dest)
    return dest


def download_domain(
    domain: str,
    out_dir: str | os.PathLike,
    *,
    checksums_path: str | os.PathLike,
    base_url: str = DEFAULT_BASE_URL,
    **kwargs,
) -> dict[str, Path]:
    """Download a domain's review and meta files into ``out_dir``.

    Returns ``{"review": <out_dir>/<Domain>.jsonl.gz, "meta": <out_dir>/meta_<Domain>.jsonl.gz}``;
    other keyword arguments go to :func:`download_file`.
    """
    base = base_url if base_url.endswith("/") else base_url + "/"
    out_dir = Path(out_dir)
    return {
        kind: download_file(
            base + rel, out_dir / Path(rel).name, checksums_path=checksums_path, **kwargs
        )
        for kind, rel in remote_paths(domain).items()
    }


# ---------------------------------------------------------------------------------------------
# Local folder


def locate_local(local_dir: str | os.PathLike, domain: str) -> dict[str, Path]:
    """Find ``<Domain>.jsonl[.gz]`` and ``meta_<Domain>.jsonl[.gz]`` in ``local_dir``.

    Raises ``FileNotFoundError`` listing every name looked for when one is missing, and
    ``ValueError`` when both the plain and the gzip variant exist (ambiguous).
    """
    local_dir = Path(local_dir)
    if not local_dir.is_dir():
        raise FileNotFoundError(f"local data folder {local_dir} does not exist")
    found: dict[str, Path] = {}
    missing: list[str] = []
    for kind, stem in (("review", domain), ("meta", f"meta_{domain}")):
        names = [f"{stem}.jsonl", f"{stem}.jsonl.gz"]
        hits = [local_dir / n for n in names if (local_dir / n).is_file()]
        if len(hits) > 1:
            raise ValueError(
                f"{local_dir}: both {names[0]} and {names[1]} exist for {domain} {kind}; keep one"
            )
        if hits:
            found[kind] = hits[0]
        else:
            missing.append(f"{kind}: {' or '.join(names)}")
    if missing:
        raise FileNotFoundError(
            f"{local_dir}: missing files for domain {domain!r}; looked for " + "; ".join(missing)
        )
    return found
