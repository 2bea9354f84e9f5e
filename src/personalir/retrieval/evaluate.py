"""Bring your own retriever: evaluate it on PQB queries with the paper's tables and figures.

Three ways in, mixable, evaluated side by side in the order given::

    python -m personalir.retrieval.evaluate \\
        --domains Baby_Products Video_Games \\
        --corpus 'results/data/{domain}/products.parquet' \\
        --queries 'pqb_release/{domain}.json' --query-format released \\
        --catalog bm25 \\                              # a retriever of the config's catalogue
        --run mine='runs/{domain}.trec' \\             # (a) a TREC run file made elsewhere
        --st-model e5='intfloat/e5-base-v2' \\         # (b) any sentence-transformers model
        --class overlap='personalir.retrieval.examples:TermOverlapRetriever' \\  # (c) a class
        --out byo_results

``{domain}`` in a path stands for each domain. The metric, bootstrap, significance and depth
settings come from ``--config`` (default: config/config.yaml's ``retrieval`` section and seed).
Writes under ``--out``: <Domain>/queries.jsonl, <Domain>/<name>.run and .metrics.parquet,
meta/<name>.json, summary.csv, significance.csv, table_{flip_rrstd,degradation,effectiveness}
.csv/.tex, retrieval_flip_by_depth.pdf, retrieval_deg_ci.pdf.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from personalir.common.config import REPO_ROOT, validate_config
from personalir.retrieval.base import RunSettings
from personalir.retrieval.figures import deg_ci, flip_by_depth
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.pipeline import evaluate_runs, import_run, prepare_queries, run_retriever
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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m personalir.retrieval.evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--corpus", required=True, help="products.parquet path with {domain}")
    ap.add_argument("--queries", required=True, help="query file path with {domain}")
    ap.add_argument("--query-format", choices=["benchmark", "released"], default="benchmark")
    ap.add_argument("--unknown-products", choices=["error", "drop"], default="error")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--config", default=str(REPO_ROOT / "config" / "config.yaml"))
    ap.add_argument("--label", default="bring-your-own", help="caption label of the tables")
    ap.add_argument("--device", default=None, help="override retrieval.device")
    ap.add_argument("--threads", type=int, default=1)
    for opt, help_ in (
        ("--run", "NAME=PATH: a TREC run file per domain ({domain} in PATH)"),
        ("--st-model", "NAME=MODEL: a sentence-transformers model (hub id or folder)"),
        ("--class", "NAME=module:Class: a class implementing the Retriever interface"),
        ("--retriever", 'NAME=JSON: a full retriever entry, e.g. \'{"type": "splade"}\''),
        ("--catalog", "NAME: a retriever of the config's retrieval.retrievers"),
    ):
        ap.add_argument(
            opt,
            action=_Entry,
            dest=opt[2:].replace("-", "_"),
            help=help_,
            metavar="NAME" if opt == "--catalog" else "NAME=VALUE",
        )
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "entries", None):
        build_parser().error(
            "give at least one of --run, --st-model, --class, --retriever, --catalog"
        )
    import yaml

    raw = yaml.safe_load(Path(args.config).read_text(encoding="utf-8")) if args.config else {}
    config = validate_config(raw or {}, source=args.config)
    section = config["retrieval"]
    if args.device:
        section["device"] = args.device
    out = Path(args.out)
    domains = args.domains

    def per_domain(pattern: str) -> list[str]:
        return [str(pattern).format(domain=d) for d in domains]

    corpus = per_domain(args.corpus)
    queries = [str(out / d / "queries.jsonl") for d in domains]
    for i, d in enumerate(domains):
        prepare_queries(
            domain=d,
            source=args.query_format,
            source_path=args.queries.format(domain=d),
            corpus_path=corpus[i],
            unknown_products=args.unknown_products,
            out_path=queries[i],
            report_path=out / d / "queries.report.json",
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


if __name__ == "__main__":
    sys.exit(main())
