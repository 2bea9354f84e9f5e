"""The judge's answer cache: SQLite, every entry verified on read, the file checked on open.

Each entry stores the sha256 of its key and payload (a flipped bit in the key no longer
passes for another question's entry). Entries written before the key was covered carry the
sha256 of the payload alone and are still served when it matches (their keys are sha256 hex
digests: a flip does not make another question's key). What is served is an entry whose bytes
decode as UTF-8, match their sha256 and parse as a JSON object; anything else is damage:

- **a damaged entry** (undecodable, not matching its sha256, not JSON) is named in a warning,
  dropped and asked again (counted in :attr:`ResponseCache.corrupt`);
- **a damaged file** (``PRAGMA integrity_check`` fails on open, or SQLite reports
  corruption while reading or writing) is named in a warning and rebuilt from the entries
  that still read back intact; the others are asked again. A file that is not SQLite at all
  becomes an empty cache.

So no ``DatabaseError`` or ``UnicodeDecodeError`` reaches the judge, and a damaged answer is
never taken for the judge's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, payload TEXT NOT NULL,"
    " sha256 TEXT NOT NULL, created REAL NOT NULL)"
)


def entry_digest(key: str, payload: str) -> str:
    """The sha256 an entry is verified by: its key and its payload."""
    return hashlib.sha256(key.encode() + b"\0" + payload.encode()).hexdigest()


def _decoded(key: str, payload: Any, digest: Any) -> dict | None:
    """The record an entry holds, or None when it is damaged."""
    try:
        text = payload.decode("utf-8") if isinstance(payload, bytes) else payload
        want = digest.decode("ascii") if isinstance(digest, bytes) else digest
        if not isinstance(text, str):
            return None
        legacy = hashlib.sha256(text.encode()).hexdigest()  # written before keys were covered
        if want not in (entry_digest(key, text), legacy):
            return None
        record = json.loads(text)
    except (UnicodeError, ValueError, TypeError, AttributeError):
        return None
    return record if isinstance(record, dict) else None


class CacheFileError(RuntimeError):
    """The cache file stays unusable after it was rebuilt (the message names it)."""


class ResponseCache:
    """Judge answers on disk (SQLite), verified by a sha256 per entry and checked on open."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.corrupt = 0  # damaged entries dropped (asked again)
        self.rebuilt = 0  # times the file was rebuilt from its intact entries
        self._db = self._open_checked()

    # ------------------------------------------------------------------ the file
    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        try:
            db.execute(_SCHEMA)
            db.commit()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _open_checked(self) -> sqlite3.Connection:
        try:
            db = self._connect()
        except sqlite3.DatabaseError as exc:
            problem = str(exc)
        else:
            try:
                rows = db.execute("PRAGMA integrity_check").fetchall()
            except sqlite3.DatabaseError as exc:
                rows = [(str(exc),)]
            if rows == [("ok",)]:
                return db
            db.close()
            problem = "; ".join(str(r[0]) for r in rows[:3])
        self._rebuild(problem)
        return self._connect()

    def _salvage(self) -> list[tuple]:
        """The entries of the damaged file that still read back intact. Text columns are read
        as bytes and decoded here: a damaged byte is an entry's problem, never a decoding error
        raised by the driver."""
        good: list[tuple] = []
        try:
            src = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.DatabaseError:
            return good
        try:
            cursor = src.execute(
                "SELECT CAST(key AS BLOB), CAST(payload AS BLOB), CAST(sha256 AS BLOB), created"
                " FROM answers"
            )
            while True:
                try:
                    row = cursor.fetchone()
                except sqlite3.DatabaseError:
                    break  # the rest of the table cannot be read
                if row is None:
                    break
                key, payload, digest, created = row
                try:
                    key = key.decode("utf-8") if isinstance(key, bytes) else str(key)
                except UnicodeError:
                    key = None
                if key is None or _decoded(key, payload, digest) is None:
                    self.corrupt += 1
                    continue
                good.append((key, payload.decode("utf-8"), digest.decode("ascii"), created))
        except sqlite3.DatabaseError:
            pass  # not even the table can be read: nothing to keep
        finally:
            src.close()
        # A key held twice (a damaged index let a second row in): neither row is trusted.
        counts = Counter(row[0] for row in good)
        self.corrupt += sum(n for n in counts.values() if n > 1)
        return [row for row in good if counts[row[0]] == 1]

    def _rebuild(self, problem: str) -> None:
        good = self._salvage()
        log.warning(
            "judge cache %s is damaged (%s): rebuilt from its %d intact answers; the others "
            "are asked again",
            self.path,
            problem,
            len(good),
        )
        tmp = self.path.with_name(f".{self.path.name}.rebuild-{os.getpid()}")
        tmp.unlink(missing_ok=True)
        db = sqlite3.connect(tmp)
        try:
            db.execute(_SCHEMA)
            db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", good)
            db.commit()
        finally:
            db.close()
        os.replace(tmp, self.path)
        for suffix in ("-journal", "-wal", "-shm"):  # the damaged file's, not the new one's
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.rebuilt += 1

    def _run(self, what: str, action: Callable[[sqlite3.Connection], Any]) -> Any:
        """``action(connection)``; on corruption the file is rebuilt and it runs once more."""
        try:
            return action(self._db)
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._rebuild(f"{what}: {exc}")
            self._db = self._connect()
        try:
            return action(self._db)
        except sqlite3.DatabaseError as exc:
            raise CacheFileError(
                f"judge cache {self.path}: {what} failed after a rebuild ({exc}); delete the "
                "file (every answer is then asked again)"
            ) from None

    # ------------------------------------------------------------------ entries
    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._run(
                "reading an answer",
                lambda db: db.execute(
                    "SELECT CAST(payload AS BLOB), CAST(sha256 AS BLOB) FROM answers WHERE key = ?",
                    (key,),
                ).fetchone(),
            )
            if row is None:
                return None
            record = _decoded(key, *row)
            if record is not None:
                return record
            self.corrupt += 1
            log.warning(
                "judge cache %s: the answer under key %s is damaged; dropped, asked again",
                self.path,
                key,
            )
            self._run("dropping a damaged answer", lambda db: _delete(db, key))
            return None

    def put(self, key: str, record: dict) -> None:
        payload = json.dumps(record, sort_keys=True)
        digest = entry_digest(key, payload)

        def insert(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)",
                (key, payload, digest, time.time()),
            )
            db.commit()

        with self._lock:
            self._run("writing an answer", insert)

    def __len__(self) -> int:
        with self._lock:
            return self._run(
                "counting answers",
                lambda db: db.execute("SELECT COUNT(*) FROM answers").fetchone()[0],
            )

    def close(self) -> None:
        self._db.close()


def _delete(db: sqlite3.Connection, key: str) -> None:
    db.execute("DELETE FROM answers WHERE key = ?", (key,))
    db.commit()
