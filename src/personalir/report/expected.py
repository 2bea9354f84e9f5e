"""Expected results with tolerances: the headline figures of every table, checked per value.

A configuration's expected file (``paper.expected``, e.g. ``config/expected/sample.yaml``)
holds, for each of the tables in :data:`TABLES` that the configuration produces, every
headline value (point estimates and counts; not CI bounds, not the papers' values beside
ours) keyed by the table's row and column, and a tolerance. The ``expected_results`` rule
compares a results tree with it and writes one line per value, ``OK`` or ``FAIL`` with the
file, row, column, expected and observed values; any FAIL (or a table, row or column that is
gone) fails the rule, so a library upgrade that moves a number is caught and named. Values
the file does not list (a new table or row) are reported as ``NEW`` and do not fail.

Record a file from a results tree you trust (the values are data, never typed by hand)::

    python -m personalir.report.expected record results --out config/expected/sample.yaml
    python -m personalir.report.expected check results config/expected/sample.yaml
    python -m personalir.report.expected render config/expected/sample.yaml \\
        --out docs/expected_results.md

A value passes when ``|observed - expected| <= max(abs, rel x |expected|)`` with the table's
tolerance (else the file's default); integers stored as integers (counts) must match
exactly; a missing value (NaN) passes only against a missing one.

Before its values are read, each table's bytes are checked (``check --lock``, default the
``dvc.lock`` of the current folder): a table that ``dvc.lock`` records must be the recorded
file or as the workflow job that wrote it left it, any other table as its writer left it
(:func:`personalir.common.tracked.content_checker`). A table changed outside the workflow (a
flipped byte, its mtime kept) is reported as ``CHANGED`` and fails the check, whatever its
numbers say.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from personalir.common.config import duplicate_keys
from personalir.common.io import atomic_open
from personalir.common.tracked import content_checker

# Table (path under the results root) -> its row key columns. The headline tables of both
# papers as this project writes them; a table a configuration does not produce is skipped.
TABLES: dict[str, tuple[str, ...]] = {
    "report/dataset_statistics.csv": ("Domain",),
    "syntax/attribution.csv": ("domain", "model"),
    "errors/sampling_eval.csv": ("domain", "sampler"),
    "queries/datasheet.csv": ("Domain",),
    "queries/identifiability.csv": ("Domain",),
    "validation/ratings.csv": ("measure",),
    "validation/agreement.csv": ("dimension",),
    "retrieval/table_effectiveness.csv": ("domain", "retriever", "subset"),
    "retrieval/table_flip_rrstd.csv": ("domain", "retriever"),
    "retrieval/table_degradation.csv": ("domain", "retriever"),
    "ttp/table3.csv": ("dataset",),
    "ttp/table4.csv": ("Method",),
    "ttp/table5.csv": ("Method",),
    "ttp/table6.csv": ("method",),
    "ttp/table7.csv": ("method",),
    "ttp/table8.csv": ("Method",),
    "ttp/figure3.csv": ("category",),
    "ttp/figure5.csv": ("method", "test_set"),
    "ttp/figure6.csv": ("N", "Set"),
    "ttp/figure8.csv": ("Path",),
    "ttp/pqb/table.csv": ("domain", "method", "history"),
    "ttp/pqb/history_effects.csv": ("method", "metric"),
}
# Columns that are not headline values: interval bounds, the papers' values, settings.
_SKIP_SUFFIXES = ("ci_low", "ci_high", " paper", "paper")
_SKIP_PREFIXES = ("paper_", "paper ")
_SKIP_COLUMNS = {"confidence", "bootstrap_samples", "chance"}
DEFAULT_TOLERANCE = {"abs": 0.005, "rel": 0.0}
KEY_SEPARATOR = " | "


class ExpectedFileError(ValueError):
    """The expected-results file is malformed (the message names the file and the entry)."""


def headline_columns(frame: pd.DataFrame, key: Sequence[str]) -> list[str]:
    """The numeric columns of ``frame`` that hold headline values (see module doc)."""
    out = []
    for col in frame.columns:
        name = str(col)
        if name in key or name in _SKIP_COLUMNS:
            continue
        if name.endswith(_SKIP_SUFFIXES) or name.startswith(_SKIP_PREFIXES):
            continue
        if pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col]):
            out.append(name)
    return out


def _row_key(row: Mapping, key: Sequence[str]) -> str:
    return KEY_SEPARATOR.join(str(row[k]) for k in key)


def _plain(value):
    """A YAML-friendly number: ints stay ints, NaN becomes None, floats get 6 decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    return round(float(value), 6)


def read_table(path: str | Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=True)


