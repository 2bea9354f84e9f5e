"""Bring your own retriever: evaluate it on PQB queries with the paper's tables and figures.

Installed as ``pqb-evaluate`` (the same as ``python -m personalir.retrieval.evaluate``); the
``evaluate`` sub-command is the default, so ``pqb-evaluate evaluate --domains ...`` and
``pqb-evaluate --domains ...`` are the same. ``pqb-evaluate export-queries`` first writes the
query ids and texts to make a run file from (``pqb-evaluate export-queries --help``).
Retrievers come five ways, mixable, evaluated side by side in the order given: ``--catalog``
(a retriever of the config's catalogue), ``--retriever`` (a full entry as JSON), ``--run`` (a
TREC run file made elsewhere), ``--st-model`` (any sentence-transformers model) and
``--class`` (a class implementing the Retriever interface; its module is found in the
current folder too). For example::

    pqb-evaluate \\
        --domains Baby_Products Video_Games \\
        --meta 'data/meta_{domain}.jsonl.gz' \\
        --queries 'pqb_release/{domain}.json' --query-format released \\
        --unknown-products drop \\
        --catalog bm25 \\
        --retriever bm25_native='{"type": "bm25", "params": {"ties": "native"}}' \\
        --run mine='runs/{domain}.trec' \\
        --st-model e5='intfloat/e5-base-v2' --allow-download \\
        --class overlap='personalir.retrieval.examples:TermOverlapRetriever' \\
        --out byo_results

``{domain}`` in a path stands for each domain (any name made of letters, digits, ``_``, ``-``
and ``.``).

Corpus: ``--corpus`` is a products.parquet (the workflow's ``results/data/<Domain>/``);
``--meta`` an Amazon Reviews 2023 meta JSONL(.gz) from which the corpus is built as the
workflow builds it (ingest, then one document per product), written to
<out>/<Domain>/products.parquet. A document is made of the config's
``data.products.document`` fields (default: title + description + features, one paragraph;
``details`` are not part of it); ``--document-fields`` and its companions choose others,
e.g. ``--document-fields title features details --document-separator '\\n'
--details-format '{key}: {value}'`` gives the title, then one line per feature and per
``details`` pair. The console names the fields used; the template is recorded in
<Domain>/products.report.json and in every meta/<name>.json.

Queries (``--query-format``): ``benchmark`` is this workflow's benchmark.jsonl; ``released``
a released PQB file, either the current ``{asin: [{asin, uid, syntax_query, typo_query}]}``
or the older one-query-per-record format (a JSON list or JSONL of ``{asin, uid, query}``),
recognised by shape (a JSON object: current; anything else: older); ``released-v0`` accepts
only the older one. A released query in no pair (the only user of its product, without a
``typo_query``) is evaluated for effectiveness only (``unpaired``) and counted; the console
and <Domain>/queries.report.json give the counts per kind, and, with ``--unknown-products
drop``, how many queries were dropped and why.

Ties: every built-in retriever orders equal scores by corpus position, i.e. by ascending
``parent_asin`` (documents are sorted by id), so a ranking never depends on an algorithm's
internal order; the BM25 retriever's ``ties: native`` parameter keeps bm25s' own order instead
(for comparison with plain bm25s). Imported run files are read by score, highest first,
ties broken by their rank column (personalir.retrieval.runio). The console says, per
retriever and domain, how many retrieved targets tie another document's score.

Input errors (a malformed run or query file, an unknown query or document id, a file that is
not UTF-8, an empty query set, a key given twice in a JSON object, a missing file) stop the
command with ``file:line: reason`` (``file: byte offset N: reason`` for a decoding error) and
exit status 2. A run with no lines is an error too, unless ``--allow-empty-run``: then its
rows say "no results", never 0.00 (an empty run misses every query, which Flip and Deg
would score as perfectly robust). Models load offline unless ``--allow-download``.

Settings: the metrics, bootstrap, significance, depth and the ``--catalog`` retrievers come
from ``--config`` (default: the packaged config/config.yaml's ``retrieval`` section and seed;
``data`` for ``--meta``). Prints a summary table (Flip@1, RRstd, Deg@20, MRRdeg, R@10 per
retriever, in percent, the paper's values beside a retriever that stands in for one of its
systems) and writes under ``--out``: summary.json (that table, every domain, the intervals),
<Domain>/queries.jsonl and queries.report.json, <Domain>/<name>.run and .metrics.parquet,
meta/<name>.json, summary.csv, significance.csv,
table_{flip_rrstd,degradation,effectiveness}.csv/.tex (the effectiveness table gives every
measure on the clean queries, on the error queries and on all, the CSV one row per subset),
retrieval_flip_by_depth.pdf, retrieval_deg_ci.pdf.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

import yaml

from personalir.common.config import ConfigError, validate_config
from personalir.common.io import read_json, utf8_error, write_json
from personalir.common.models import ModelNotAvailableError
from personalir.data.products import DocumentTemplate
from personalir.queries.benchmark_format import read_benchmark
from personalir.retrieval import byo_args
from personalir.retrieval.base import RetrieverConfigError, RunSettings
from personalir.retrieval.byo import (
    InputError,
    check_dropped_lines,
    check_queries,
    corpus_document,
    dropped_ids,
    prepare_inputs,
    run_is_empty,
    tied_targets,
    write_query_export,
)
from personalir.retrieval.byo_args import (
    PROG,
    build_export_parser,
    check_domains,
    document_template,
    export_format,
    split_command,
)
from personalir.retrieval.byo_summary import (
    blank_no_results,
    build_summary,
    drop_no_results,
    format_table,
    read_paper,
)
from personalir.retrieval.corpus import load_query_source
from personalir.retrieval.figures import deg_ci, flip_by_depth
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.pipeline import evaluate_runs, import_run, run_retriever
from personalir.retrieval.summary import (
    SummarySettings,
    load_frames,
    significance,
    summarize,
    write_csv,
)
from personalir.retrieval.tables import write_tables

#: What stops the command with exit status 2 and ``file:line: reason``, without a traceback:
#: unreadable, malformed or inconsistent inputs. (A retriever's own code failing is not an
#: input error: it keeps its traceback.)
INPUT_ERRORS = (ValueError, OSError)
#: Set to 1 unless ``--allow-download``: the hub libraries then never reach the network.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
EMPTY_RUN_HINT = (
    "pass --allow-empty-run to evaluate it as a retriever that found nothing (its rows then "
    "say 'no results')"
)


class RetrieverFailed(RuntimeError):
    """A retriever's own code raised (the cause, with its traceback, is chained)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``evaluate`` command line (its help text is this module's docstring)."""
    return byo_args.build_parser(__doc__)


def main(argv: list[str] | None = None) -> int:
    """``pqb-evaluate [evaluate|export-queries] ...``; input errors exit with status 2."""
    command, rest = split_command(sys.argv[1:] if argv is None else list(argv))
    try:
        if command == "export-queries":
            return export_queries(rest)
        return evaluate(rest)
    except INPUT_ERRORS as exc:
        print(f"{PROG}: error: {error_text(exc)}", file=sys.stderr)
        raise SystemExit(2) from None


def error_text(exc: BaseException) -> str:
    """An input error as ``file[:line]: reason`` (OSErrors name their file themselves; a
    config's errors, one per line, each with its file and line)."""
    if isinstance(exc, OSError) and getattr(exc, "filename", None):
        return f"{exc.filename}: {exc.strerror or exc}"
    head, _, rest = str(exc).partition("\n")
    if isinstance(exc, ConfigError) and rest:
        return "\n".join(line.strip() for line in rest.splitlines())
    return str(exc)


def read_config(path: str) -> dict:
    """The validated config of ``--config``; errors name the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise InputError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return validate_config(raw or {}, source=path, text=text)


def download_policy(allow_download: bool, section: dict) -> None:
    """Without ``--allow-download`` (or ``retrieval.allow_download: true``) models load
    offline only: the hub variables are forced to 1. With it they are left as they are."""
    if allow_download:
        section["allow_download"] = True
    if not section.get("allow_download"):
        for name in OFFLINE_VARIABLES:
            os.environ[name] = "1"


def use_current_folder() -> None:
    """Let ``--class MODULE:CLASS`` find MODULE in the current folder, as ``python -m`` does
    (an installed console script's path starts at its own folder)."""
    cwd = os.getcwd()
    if cwd not in {os.path.abspath(p or os.curdir) for p in sys.path}:
        sys.path.insert(0, cwd)


def evaluate(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "entries", None):
        parser.error("give at least one of --run, --st-model, --class, --retriever, --catalog")
    check_domains(parser, args.domains)
    config = read_config(args.config)
    try:
        document = document_template(args, config)
    except ValueError as exc:
        parser.error(str(exc))
    section = config["retrieval"]
    if args.device:
        section["device"] = args.device
    download_policy(args.allow_download, section)
    out = Path(args.out)
    domains = args.domains
    entries = [resolve_entry(parser, args, section, e) for e in args.entries]
    for i, (_, name, entry) in enumerate(entries):
        first = (entry.get("params") or {}).get("first_stage")
        if first and first not in [n for _, n, _ in entries[:i]]:
            parser.error(f"{name!r} needs its first stage {first!r} listed before it")
    corpus, queries, reports = prepare_inputs(args, config, out)
    if document is None:  # a given corpus: its template where a report beside it says
        found = [corpus_document(path) for path in corpus]
        document = found[0] if found and all(f == found[0] for f in found) else None
    document_meta = (
        {"built_from": "meta", **document.as_dict()}
        if isinstance(document, DocumentTemplate)
        else {"built_from": "corpus", **(document or {"fields": None})}
    )
    settings = RunSettings.from_config(section, seed=config["seed"], threads=args.threads)
    if any("class" in entry for _, _, entry in entries):
        use_current_folder()
    metric_settings = MetricSettings.from_config(section["metrics"])
    names: list[str] = []
    empty: set[tuple[str, str]] = set()
    for kind, name, entry in entries:
        runs = [str(out / d / f"{name}.run") for d in domains]
        meta = out / "meta" / f"{name}.json"
        if kind == "run":
            sources = [str(entry["path"]).format(domain=d) for d in domains]
            empty |= check_empty_runs(name, domains, sources, args.allow_empty_run)
            for d, source, report, query_path in zip(
                domains, sources, reports, queries, strict=True
            ):
                if report["queries_dropped"]:
                    check_dropped_lines(source, dropped_ids(args, d, query_path))
            import_run(
                name=name,
                entry=entry,
                domains=domains,
                source_paths=sources,
                corpus_paths=corpus,
                query_paths=queries,
                run_paths=runs,
                meta_path=meta,
                document=document_meta,
            )
        else:
            first = (entry.get("params") or {}).get("first_stage")
            run_model(
                kind,
                name,
                entry,
                dict(
                    settings=settings,
                    depth=section["depth"],
                    domains=domains,
                    corpus_paths=corpus,
                    query_paths=queries,
                    run_paths=runs,
                    meta_path=meta,
                    first_stage_paths=[str(out / d / f"{first}.run") for d in domains]
                    if first
                    else None,
                    document=document_meta,
                ),
            )
            empty |= check_empty_runs(name, domains, runs, args.allow_empty_run)
        for d, run_path, query_path in zip(domains, runs, queries, strict=True):
            tied, found = tied_targets(run_path, read_benchmark(query_path))
            print(
                f"{name} {d}: {tied} of {found} retrieved targets tie another document's "
                "score (their rank follows the tie order)",
                file=sys.stderr,
            )
        evaluate_runs(
            name=name,
            domains=domains,
            corpus_paths=corpus,
            query_paths=queries,
            run_paths=runs,
            meta_path=meta,
            settings=metric_settings,
            out_paths=[str(out / d / f"{name}.metrics.parquet") for d in domains],
        )
        names.append(name)
    write_results(args, section, config["seed"], names, out, empty)
    return 0


def resolve_entry(parser, args, section: dict, given: tuple) -> tuple[str, str, dict]:
    """(kind, name, retriever entry) of one retriever option; a usage error names it."""
    kind, name, value = given
    if kind == "run":
        return kind, name, {"path": value}
    if kind == "st_model":
        return kind, name, {"type": "dense", "model": value}
    if kind == "class":
        return kind, name, {"class": value}
    if kind == "retriever":
        try:
            entry = json.loads(value)
        except json.JSONDecodeError as exc:
            parser.error(f"--retriever {name}: not valid JSON ({exc}): {value!r}")
        if not isinstance(entry, dict):
            parser.error(f"--retriever {name}: expected a JSON object, got {value!r}")
        return kind, name, entry
    if name not in section["retrievers"]:
        parser.error(f"--catalog {name!r} is not in {args.config}'s catalogue")
    return kind, name, section["retrievers"][name]


OPTION = {"st_model": "--st-model", "class": "--class", "retriever": "--retriever"}
OPTION["catalog"] = "--catalog"


def run_model(kind: str, name: str, entry: dict, kwargs: dict) -> None:
    """Run one retriever; its configuration and model errors are input errors naming its
    option, anything its own code raises keeps the traceback."""
    try:
        run_retriever(name=name, entry=entry, **kwargs)
    except (RetrieverConfigError, ModelNotAvailableError) as exc:
        hint = ""
        if "cannot import module" in str(exc):
            hint = f" (modules are looked up in the current folder, {os.getcwd()}, and sys.path)"
        elif isinstance(exc, ModelNotAvailableError):
            hint = " (or pass --allow-download)"
        raise InputError(f"{OPTION[kind]} {name}: {exc}{hint}") from None
    except INPUT_ERRORS as exc:
        raise RetrieverFailed(f"retriever {name!r} failed: {type(exc).__name__}: {exc}") from exc


def check_empty_runs(name: str, domains, paths, allowed: bool) -> set[tuple[str, str]]:
    """The (retriever, domain) whose run has no lines; an input error unless ``allowed``."""
    empty = set()
    for domain, path in zip(domains, paths, strict=True):
        if run_is_empty(path):
            if not allowed:
                raise InputError(f"{path}: the run of {name!r} has no lines; {EMPTY_RUN_HINT}")
            print(f"{name} {domain}: the run has no lines: no results", file=sys.stderr)
            empty.add((name, domain))
    return empty


def write_results(args, section: dict, seed: int, names, out: Path, empty) -> None:
    """Summary, significance, the tables and figures, summary.json and the console table."""
    domains = args.domains
    metrics = MetricSettings.from_config(section["metrics"])
    stats = SummarySettings.from_config(section, seed=seed)
    frames = load_frames(
        {(n, d): str(out / d / f"{n}.metrics.parquet") for n in names for d in domains}
    )
    summary = blank_no_results(summarize(frames, names, domains, metrics, stats), empty)
    write_csv(out / "summary.csv", summary)
    tests = significance(frames, names, domains, metrics, stats)
    write_csv(out / "significance.csv", drop_no_results(tests, empty))
    keys = ("flip_rrstd", "degradation", "effectiveness")
    write_tables(
        summary,
        names,
        domains,
        metrics,
        label=args.label,
        csv_paths={k: str(out / f"table_{k}.csv") for k in keys},
        tex_paths={k: str(out / f"table_{k}.tex") for k in keys},
    )
    fmt = section["figures"]["format"]
    flip_by_depth(summary, names, domains, metrics, str(out / f"retrieval_flip_by_depth.{fmt}"))
    deg_ci(summary, names, domains, metrics, str(out / f"retrieval_deg_ci.{fmt}"))
    metas = {n: read_json(out / "meta" / f"{n}.json") for n in names}
    content = build_summary(summary, names, domains, metrics, metas, empty, read_paper())
    write_json(out / "summary.json", content)
    print(format_table(content), end="")
    print(f"wrote {out}/summary.json, summary.csv, tables and figures for {', '.join(names)}")


def export_queries(argv: list[str]) -> int:
    """``pqb-evaluate export-queries``: the query ids and texts of each domain, in TSV or
    JSONL, as the evaluation will read them (with a corpus: exactly those it evaluates)."""
    parser = build_export_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    check_domains(parser, args.domains)
    fmt = export_format(parser, args)
    config = read_config(args.config)
    try:
        document_template(args, config)
    except ValueError as exc:
        parser.error(str(exc))
    records = {}
    if args.corpus or args.meta:
        with tempfile.TemporaryDirectory(prefix="pqb-export-") as tmp:
            _, paths, _ = prepare_inputs(args, config, Path(tmp))
            records = {d: read_benchmark(p) for d, p in zip(args.domains, paths, strict=True)}
    else:
        for d in args.domains:
            source = args.queries.format(domain=d)
            found, _ = load_query_source(args.query_format, source, d)
            check_queries(source, len(found), len(found))
            other = [r for r in found if r["domain"] != d]
            if other:
                raise InputError(
                    f"{source}: query {other[0]['query_id']!r} is of domain "
                    f"{other[0]['domain']!r}, expected {d!r}"
                )
            records[d] = found
    for d, found in records.items():
        path = args.out.format(domain=d)
        n, changed = write_query_export(path, found, fmt)
        kinds = {k: sum(r["kind"] == k for r in found) for k in ("syntactic", "writing_error")}
        unpaired = n - sum(kinds.values())
        checked = "checked against the corpus" if args.corpus or args.meta else "all of the file"
        print(
            f"{d}: {n} queries ({kinds['syntactic']} syntactic, {kinds['writing_error']} "
            f"writing-error, {unpaired} unpaired; {checked}) -> {path}"
        )
        if changed:
            print(
                f"{d}: {len(changed)} query texts hold a tab or a line break, written as a "
                f"space in the TSV (e.g. {changed[0]}); --format jsonl keeps them as they are"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
