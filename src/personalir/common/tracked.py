"""The workflow's recorded outputs (``dvc.lock``) verified by content, cheaply enough for every
``make run``.

``dvc.lock`` names the md5 and size of every output of the default configuration. A file
there is accepted when its bytes are

1. the recorded ones (md5 as in ``dvc.lock``: fetched, or remade identically), or
2. as the workflow job that wrote it left them (its writer's record, ``.integrity/``:
   :func:`personalir.common.io.written_record`; a rerun after a code change), or
3. the bytes accepted at the last verification (a file only touched since), or
4. written during the run that ``written_since_ns`` starts (``make run``'s check after
   Snakemake: a job wrote it, under this code).

Anything else was changed outside the workflow (a flipped byte, a truncation, a hand edit),
and is named: ``CHANGED <path>`` or ``TRUNCATED <path>``. Files absent are not checked (the
workflow makes them).

Hashing all 629 outputs takes about a second; a no-op run should not pay it each time. Each
accepted file's size, modification and change times and inode are kept in a small state file
(``.snakemake/personalir/verified_outputs.json``), and a file whose four values are unchanged
is not read again. Restoring an old modification time (``touch -d``, ``os.utime``) sets the
change time to now, so a flipped byte with its mtime kept is always read again. The parsed
``dvc.lock`` is kept beside it, keyed by the lock's sha256 (parsing the 2 MB file takes
1.5 s). Both files carry the sha256 of their content; a damaged one is named and rebuilt
(every file is then hashed once).

Only configurations whose outputs ``dvc.lock`` records (the default, ``results/``) are
checked this way; the outputs of other configurations (``results-tiny``, a paper-scale root)
are checked by the workflow's own guard when a job is about to read them
(:func:`personalir.common.provenance.check_consumed`) and by ``scripts/manifest.py check``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from personalir.common.io import sha256_file, written_record

STATE_DIR = Path(".snakemake") / "personalir"
STATE_NAME = "verified_outputs.json"
LOCK_CACHE_NAME = "dvc_lock_outputs.json"
_VERSION = 1
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Locked:
    """One output as ``dvc.lock`` records it."""

    path: str
    md5: str
    size: int | None


@dataclass
class Verification:
    """What :func:`verify_tracked` found."""

    problems: list[str] = field(default_factory=list)
    recorded: int = 0  # outputs dvc.lock records
    present: int = 0  # of them, in the tree
    hashed: int = 0  # read again (new, or changed since the last verification)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.present} of {self.recorded} outputs recorded in dvc.lock checked "
            f"({self.hashed} hashed, {self.present - self.hashed} unchanged since their last "
            f"check), {len(self.problems)} changed, in {self.seconds:.1f} s"
        )


def md5_file(path: str | os.PathLike) -> str:
    digest = hashlib.md5(usedforsecurity=False)  # DVC's content hash, compared with dvc.lock
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- sealed JSON
def _seal(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _read_sealed(path: Path, what: str) -> dict | None:
    """The body of a sealed state file; None when absent, another version, or damaged (named
    in a warning)."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s %s is damaged (%s); rebuilding it", what, path, exc)
        return None
    if not isinstance(saved, dict) or saved.get("version") != _VERSION:
        return None
    body = saved.get("body")
    if not isinstance(body, dict) or saved.get("sha256") != _seal(body):
        log.warning("%s %s does not match its sha256; rebuilding it", what, path)
        return None
    return body