def table_values(frame: pd.DataFrame, key: Sequence[str], where: str) -> dict[str, dict]:
    """``{row key: {column: value}}`` of a table's headline values."""
    missing = [k for k in key if k not in frame.columns]
    if missing:
        raise ExpectedFileError(f"{where}: key columns {missing} not in {list(frame.columns)}")
    cols = headline_columns(frame, key)
    out: dict[str, dict] = {}
    for row in frame.to_dict("records"):
        k = _row_key(row, key)
        if k in out:
            raise ExpectedFileError(f"{where}: row key {k!r} ({', '.join(key)}) is not unique")
        out[k] = {c: _plain(row[c]) for c in cols}
    return out


def record(results_dir: str | Path, *, configuration: str, tolerance=None) -> dict:
    """The expected-results document of a results tree (every table of :data:`TABLES` it
    has)."""
    results_dir = Path(results_dir)
    tables = {}
    for rel, key in TABLES.items():
        path = results_dir / rel
        if path.is_file():
            tables[rel] = {"key": list(key), "rows": table_values(read_table(path), key, str(path))}
    if not tables:
        raise ExpectedFileError(f"{results_dir}: none of the headline tables is there")
    return {
        "configuration": configuration,
        "tolerance": dict(tolerance or DEFAULT_TOLERANCE),
        "tables": tables,
    }


