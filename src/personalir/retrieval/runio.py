"""TREC run files: ``qid Q0 docid rank score tag``, one retrieved document per line.

Reading validates every line and names the file and line of the first problem: a wrong
number of fields, a rank that is not a positive integer, a score that is not a finite
number, a query id the benchmark does not have, a document id the corpus does not have, a
rank or a document repeated within one query; a file that is not UTF-8 is named with the
byte offset of its first invalid byte.

Order within a query: by score, highest first, ties broken by the file's rank column. (The
rank column of a valid file is unique per query, so the order is always defined; trec_eval
instead breaks score ties by document id, which makes tied runs depend on id spelling.) Every
measure of this package, the ir_measures ones included, is computed from that one order.

A path ending in ``.gz`` is gzip-compressed (written with a zero timestamp, so the bytes
depend only on the content); the workflow stores its runs that way.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from personalir.common.io import atomic_open, utf8_error

Ranking = dict[str, list[tuple[str, float]]]


class RunFormatError(ValueError):
    """A run file breaks the format; the message names the file and line."""


def format_score(score: float) -> str:
    return f"{score:.6f}"


def write_run(
    path: str | Path, ranking: Mapping[str, Sequence[tuple[str, float]]], tag: str
) -> int:
    """Write ``ranking`` (query id -> [(doc id, score)] best first) atomically; return lines."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag {tag!r} must be a non-empty string without whitespace")
    lines = []
    for qid, docs in ranking.items():
        for rank, (doc_id, score) in enumerate(docs, 1):
            if not math.isfinite(score):
                raise ValueError(f"query {qid!r}: score of {doc_id!r} is not finite")
            lines.append(f"{qid} Q0 {doc_id} {rank} {format_score(score)} {tag}\n")
    write_run_text(path, "".join(lines))
    return len(lines)


def write_run_text(path: str | Path, text: str) -> None:
    """Write run-file text atomically, gzip-compressed when ``path`` ends in ``.gz``."""
    if str(path).endswith(".gz"):
        with atomic_open(path, "wb") as fh:
            fh.write(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        with atomic_open(path) as fh:
            fh.write(text)


def read_run_text(path: str | Path) -> str:
    try:
        with _open_text(Path(path)) as fh:
            return fh.read()
    except UnicodeDecodeError:
        raise utf8_error(path) from None


def _open_text(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_run(
    path: str | Path,
    *,
    query_ids: Iterable[str] | None = None,
    doc_ids: Iterable[str] | None = None,
) -> dict[str, list[str]]:
    """Query id -> document ids in rank order, validating every line (see module docstring)."""
    path = Path(path)
    known_q = None if query_ids is None else set(query_ids)
    known_d = None if doc_ids is None else set(doc_ids)
    entries: dict[str, list[tuple[float, int, str]]] = {}
    first_rank: dict[tuple[str, int], int] = {}
    first_doc: dict[tuple[str, str], int] = {}
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                where = f"{path}:{lineno}"
                fields = line.split()
                if not fields:
                    raise RunFormatError(f"{where}: blank line")
                if len(fields) != 6:
                    raise RunFormatError(
                        f"{where}: expected 6 fields 'qid Q0 docid rank score tag', got "
                        f"{len(fields)}: {line.strip()[:80]!r}"
                    )
                qid, _, doc_id, rank_s, score_s, _tag = fields
                try:
                    rank = int(rank_s)
                except ValueError:
                    raise RunFormatError(f"{where}: rank {rank_s!r} is not an integer") from None
                if rank < 1:
                    raise RunFormatError(f"{where}: rank {rank} is not positive")
                try:
                    score = float(score_s)
                except ValueError:
                    raise RunFormatError(f"{where}: score {score_s!r} is not a number") from None
                if not math.isfinite(score):
                    raise RunFormatError(f"{where}: score {score_s!r} is not finite")
                if known_q is not None and qid not in known_q:
                    raise RunFormatError(f"{where}: unknown query id {qid!r} (not in the queries)")
                if known_d is not None and doc_id not in known_d:
                    raise RunFormatError(
                        f"{where}: unknown document id {doc_id!r} (not in the corpus)"
                    )
                if (qid, rank) in first_rank:
                    raise RunFormatError(
                        f"{where}: duplicate rank {rank} for query {qid!r} "
                        f"(first at line {first_rank[(qid, rank)]})"
                    )
                if (qid, doc_id) in first_doc:
                    raise RunFormatError(
                        f"{where}: document {doc_id!r} listed twice for query {qid!r} "
                        f"(first at line {first_doc[(qid, doc_id)]})"
                    )
                first_rank[(qid, rank)] = lineno
                first_doc[(qid, doc_id)] = lineno
                entries.setdefault(qid, []).append((-score, rank, doc_id))
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    return {qid: [d for _, _, d in sorted(rows)] for qid, rows in entries.items()}


def run_from_ranking(ranking: Mapping[str, Sequence[tuple[str, float]]]) -> dict[str, list[str]]:
    """The document order of an in-memory ranking (what :func:`read_run` returns for its file)."""
    return {qid: [d for d, _ in docs] for qid, docs in ranking.items()}