def _write_sealed(path: Path, body: dict) -> None:
    """Write atomically; a folder that cannot be written only costs the next check."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": _VERSION, "sha256": _seal(body), "body": body}, out)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot write %s (%s); the next check hashes every file again", path, exc)


# --------------------------------------------------------------------------- dvc.lock
def _parse_lock(lock: Path) -> dict[str, Locked]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(lock, encoding="utf-8") as fh:
        doc = yaml.load(fh, Loader=loader)  # nosec B506  # a safe loader (C or Python)
    out = {}
    for stage in (doc or {}).get("stages", {}).values():
        for item in stage.get("outs", []):
            md5 = str(item.get("md5", ""))
            if md5 and not md5.endswith(".dir"):  # directory outputs: none in this workflow
                out[item["path"]] = Locked(item["path"], md5, item.get("size"))
    return out


def locked_outputs(lock: str | os.PathLike, cache: str | os.PathLike | None = None):
    """``{path: Locked}`` of every file output ``lock`` (a ``dvc.lock``) records.

    With ``cache`` (a JSON file), the parse is read from it while the lock's sha256 is the
    one it was made from, and written to it otherwise."""
    lock = Path(lock)
    if cache is None:
        return _parse_lock(lock)
    cache = Path(cache)
    digest = sha256_file(lock)
    body = _read_sealed(cache, "parsed dvc.lock")
    if body is not None and body.get("lock_sha256") == digest:
        return {p: Locked(p, md5, size) for p, (md5, size) in body["outputs"].items()}
    outs = _parse_lock(lock)
    outputs = {p: [o.md5, o.size] for p, o in outs.items()}
    _write_sealed(cache, {"lock_sha256": digest, "outputs": outputs})
    return outs


# --------------------------------------------------------------------------- one file
def file_problem(
    path: Path,
    locked: Locked | None,
    *,
    md5: str | None = None,
    shown: str | None = None,
    accepted_md5: str | None = None,
) -> str | None:
    """``CHANGED``/``TRUNCATED <shown>: why`` when ``path`` is none of: the recorded bytes,
    as its writer left them, or the bytes accepted before (``accepted_md5``); else None.

    A file that ``dvc.lock`` does not record (``locked`` None) can only fail its writer's
    record."""
    shown = shown or str(path)
    if locked is not None or accepted_md5 is not None:
        md5 = md5 or md5_file(path)
        if locked is not None and md5 == locked.md5:
            return None
        if accepted_md5 is not None and md5 == accepted_md5:
            return None
    record = written_record(path)
    if record is not None:
        if sha256_file(path) == record["sha256"]:
            return None
        return (
            f"CHANGED {shown}: not as the job that wrote it left it (sha256 differs from its "
            "writer's record)"
        )
    if locked is None:
        return None  # nothing says what it should hold
    size = path.stat().st_size
    if locked.size is not None and size < locked.size:
        return f"TRUNCATED {shown}: {size} of {locked.size} bytes"
    return (
        f"CHANGED {shown}: md5 {md5} is not dvc.lock's {locked.md5}, and no workflow job is on "
        "record as writing it"
    )


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


# --------------------------------------------------------------------------- a whole tree
def verify_tracked(
    root: str | os.PathLike,
    lock: str | os.PathLike | None = None,
    *,
    written_since_ns: int | None = None,
    state_dir: str | os.PathLike | None = None,
) -> Verification:
    """Check every output ``lock`` (default ``<root>/dvc.lock``) records that is present
    under ``root`` (see the module docstring); the state lives in ``state_dir`` (default
    ``<root>/.snakemake/personalir``)."""
    start = time.perf_counter()
    root = Path(root)
    lock = Path(lock) if lock is not None else root / "dvc.lock"
    state_dir = Path(state_dir) if state_dir is not None else root / STATE_DIR
    outs = locked_outputs(lock, state_dir / LOCK_CACHE_NAME)
    state_path = state_dir / STATE_NAME
    before = (_read_sealed(state_path, "verification state") or {}).get("files", {})
    after: dict[str, list] = {}
    found = Verification(recorded=len(outs))
    for rel, locked in sorted(outs.items()):
        path = root / rel
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        found.present += 1
        stamp = _stamp(st)
        entry = before.get(rel)
        if entry and entry[0] == stamp:
            after[rel] = entry
            continue
        found.hashed += 1
        md5 = md5_file(path)
        problem = file_problem(
            path, locked, md5=md5, shown=rel, accepted_md5=entry[1] if entry else None
        )
        if problem and written_since_ns is not None and st.st_mtime_ns >= written_since_ns:
            problem = None  # written during this run, by its jobs
        if problem:
            found.problems.append(problem)
        else:
            after[rel] = [stamp, md5]
    if after != before:
        _write_sealed(state_path, {"files": after})
    found.seconds = time.perf_counter() - start
    return found


def record_verified(root: str | os.PathLike, outs: dict[str, Locked], state_dir=None) -> int:
    """Record files just verified against ``dvc.lock`` by a caller that hashed them (the fetch
    script), so the next check reads none of them; the number recorded."""
    root = Path(root)
    state_dir = Path(state_dir) if state_dir is not None else root / STATE_DIR
    state_path = state_dir / STATE_NAME
    files = dict((_read_sealed(state_path, "verification state") or {}).get("files", {}))
    n = 0
    for rel, locked in outs.items():
        try:
            st = (root / rel).stat()
        except FileNotFoundError:
            continue
        files[rel] = [_stamp(st), locked.md5]
        n += 1
    _write_sealed(state_path, {"files": files})
    return n


def content_checker(lock: str | os.PathLike | None) -> Callable[[Path], str | None]:
    """A check of single files (the expected-results check's tables, read once each): the
    record ``lock`` (a ``dvc.lock``, paths relative to its folder) keeps of a file it names,
    else its writer's record (:func:`file_problem`). No lock file: writers' records only."""
    outs: dict[str, Locked] = {}
    base = None
    if lock is not None and Path(lock).is_file():
        base = Path(lock).resolve().parent
        outs = locked_outputs(lock, base / STATE_DIR / LOCK_CACHE_NAME)

    def check(path: Path) -> str | None:
        path = Path(path)
        rel = None
        if base is not None:
            try:
                rel = path.resolve().relative_to(base).as_posix()
            except ValueError:
                rel = None
        return file_problem(path, outs.get(rel) if rel else None, shown=str(path))

    return check
