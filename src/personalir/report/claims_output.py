"""The paper claims' outputs: the CSV and Markdown of every verdict (PQB's, then TTP's), and
the command line that evaluates a results tree (``python -m personalir.report.claims_output``;
the claims themselves are :mod:`personalir.report.claims`)."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from personalir.common.claims import NAN, STATUSES
from personalir.common.config import DEFAULT_CONFIG, ConfigError, deep_merge, validate_config
from personalir.common.io import atomic_open
from personalir.report.claims import CSV_COLUMNS, PQB_YAML, evaluate_all


def number(x) -> float:
    """A CSV or JSON value as a float: NaN for ``None`` and the empty string."""
    return NAN if x is None or x == "" else float(x)


def margin_text(claim: Mapping) -> str:
    """``+1.23 [+0.50, +2.00]``; the interval left out where a bound is missing, ``--`` when
    the margin is."""
    m, lo, hi = (number(claim.get(k)) for k in ("margin", "ci_low", "ci_high"))
    if math.isnan(m):
        return "--"
    return f"{m:+.2f}" + ("" if math.isnan(lo) or math.isnan(hi) else f" [{lo:+.2f}, {hi:+.2f}]")


def markdown(claims: Sequence[Mapping]) -> str:
    md = lambda t: str("" if t is None else t).replace("|", "\\|").replace("\n", " ")

    lines = ["# Paper claims (PQB, TTP)", ""]
    lines += [f"- {s}: {sum(c['status'] == s for c in claims)}" for s in STATUSES]
    lines += ["", "Margin: positive = held by that much (points; validation: the table's unit)."]
    lines += ["Brackets: CI (PQB: the conservative gap between the systems' bootstrap bounds).", ""]
    lines += ["| paper | id | table | status | measured | margin [CI] | text |", "|---" * 7 + "|"]
    for c in claims:
        cells = [c.get("paper", ""), f"`{c['id']}`", c.get("table", ""), c["status"]]
        cells += [c.get("measured", ""), margin_text(c), c.get("text", "")]
        lines.append("| " + " | ".join(md(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(claims: Sequence[Mapping], csv_path, md_path) -> str:
    """The claims as CSV (:data:`CSV_COLUMNS`) and Markdown, atomically; returns the Markdown."""
    with atomic_open(csv_path) as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for c in claims:
            row = {k: c.get(k, "") for k in CSV_COLUMNS}
            for k in ("margin", "ci_low", "ci_high"):
                row[k] = "" if math.isnan(number(c.get(k))) else f"{number(c.get(k)):.6f}"
            writer.writerow(row)
    text = markdown(claims)
    with atomic_open(md_path) as fh:
        fh.write(text)
    return text


def read_config(paths: Sequence[str | Path]) -> dict:
    """The files deep-merged (a later one wins, as with snakemake's ``--configfile a b``),
    validated and default-filled; the plain merge when that fails."""
    texts = [(str(p), Path(p).read_text(encoding="utf-8")) for p in paths]
    merged = {}
    for _, text in texts:
        merged = deep_merge(merged, yaml.safe_load(text) or {})
    try:
        return validate_config(merged, sources=texts[::-1])
    except ConfigError as exc:
        print(f"warning: {exc}; using the plain YAML", file=sys.stderr)
        return merged


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--config", nargs="+", default=[DEFAULT_CONFIG])
    ap.add_argument("--paper", type=Path, default=PQB_YAML, help="the PQB paper-results YAML")
    ap.add_argument("--csv", type=Path, help="default: <results_dir>/report/claims.csv")
    ap.add_argument("--md", type=Path, help="default: <results_dir>/report/claims.md")
    args = ap.parse_args(argv)
    claims = evaluate_all(args.results_dir, read_config(args.config), args.paper)
    report = args.results_dir / "report"
    text = write_outputs(claims, args.csv or report / "claims.csv", args.md or report / "claims.md")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
