"""Fingerprints of artifacts: record count plus the exact records at a few fixed positions.

The ir_datasets habit: a dataset is pinned by how many records it has and what a handful of
them are, which catches reordering, truncation and content drift while staying readable in a
diff. JSON reports are pinned whole; other files by sha256. Timings (keys and columns named
`seconds`, `*_seconds`, `*_per_second`) change from run to run and are left out, and so are
counts of cache use (`from_cache`, `parsed_now`, `duplicate_texts_reused`: what a warm cache
or a job that ran first saved, not what was computed).

`link_dvc_outputs` lays the artifacts recorded in `dvc.lock` out as a results tree (links into
the DVC store), so the embedded default's fingerprints are checked without running anything.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
from pathlib import Path
from typing import Any

from personalir.common.io import is_volatile, read_parquet_table

POSITIONS = (0, 1, 17, -1)
# Artifacts pinned per stage (globs under the results folder; a leading "!" leaves the
# matches out). A stage adds its entry.
STAGE_PATTERNS = {
    "data": [
        "sample_world/**/*.jsonl",
        "sample_world/**/*.json",
        "data/**/*.parquet",
        "data/**/*.json",
        "data/**/*.jsonl",
        "report/dataset_statistics.csv",
    ],
    # Parses, vocabularies, reports, profiles and the attribution tables. Embeddings and the
    # encoder are floats straight from torch and are checked by the stage's own tolerance
    # tests instead; profiles and tables are pinned at 6 decimals.
    "syntax": [
        "syntax/*/parsed_rules.parquet",
        "syntax/*/sentences.parquet",
        "syntax/*/rule_vocab.parquet",
        "syntax/*/parse.report.json",
        "syntax/*/features.report.json",
        "syntax/*/profiles.parquet",
        "syntax/*/attribution.csv",
        "syntax/attribution.csv",
        "syntax/rules_summary.csv",
    ],
    # Corrections, ERRANT edits, per-user profiles and the error-sampling tables.
    "errors": [
        "errors/*/corrections.parquet",
        "errors/*/edits.parquet",
        "errors/*/profiles.csv",
        "errors/*/sampling_eval.csv",
        "errors/*/sampling_users.csv",
        "errors/sampling_eval.csv",
        "errors/error_statistics.csv",
    ],
    # Candidates, the released benchmark and its pairs, and the stage's tables.
    "queries": [
        "queries/*/candidates.parquet",
        "queries/*/benchmark.jsonl",
        "queries/*/pairs.csv",
        "queries/datasheet.csv",
        "queries/filter_report.csv",
        "queries/identifiability.csv",
    ],
    # Run files of every retriever and the summary tables.
    "retrieval": [
        "retrieval/*/*.run.gz",
        "retrieval/summary.csv",
        "retrieval/table_*.csv",
    ],
    # Examples, SFT rows, every method's run file (the RL variants', the ablations' and the
    # students' included), the Relevance pairs and each method's Spearman, Tables 4, 6, 7
    # and 8, Figure 5, the ablation claims and TTP on PQB (the search log they start from is
    # the sample world's, pinned with the data stage).
    "ttp": [
        "ttp/*/examples.jsonl",
        "ttp/*/sft.jsonl",
        "ttp/*/runs/*.trec",
        "ttp/*/relevance/pairs.jsonl",
        "ttp/*/relevance/*.json",
        "ttp/*/cache.report.json",
        "ttp/figure8.csv",
        "ttp/table3.csv",
        "ttp/figure3.csv",
        "ttp/figure3_cases.csv",
        "ttp/table4.csv",
        "ttp/table6.csv",
        "ttp/table7.csv",
        "ttp/table8.csv",
        "ttp/figure5.csv",
        "ttp/claims/claims.json",
        "ttp/pqb/table.csv",
        "ttp/pqb/history_effects.csv",
    ],
    # Blinded items and their key, the judge's labels, the annotator assignment, the
    # (simulated or imported) annotations, adjudicated labels, agreement and both tables.
    "validation": [
        "validation/items.jsonl",
        "validation/key.jsonl",
        "validation/judgements.csv",
        "validation/annotation/assignment.csv",
        "validation/human/annotations.csv",
        "validation/human/labels.csv",
        "validation/human/agreement.csv",
        "validation/ratings.csv",
        "validation/agreement.csv",
    ],
}
# Records of how an artifact was made (git commit, timings) are not artifacts to pin.
UNPINNED = {"provenance.json"}
MAX_INLINE_JSON = 20_000  # bytes; larger JSON files are pinned by a hash of their content


def is_timing(name: str) -> bool:
    """Keys and columns that hold how long something took or what a cache saved (never
    pinned; artifacts written by this package no longer hold them at all)."""
    return is_volatile(name)


def _plain(value: Any) -> Any:
    """JSON-safe, rounding floats so the fingerprint does not depend on the last bit."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if not is_timing(str(k))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return _plain(value.item())
    return value