def _tolerance(doc: Mapping, table: Mapping, where: str) -> tuple[float, float]:
    tol = {**DEFAULT_TOLERANCE, **(doc.get("tolerance") or {}), **(table.get("tolerance") or {})}
    try:
        a, r = float(tol["abs"]), float(tol["rel"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ExpectedFileError(f"{where}: tolerance needs numbers abs and rel ({exc})") from exc
    if a < 0 or r < 0:
        raise ExpectedFileError(f"{where}: tolerance must not be negative")
    return a, r


def _compare(expected, observed, abs_tol: float, rel_tol: float) -> tuple[bool, float | None]:
    """(passes, the tolerance applied)."""
    obs_missing = observed is None or (isinstance(observed, float) and math.isnan(observed))
    if expected is None:
        return obs_missing, None
    if obs_missing:
        return False, None
    if isinstance(expected, int) and not isinstance(expected, bool):
        return float(observed) == float(expected), 0.0
    tol = max(abs_tol, rel_tol * abs(float(expected)))
    return abs(float(observed) - float(expected)) <= tol + 1e-12, tol


def check(
    results_dir: str | Path,
    doc: Mapping,
    where: str = "expected",
    verify: Callable[[Path], str | None] | None = None,
) -> pd.DataFrame:
    """One row per expected value (and per new one): ``file, row, column, expected,
    observed, tolerance, status`` with status OK, FAIL, MISSING (table, row or column gone)
    or NEW (not in the expected file).

    ``verify(path)`` says what is wrong with a table's bytes (None: nothing); a table it
    faults gets one row with status CHANGED and its message as ``observed``, and its values
    are not read."""
    results_dir = Path(results_dir)
    tables = doc.get("tables")
    if not isinstance(tables, Mapping) or not tables:
        raise ExpectedFileError(f"{where}: 'tables' must map table paths to entries")
    out = []

    def add(rel, row, col, exp, obs, tol, status):
        out.append(
            {
                "file": rel,
                "row": row,
                "column": col,
                "expected": exp,
                "observed": obs,
                "tolerance": tol,
                "status": status,
            }
        )

    for rel, table in tables.items():
        entry = f"{where}: tables[{rel!r}]"
        if not isinstance(table, Mapping) or "key" not in table or "rows" not in table:
            raise ExpectedFileError(f"{entry}: needs 'key' and 'rows'")
        abs_tol, rel_tol = _tolerance(doc, table, entry)
        path = results_dir / rel
        if not path.is_file():
            add(rel, "", "", None, None, None, "MISSING")
            continue
        problem = verify(path) if verify is not None else None
        if problem:
            add(rel, "", "", None, problem, None, "CHANGED")
            continue
        observed = table_values(read_table(path), table["key"], str(path))
        for row, cols in table["rows"].items():
            if row not in observed:
                add(rel, row, "", None, None, None, "MISSING")
                continue
            for col, exp in cols.items():
                if col not in observed[row]:
                    add(rel, row, col, exp, None, None, "MISSING")
                    continue
                obs = observed[row][col]
                ok, tol = _compare(exp, obs, abs_tol, rel_tol)
                add(rel, row, col, exp, obs, tol, "OK" if ok else "FAIL")
            for col in observed[row]:
                if col not in cols:
                    add(rel, row, col, None, observed[row][col], None, "NEW")
        for row in observed:
            if row not in table["rows"]:
                add(rel, row, "", None, None, None, "NEW")
    return pd.DataFrame(
        out, columns=["file", "row", "column", "expected", "observed", "tolerance", "status"]
    )


def failures(report: pd.DataFrame) -> pd.DataFrame:
    return report[report["status"].isin(["FAIL", "MISSING", "CHANGED"])]


def describe(report: pd.DataFrame, limit: int | None = None) -> list[str]:
    """Readable lines: a count per status, then every failing value named."""
    counts = report["status"].value_counts()
    lines = ["expected results: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in _ORDER)]
    bad = failures(report)
    for r in bad.head(limit).itertuples(index=False) if limit else bad.itertuples(index=False):
        if r.status == "CHANGED":
            lines.append(str(r.observed))
            continue
        lines.append(
            f"{r.status} {r.file} [{r.row}] {r.column}: expected {r.expected}, observed "
            f"{r.observed} (tolerance {r.tolerance})"
        )
    return lines


_ORDER = ("OK", "FAIL", "MISSING", "NEW", "CHANGED")


def load(path: str | Path) -> dict:
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    twice = duplicate_keys(text, str(path))
    if twice:
        raise ExpectedFileError("\n".join(twice))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ExpectedFileError(f"{path}: {exc}") from exc
    if not isinstance(doc, Mapping):
        raise ExpectedFileError(f"{path}: expected a mapping")
    return dict(doc)


def write_document(doc: Mapping, out: str | Path, source: str) -> None:
    import yaml

    header = (
        f"# Expected results of the {doc['configuration']!r} configuration, recorded from\n"
        f"# {source} by `python -m personalir.report.expected record`. Data, not code: do not\n"
        "# edit a value by hand; re-record after a change that moves results on purpose.\n"
    )
    with atomic_open(out) as fh:
        fh.write(header)
        yaml.safe_dump(dict(doc), fh, sort_keys=False, allow_unicode=True, width=100)


def expected_tables(path: str | Path, results_dir: str) -> list[str]:
    """The tables an expected file lists, as paths under ``results_dir`` (the rule's inputs)."""
    doc = load(path)
    return [f"{results_dir}/{rel}" for rel in (doc.get("tables") or {})]


def _cell(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if abs(float(value)) >= 1e6:
        return f"{float(value):g}"
    return f"{float(value):.4f}".rstrip("0").rstrip(".")


def render_markdown(doc: Mapping, source: str) -> str:
    """The expected file as Markdown, one table per results table (the documentation's
    tables are rendered from the recorded file, never typed by hand)."""
    tol = {**DEFAULT_TOLERANCE, **(doc.get("tolerance") or {})}
    lines = [
        f"# Expected results: the {doc.get('configuration')!r} configuration",
        "",
        f"Rendered from `{source}` by `python -m personalir.report.expected render`; do not edit.",
        f"Tolerance unless a table says otherwise: absolute {tol['abs']:g}, relative"
        f" {tol['rel']:g}; counts (integers) exactly.",
        "",
    ]
    for rel, table in (doc.get("tables") or {}).items():
        rows = table.get("rows") or {}
        columns: list[str] = []
        for cols in rows.values():
            columns += [c for c in cols if c not in columns]
        lines += [f"## `{rel}`", ""]
        if table.get("tolerance"):
            lines += [f"Tolerance: {table['tolerance']}", ""]
        head = [" / ".join(table["key"])] + columns
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * len(columns)) + "|")
        for row, cols in rows.items():
            cells = [str(row)] + [_cell(cols[c]) if c in cols else "" for c in columns]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m personalir.report.expected", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="write the expected file of a results tree")
    rec.add_argument("results_dir")
    rec.add_argument("--out", required=True)
    rec.add_argument("--configuration", help="its name (default: the file's stem)")
    chk = sub.add_parser("check", help="compare a results tree with an expected file")
    chk.add_argument("results_dir")
    chk.add_argument("expected")
    chk.add_argument("--csv", help="write the per-value report here")
    chk.add_argument(
        "--lock",
        default="dvc.lock",
        help="the dvc.lock whose records the tables are checked against (default: this "
        "folder's; a missing file: the writers' records only)",
    )
    ren = sub.add_parser("render", help="write an expected file as Markdown tables")
    ren.add_argument("expected")
    ren.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "render":
        with atomic_open(args.out) as fh:
            fh.write(render_markdown(load(args.expected), args.expected))
        print(f"{args.out}: rendered from {args.expected}")
        return 0
    if args.cmd == "record":
        doc = record(args.results_dir, configuration=args.configuration or Path(args.out).stem)
        write_document(doc, args.out, Path(args.results_dir).name)
        n = sum(len(c) for t in doc["tables"].values() for c in t["rows"].values())
        print(f"{args.out}: {n} values of {len(doc['tables'])} tables")
        return 0
    report = check(
        args.results_dir,
        load(args.expected),
        where=args.expected,
        verify=content_checker(args.lock),
    )
    if args.csv:
        with atomic_open(args.csv) as fh:
            report.to_csv(fh, index=False)
    print("\n".join(describe(report)))
    return 1 if len(failures(report)) else 0


if __name__ == "__main__":
    sys.exit(main())
