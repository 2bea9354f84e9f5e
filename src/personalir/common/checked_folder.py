"""A cache folder that is served only while its files match the sha256 recorded when it was
written (the dequantised model copies in ``<results_dir>/model_cache/``).

:func:`checked_folder` returns the folder once every file in it matches its line in
``checksums.sha256`` (sha256sum's format, written last, inside the folder, before the folder
is renamed into place) and no file is missing or unlisted. A folder that fails the check (a
flipped bit, a truncated or swapped file, a damaged or absent checksum file, a copy written
before checksums were kept) is named in a warning, removed and built again by its ``fill``;
it is never served. The check reads every byte once per process and version of the files
(their size, times and inode), so loading the same copy again in one job costs no second
pass.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from personalir.common.io import CorruptArtifact, atomic_dir, temp_prefix

CHECKSUMS = "checksums.sha256"
_LINE = re.compile(r"([0-9a-f]{64})  (.+)")
log = logging.getLogger(__name__)


def _files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.name != CHECKSUMS
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_checksums(folder: str | os.PathLike) -> int:
    """Record the sha256 of every file of ``folder`` in its ``checksums.sha256``; the number
    of files recorded."""
    folder = Path(folder)
    names = _files(folder)
    text = "".join(f"{_sha256(folder / name)}  {name}\n" for name in names)
    tmp = folder / f".{CHECKSUMS}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, folder / CHECKSUMS)
    return len(names)


def _stamp(folder: Path) -> tuple:
    out = []
    for path in sorted(folder.rglob("*")):
        st = path.stat()
        out.append((str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(out)


def folder_problem(folder: str | os.PathLike) -> str | None:
    """None when every file of ``folder`` matches its recorded sha256, else what is wrong,
    naming the file."""
    folder = Path(folder)
    try:
        return _checked(_stamp(folder), str(folder))
    except OSError as exc:
        return f"cannot be read ({exc})"


@functools.lru_cache(maxsize=64)
def _checked(stamp: tuple, folder_name: str) -> str | None:
    folder = Path(folder_name)
    try:
        text = (folder / CHECKSUMS).read_text(encoding="utf-8")
    except FileNotFoundError:
        return f"has no {CHECKSUMS} (written before checksums were kept, or cut short)"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{CHECKSUMS} cannot be read ({exc})"
    recorded: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _LINE.fullmatch(line)
        if not match:
            return f"{CHECKSUMS} line {number} is damaged"
        recorded[match.group(2)] = match.group(1)
    present = _files(folder)
    missing = sorted(set(recorded) - set(present))
    if missing:
        return f"{missing[0]} is missing"
    unlisted = sorted(set(present) - set(recorded))
    if unlisted:
        return f"{unlisted[0]} is not in {CHECKSUMS}"
    for name in present:
        if _sha256(folder / name) != recorded[name]:
            return f"{name} does not match its recorded sha256"
    return None


def drop_folder(folder: str | os.PathLike) -> None:
    """Remove ``folder``: first renamed aside (readers never see half of it), then deleted."""
    folder = Path(folder)
    aside = folder.with_name(f"{temp_prefix(folder)}dropped")
    try:
        os.replace(folder, aside)
    except FileNotFoundError:
        return  # another process dropped it first
    shutil.rmtree(aside, ignore_errors=True)


def checked_folder(
    target: str | os.PathLike, fill: Callable[[Path], None], *, label: str = "cache"
) -> Path:
    """``target``, verified; filled by ``fill(temporary folder)`` when absent, and removed and
    filled again when it fails the check (a warning names the file at fault).

    ``fill`` writes into the folder it is given; its checksums are recorded there, then the
    folder is renamed onto ``target``, so a concurrent or interrupted writer never leaves half
    a copy. When another process fills ``target`` first, its copy is kept if it checks out.
    """
    target = Path(target)
    if target.exists():
        problem = folder_problem(target)
        if problem is None:
            return target
        log.warning("%s %s: %s; removing it and building it again", label, target, problem)
        drop_folder(target)
    tmp = atomic_dir(target)
    try:
        fill(tmp)
        write_checksums(tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # another process filled it first: keep theirs if it is intact
            problem = folder_problem(target)
            if problem is not None:
                raise CorruptArtifact(f"{label} {target}: {problem}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