def _pick(records: list, n: int, positions) -> dict[str, Any]:
    out = {}
    for pos in positions:
        idx = pos if pos >= 0 else n + pos
        if 0 <= idx < n:
            out[str(idx)] = _plain(records[idx] if isinstance(records, list) else records(idx))
    return out


def _csv_lines(lines: list[str]) -> tuple[str, list[str]]:
    """Header and rows as text, without timing columns (rows unchanged when there are none)."""
    header = next(csv.reader([lines[0]])) if lines else []
    keep = [i for i, name in enumerate(header) if not is_timing(name)]
    if len(keep) == len(header):
        return (lines[0] if lines else ""), lines[1:]

    def cut(line: str) -> str:
        out = io.StringIO()
        row = next(csv.reader([line]))
        csv.writer(out, lineterminator="").writerow([row[i] for i in keep])
        return out.getvalue()

    return cut(lines[0]), [cut(line) for line in lines[1:]]


def _trec_run(lines: list[str], positions) -> dict[str, Any]:
    """A TREC run (`qid Q0 docid rank score tag`): lines, queries and a few parsed lines."""
    lines = [line for line in lines if line.strip()]

    def parsed(i: int) -> list:
        r = lines[i].split()
        return [r[0], r[2], int(r[3]), float(r[4]), r[5]]

    return {
        "kind": "trec_run",
        "rows": len(lines),
        "queries": len({line.split(None, 1)[0] for line in lines}),
        "records": _pick(parsed, len(lines), positions),
    }


