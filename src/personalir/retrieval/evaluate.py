"""Bring your own retriever: evaluate it on PQB queries with the paper's tables and figures.

Installed as ``pqb-evaluate`` (the same as ``python -m personalir.retrieval.evaluate``).
Retrievers come five ways, mixable, evaluated side by side in the order given: ``--catalog``
(a retriever of the config's catalogue), ``--retriever`` (a full entry as JSON), ``--run`` (a
TREC run file made elsewhere), ``--st-model`` (any sentence-transformers model) and
``--class`` (a class implementing the Retriever interface). For example::

    pqb-evaluate \\
        --domains Baby_Products Video_Games \\
        --meta 'data/meta_{domain}.jsonl.gz' \\
        --queries 'pqb_release/{domain}.json' --query-format released \\
        --unknown-products drop \\
        --catalog bm25 \\
        --retriever bm25_native='{"type": "bm25", "params": {"ties": "native"}}' \\
        --run mine='runs/{domain}.trec' \\
        --st-model e5='intfloat/e5-base-v2' \\
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

Settings: the metrics, bootstrap, significance, depth and the ``--catalog`` retrievers come
from ``--config`` (default: config/config.yaml's ``retrieval`` section and seed; ``data`` for
``--meta``). Writes under ``--out``: <Domain>/queries.jsonl and queries.report.json,
<Domain>/<name>.run and .metrics.parquet, meta/<name>.json, summary.csv, significance.csv,
table_{flip_rrstd,degradation,effectiveness}.csv/.tex (the effectiveness table gives every
measure on the clean queries, on the error queries and on all, the CSV one row per subset),
retrieval_flip_by_depth.pdf, retrieval_deg_ci.pdf.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path

from personalir.common.config import REPO_ROOT, validate_config
from personalir.data.products import DOCUMENT_FIELDS, DocumentTemplate
from personalir.queries.benchmark_format import RELEASED_FORMATS, read_benchmark
from personalir.retrieval.base import RunSettings
from personalir.retrieval.byo import corpus_document, corpus_from_meta, tied_targets
from personalir.retrieval.corpus import FORMAT_NAMES
from personalir.retrieval.figures import deg_ci, flip_by_depth
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.pipeline import (
    evaluate_runs,
    import_run,
    prepare_queries,
    run_retriever,
)
from personalir.retrieval.summary import (
    SummarySettings,
    load_frames,
    significance,
    summarize,
    write_csv,
)
from personalir.retrieval.tables import write_tables


class _Entry(argparse.Action):
    """Collect NAME=VALUE options of every kind into one ordered list."""

    def __call__(self, parser, namespace, value, option_string=None):
        if self.dest != "catalog":
            name, sep, rest = value.partition("=")
            if not sep or not name or not rest:
                parser.error(f"{option_string} expects NAME=VALUE, got {value!r}")
        else:
            name, rest = value, value
        entries = getattr(namespace, "entries", None) or []
        if any(n == name for _, n, _ in entries):
            parser.error(f"name {name!r} is given twice")
        entries.append((self.dest, name, rest))
        namespace.entries = entries


DOMAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
DROP_HINT = "pass --unknown-products drop"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pqb-evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument(
        "--domains",
        nargs="+",
        required=True,
        metavar="DOMAIN",
        help="domains to evaluate, each substituted for {domain} in the paths "
        "(e.g. Musical_Instruments, or a name of your own)",
    )
    corpus = ap.add_mutually_exclusive_group(required=True)
    corpus.add_argument(
        "--corpus",
        metavar="PATH",
        help="products.parquet per domain ({domain} in PATH): the retrieval corpus, e.g. "
        "'results/data/{domain}/products.parquet'",
    )
    corpus.add_argument(
        "--meta",
        metavar="PATH",
        help="Amazon Reviews 2023 meta JSONL(.gz) per domain ({domain} in PATH): the corpus "
        "is built from it into <out>/<Domain>/products.parquet, e.g. "
        "'data/meta_{domain}.jsonl.gz'",
    )
    ap.add_argument(
        "--document-fields",
        nargs="+",
        choices=DOCUMENT_FIELDS,
        metavar="FIELD",
        help="with --meta: the meta fields of a product document, in order (one or more of "
        f"{', '.join(DOCUMENT_FIELDS)}; default: the config's data.products.document.fields), "
        "e.g. --document-fields title features details",
    )
    ap.add_argument(
        "--document-separator",
        metavar="TEXT",
        help="with --meta: the text between a document's pieces, \\n and \\t read as newline "
        "and tab (default: the config's, a space), e.g. --document-separator '\\n'",
    )
    ap.add_argument(
        "--details-format",
        metavar="FORMAT",
        help="with --meta: how a details pair is written, with {key} and {value} (default: "
        "the config's, '{key}: {value}'), e.g. --details-format '{key} = {value}'",
    )
    ap.add_argument(
        "--document-terminator",
        metavar="TEXT",
        help="with --meta: appended to a piece not ending in . ! or ? ('' for nothing; "
        "default: the config's, '.'), e.g. --document-terminator ''",
    )
    ap.add_argument(
        "--queries",
        required=True,
        metavar="PATH",
        help="query file per domain ({domain} in PATH), in --query-format, e.g. "
        "'pqb_release/{domain}.json'",
    )
    ap.add_argument(
        "--query-format",
        choices=["benchmark", *RELEASED_FORMATS],
        default="benchmark",
        help="benchmark: this workflow's benchmark.jsonl; released: a released PQB file, "
        "current or older format (recognised by shape); released-v0: only the older "
        "{asin, uid, query} list/JSONL (default: %(default)s), e.g. --query-format released",
    )
    ap.add_argument(
        "--unknown-products",
        choices=["error", "drop"],
        default="error",
        help="queries whose product is not in the corpus: error stops and names them, drop "
        "removes their pairs and says how many (default: %(default)s), e.g. "
        "--unknown-products drop",
    )
    ap.add_argument(
        "--out", required=True, metavar="DIR", help="output folder, e.g. --out byo_results"
    )
    ap.add_argument(
        "--config",
        default=str(REPO_ROOT / "config" / "config.yaml"),
        metavar="YAML",
        help="config whose retrieval section (metrics, bootstrap, significance, depth, "
        "catalogue), seed and data section (for --meta) are used (default: %(default)s), "
        "e.g. --config config/paper.yaml",
    )
    ap.add_argument(
        "--label",
        default="bring-your-own",
        help="caption label of the tables (default: %(default)s), e.g. --label my-retriever",
    )
    ap.add_argument(
        "--device",
        default=None,
        help="override retrieval.device (cpu, cuda, cuda:0, auto), e.g. --device cuda:0",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the retrievers (default: %(default)s), e.g. --threads 4",
    )
    for opt, metavar, help_ in (
        (
            "--run",
            "NAME=PATH",
            "a TREC run file per domain ({domain} in PATH), e.g. mine='runs/{domain}.trec'",
        ),
        (
            "--st-model",
            "NAME=MODEL",
            "a sentence-transformers model (hub id or folder), e.g. e5='intfloat/e5-base-v2'",
        ),
        (
            "--class",
            "NAME=MODULE:CLASS",
            "a class implementing the Retriever interface, e.g. "
            "overlap='personalir.retrieval.examples:TermOverlapRetriever'",
        ),
        (
            "--retriever",
            "NAME=JSON",
            "a full retriever entry, e.g. "
            'bm25_native=\'{"type": "bm25", "params": {"ties": "native"}}\'',
        ),
        ("--catalog", "NAME", "a retriever of the config's retrieval.retrievers, e.g. bm25"),
    ):
        ap.add_argument(
            opt,
            action=_Entry,
            dest=opt[2:].replace("-", "_"),
            help=help_ + " (repeatable)",
            metavar=metavar,
        )
    return ap


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "entries", None):
        parser.error("give at least one of --run, --st-model, --class, --retriever, --catalog")
    bad = [d for d in args.domains if not DOMAIN_NAME.match(d)]
    if bad:
        parser.error(
            f"--domains: {bad[0]!r} is not a safe name (letters, digits, _ - . ; not starting "
            "with _ - .)"
        )
    import yaml

    raw = yaml.safe_load(Path(args.config).read_text(encoding="utf-8")) if args.config else {}
    config = validate_config(raw or {}, source=args.config)
    try:
        document = document_template(args, config)
    except ValueError as exc:
        parser.error(str(exc))
    section = config["retrieval"]
    if args.device:
        section["device"] = args.device
    out = Path(args.out)
    domains = args.domains

    def per_domain(pattern: str) -> list[str]:
        return [str(pattern).format(domain=d) for d in domains]

    try:
        corpus, queries = prepare_inputs(args, config, out)
    except (ValueError, OSError) as exc:  # unreadable or inconsistent inputs: no traceback
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if document is None:  # a given corpus: its template where a report beside it says
        found = [corpus_document(path) for path in corpus]
        document = found[0] if found and all(f == found[0] for f in found) else None
    document_meta = (
        {"built_from": "meta", **document.as_dict()}
        if isinstance(document, DocumentTemplate)
        else {"built_from": "corpus", **(document or {"fields": None})}
    )
    settings = RunSettings.from_config(section, seed=config["seed"], threads=args.threads)
    names = []
    for kind, name, value in args.entries:
        runs = [str(out / d / f"{name}.run") for d in domains]
        meta = out / "meta" / f"{name}.json"
        if kind == "run":
            import_run(
                name=name,
                entry={"path": value},
                domains=domains,
                source_paths=per_domain(value),
                corpus_paths=corpus,
                query_paths=queries,
                run_paths=runs,
                meta_path=meta,
                document=document_meta,
            )
        else:
            if kind == "st_model":
                entry = {"type": "dense", "model": value}
            elif kind == "class":
                entry = {"class": value}
            elif kind == "retriever":
                entry = json.loads(value)
            else:
                if name not in section["retrievers"]:
                    raise SystemExit(f"--catalog {name!r} is not in {args.config}'s catalogue")
                entry = section["retrievers"][name]
            first = (entry.get("params") or {}).get("first_stage")
            if first and first not in names:
                raise SystemExit(f"{name!r} needs its first stage {first!r} listed before it")
            run_retriever(
                name=name,
                entry=entry,
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
            )
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
            settings=MetricSettings.from_config(section["metrics"]),
            out_paths=[str(out / d / f"{name}.metrics.parquet") for d in domains],
        )
        names.append(name)
    metrics = MetricSettings.from_config(section["metrics"])
    stats = SummarySettings.from_config(section, seed=config["seed"])
    frames = load_frames(
        {(n, d): str(out / d / f"{n}.metrics.parquet") for n in names for d in domains}
    )
    summary = summarize(frames, names, domains, metrics, stats)
    write_csv(out / "summary.csv", summary)
    write_csv(out / "significance.csv", significance(frames, names, domains, metrics, stats))
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
    print(f"wrote {out}/summary.csv, tables and figures for {', '.join(names)}")
    return 0


DOCUMENT_OPTIONS = {
    "document_fields": "fields",
    "document_separator": "separator",
    "details_format": "details",
    "document_terminator": "terminator",
}


def _unescape(text: str) -> str:
    """``\\n`` and ``\\t`` as newline and tab (a shell passes them as two characters)."""
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def document_template(args: argparse.Namespace, config: dict) -> DocumentTemplate | None:
    """With ``--meta``: the config's document template with the ``--document-*`` options
    applied (written back into ``config``); None with ``--corpus`` (its documents exist)."""
    given = {key: getattr(args, opt) for opt, key in DOCUMENT_OPTIONS.items()}
    given = {k: v for k, v in given.items() if v is not None}
    if not args.meta:
        if given:
            raise ValueError(
                "--document-fields, --document-separator, --details-format and "
                "--document-terminator need --meta (a --corpus file holds its documents)"
            )
        return None
    for key in ("separator", "details", "terminator"):
        if key in given:
            given[key] = _unescape(given[key])
    section = config["data"]["products"].setdefault("document", {})
    section.update(given)
    template = DocumentTemplate.from_config(section)
    config["data"]["products"]["document"] = template.as_dict()
    return template


def prepare_inputs(args: argparse.Namespace, config: dict, out: Path) -> tuple[list, list]:
    """Each domain's corpus (given, or built from ``--meta``) and checked queries; the
    console gets one line per domain with the counts (what is evaluated, dropped and why)."""
    domains = args.domains
    if args.meta:
        corpus = [str(out / d / "products.parquet") for d in domains]
        for d in domains:
            meta_path = args.meta.format(domain=d)
            report = corpus_from_meta(
                meta_path=meta_path, out_dir=out / d, data_section=config["data"]
            )
            template = DocumentTemplate.from_config(report["document"])
            print(
                f"{d}: corpus of {report['products']} products built from {meta_path} "
                f"({report['ingest'].get('records_quarantined', 0)} records quarantined); "
                f"document = {template.describe()}",
                file=sys.stderr,
            )
    else:
        corpus = [args.corpus.format(domain=d) for d in domains]
        for d, path in zip(domains, corpus, strict=True):
            found = corpus_document(path)
            try:
                told = DocumentTemplate.from_config(found).describe() if found else None
            except (ValueError, TypeError):
                told = f"as recorded beside it: {found}"
            told = told or (
                "as written in the file (no products.report.json beside it names its fields)"
            )
            print(f"{d}: corpus {path}; document = {told}", file=sys.stderr)
    queries = [str(out / d / "queries.jsonl") for d in domains]
    for i, d in enumerate(domains):
        report = prepare_queries(
            domain=d,
            source=args.query_format,
            source_path=args.queries.format(domain=d),
            corpus_path=corpus[i],
            unknown_products=args.unknown_products,
            out_path=queries[i],
            report_path=out / d / "queries.report.json",
            drop_hint=DROP_HINT,
        )
        print(query_summary(report), file=sys.stderr)
    return corpus, queries


def query_summary(report: dict) -> str:
    """The console line of a domain's queries: what is evaluated, what was dropped and why."""
    kinds = report["queries_by_kind"]
    line = (
        f"{report['domain']}: {FORMAT_NAMES[report.get('query_format', 'benchmark')]} file, "
        f"{report['queries']} of {report['queries_read']} queries evaluated "
        f"({kinds.get('syntactic', 0)} syntactic, "
        f"{kinds.get('writing_error', 0)} writing-error, {kinds.get('unpaired', 0)} unpaired "
        "[effectiveness only]) on "
        f"{report['products']} products"
    )
    for reason, n in (report.get("queries_dropped_by_reason") or {}).items():
        by_kind = ", ".join(f"{c} {k}" for k, c in n["by_kind"].items())
        line += (
            f"; dropped {n['queries']} ({by_kind}): {reason.replace('_', ' ')} "
            f"({n['products']} products)"
        )
    return line


if __name__ == "__main__":
    sys.exit(main())
