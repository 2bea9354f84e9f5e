"""Fingerprints of artifacts: record count plus the exact records at a few fixed positions.

The ir_datasets habit: a dataset is pinned by how many records it has and what a handful of
them are, which catches reordering, truncation and content drift while staying readable in a
diff. JSON reports are pinned whole; other files by sha256.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

POSITIONS = (0, 1, 17, -1)
# Artifacts pinned per stage (globs under the results folder). A stage adds its entry.
STAGE_PATTERNS = {
    "data": [
        "sample_world/**/*.jsonl",
        "sample_world/**/*.json",
        "data/**/*.parquet",
        "data/**/*.json",
        "data/**/*.jsonl",
        "report/dataset_statistics.csv",
    ],
    # Parses, vocabularies and reports; embeddings and profiles are floats from torch/EM and
    # are checked by the stage's own tolerance tests instead.
    "syntax": [
        "syntax/*/parsed_rules.parquet",
        "syntax/*/sentences.parquet",
        "syntax/*/rule_vocab.parquet",
        "syntax/*/parse.report.json",
        "syntax/*/features.report.json",
    ],
}
# Records of how an artifact was made (git commit, timings) are not artifacts to pin.
UNPINNED = {"provenance.json"}
MAX_INLINE_JSON = 20_000  # bytes; larger JSON files are pinned by a hash of their content


def _plain(value: Any) -> Any:
    """JSON-safe, rounding floats so the fingerprint does not depend on the last bit."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
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


def fingerprint(path: str | Path, positions=POSITIONS) -> dict[str, Any]:
    path = Path(path)
    name = path.name
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        n = table.num_rows
        idx = sorted({p if p >= 0 else n + p for p in positions if -n <= p < n})
        rows = {str(i): _plain(table.slice(i, 1).to_pylist()[0]) for i in idx}
        return {"kind": "parquet", "rows": n, "columns": table.column_names, "records": rows}
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
        lines = path.read_text(encoding="utf-8").splitlines()
        return {
            "kind": "csv",
            "rows": len(lines) - 1,
            "header": lines[0] if lines else "",
            "records": _pick(lines[1:], len(lines) - 1, positions),
        }
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"kind": "bytes", "sha256": digest}


def fingerprint_tree(root: str | Path, patterns: list[str]) -> dict[str, Any]:
    """Fingerprints of every file under ``root`` matching one of the glob ``patterns``."""
    root = Path(root)
    files = sorted(
        {p for pat in patterns for p in root.glob(pat) if p.is_file() and p.name not in UNPINNED}
    )
    return {str(p.relative_to(root)): fingerprint(p) for p in files}


def diff_fingerprints(expected: dict, actual: dict) -> list[str]:
    """Human-readable differences (empty when equal)."""
    problems = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            problems.append(f"{key}: missing")
        elif key not in expected:
            problems.append(f"{key}: not in the expected fingerprints")
        elif expected[key] != actual[key]:
            e, a = expected[key], actual[key]
            if e.get("rows") != a.get("rows"):
                problems.append(f"{key}: {a.get('rows')} records, expected {e.get('rows')}")
            else:
                problems.append(f"{key}: content differs")
    return problems