def fingerprint(path: str | Path, positions=POSITIONS, name: str | None = None) -> dict[str, Any]:
    """Fingerprint of one file; `name` (default: the file's) chooses the format."""
    path = Path(path)
    name = name or path.name
    if name.endswith(".parquet"):
        table = read_parquet_table(path)
        n = table.num_rows
        idx = sorted({p if p >= 0 else n + p for p in positions if -n <= p < n})
        rows = {str(i): _plain(table.slice(i, 1).to_pylist()[0]) for i in idx}
        columns = [c for c in table.column_names if not is_timing(c)]
        return {"kind": "parquet", "rows": n, "columns": columns, "records": rows}
    if name.endswith(".jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        n = len(lines)
        return {
            "kind": "jsonl",
            "rows": n,
            "records": _pick([json.loads(x) for x in lines], n, positions),
        }
    if name.endswith(".json"):
        content = _plain(json.loads(path.read_text(encoding="utf-8")))
        if path.stat().st_size <= MAX_INLINE_JSON:
            return {"kind": "json", "content": content}
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return {"kind": "json", "sha256": hashlib.sha256(canonical.encode()).hexdigest()}
    if name.endswith(".csv"):
        header, rows = _csv_lines(path.read_text(encoding="utf-8").splitlines())
        return {
            "kind": "csv",
            "rows": len(rows),
            "header": header,
            "records": _pick(rows, len(rows), positions),
        }
    if name.endswith(".run.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return _trec_run(fh.read().splitlines(), positions)
    if name.endswith((".trec", ".run")):
        return _trec_run(path.read_text(encoding="utf-8").splitlines(), positions)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"kind": "bytes", "sha256": digest}


def fingerprint_tree(root: str | Path, patterns: list[str]) -> dict[str, Any]:
    """Fingerprints of every file under ``root`` matching one of the glob ``patterns`` and
    none of the ``!``-prefixed ones."""
    root = Path(root)
    return {str(p.relative_to(root)): fingerprint(p) for p in pinned_files(root, patterns)}


def pinned_files(root: str | Path, patterns: list[str]) -> list[Path]:
    """Files under ``root`` matching one of the glob ``patterns`` and none of the
    ``!``-prefixed ones, sorted."""
    root = Path(root)
    left_out = {p for pat in patterns if pat.startswith("!") for p in root.glob(pat[1:])}
    return sorted(
        {
            p
            for pat in patterns
            if not pat.startswith("!")
            for p in root.glob(pat)
            if p.is_file()
            and p.name not in UNPINNED
            and p not in left_out
            # Hidden files (writers' records under .integrity/, temporary files) are not
            # artifacts: they hold file times and inode numbers.
            and not any(part.startswith(".") for part in p.relative_to(root).parts)
        }
    )


# Floats agree when they are this close. Fingerprints round floats to 6 decimals, and dense
# scores computed on CPUs with other vector units (AVX2, AVX512) differ by a float32 ulp or a
# few, which moves the sixth decimal of a score (README, "Provenance and integrity").
FLOAT_TOLERANCE = 1e-5


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def first_difference(expected: Any, actual: Any, tol: float = FLOAT_TOLERANCE, at: str = ""):
    """Where two fingerprints first differ, as ``(path, expected, actual)``, or None: the
    same structure, equal strings, integers and booleans, floats within ``tol``."""
    pair = (expected, actual)
    if any(isinstance(x, float) for x in pair) and all(_is_number(x) for x in pair):
        return None if abs(expected - actual) <= tol else (at, expected, actual)
    if isinstance(expected, dict) and isinstance(actual, dict):
        for k in sorted(set(expected) | set(actual), key=str):
            if k not in expected or k not in actual:
                return (f"{at}/{k}", expected.get(k), actual.get(k))
            found = first_difference(expected[k], actual[k], tol, f"{at}/{k}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(e, a, tol, f"{at}[{i}]")
            if found:
                return found
        return None
    return None if expected == actual else (at, expected, actual)


def diff_fingerprints(expected: dict, actual: dict, tol: float = FLOAT_TOLERANCE) -> list[str]:
    """Human-readable differences (empty when equal; floats within ``tol``)."""
    problems = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            problems.append(f"{key}: missing")
        elif key not in expected:
            problems.append(f"{key}: not in the expected fingerprints")
        else:
            e, a = expected[key], actual[key]
            found = first_difference(e, a, tol)
            if found is None:
                continue
            if e.get("rows") != a.get("rows"):
                problems.append(f"{key}: {a.get('rows')} records, expected {e.get('rows')}")
            else:
                where, was, now = found
                problems.append(f"{key}: content differs at {where or '/'}: {was!r} -> {now!r}")
    return problems


def link_dvc_outputs(lock: str | Path, store: str | Path, dest: str | Path) -> Path:
    """Lay out every output recorded in a `dvc.lock` under `dest` as a link to its object in
    the DVC cache or local remote `store` (`files/md5/<2>/<30>`); directory outputs are
    expanded from their `.dir` listing. Returns `dest`."""
    import yaml

    store, dest = Path(store), Path(dest)

    def obj(md5: str) -> Path:
        return store / "files" / "md5" / md5[:2] / md5[2:]

    def link(rel: str, md5: str) -> None:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        os.symlink(obj(md5).resolve(), target)

    stages = yaml.safe_load(Path(lock).read_text(encoding="utf-8"))["stages"]
    for stage in stages.values():
        for out in stage.get("outs", []):
            md5 = out["md5"]
            if md5.endswith(".dir"):
                for entry in json.loads(obj(md5).read_text(encoding="utf-8")):
                    link(f"{out['path']}/{entry['relpath']}", entry["md5"])
            else:
                link(out["path"], md5)
    return dest
