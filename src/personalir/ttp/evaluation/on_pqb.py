"""TTP on PQB: personalised retrievers on PQB's query pairs, with and without the user's history.

Does personalisation repair the ranking variation that wording causes? PQB's pairs keep a
product's intent and five core terms and change only the wording: the syntactic pair's two
queries are two users' phrasings, the writing-error pair's are one user's query without and
with that user's own errors. Each of ``ttp.pqb.methods`` (registered TTP methods, through the
same ``ttp_run`` job as Table 4) ranks the products of a domain for every query of a chosen
subset of pairs, twice where the method reads a history:

``history``     the querying user's review history in the domain (the product of the query
                left out), top-N by the relevance model then chronological, as TTP's own
                examples (:func:`personalir.ttp.inputs.data.pqb_examples`);
``no_history``  the same examples with an empty history.

Query-only methods run once (their ranking cannot depend on the history). Each run is scored
with PQB's own metrics (:mod:`personalir.retrieval.metrics`: Flip@K, RRstd, Deg@K, MRRdeg and
the standard measures), bootstrap intervals over products as in the PQB tables; RR is cut at
the runs' depth (``ttp.depth``) where that is shallower than the retrieval stage's.

The claim-style summary asks, per history-reading method and summary metric, whether the
value with history is lower (more robust) than without: the paired per-product difference
(with - without), its bootstrap interval and a paired randomisation test. ``held`` when the
whole interval lies below 0, ``not held`` otherwise (the margin is the difference), ``not
applicable`` when the metric has no pairs.

Sets are named ``PQB-<domain>`` (history) and ``PQB-<domain>-nohistory``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from personalir.common.bootstrap import (
    bootstrap_replicates,
    paired_randomisation_test,
    percentile_interval,
    ratio,
)
from personalir.common.device import ttp_device
from personalir.common.io import read_json, write_json, write_text
from personalir.common.seeding import rng
from personalir.queries.benchmark_format import read_benchmark
from personalir.retrieval.metrics import (
    MetricSettings,
    parse_metric,
    per_query_frame,
    restrict_to_common,
)
from personalir.retrieval.runio import read_run
from personalir.retrieval.stats import bootstrap_summary, paired_differences
from personalir.retrieval.summary import write_csv
from personalir.ttp.evaluation.names import MODE_LABELS, PAIR_ROLES, parse_set_name
from personalir.ttp.inputs.data import item_fields, pqb_examples, read_examples, write_examples
from personalir.ttp.inputs.history import select_histories
from personalir.ttp.inputs.relevance import build_relevance


# --------------------------------------------------------------------------- pair subset
def select_pairs(
    records: Sequence[Mapping], max_pairs_per_kind: int | None, seed: int, domain: str
) -> tuple[list[dict], dict]:
    """The benchmark records of the chosen pairs, and what the choice left out.

    Only complete pairs (both roles present, once each) can be scored; an incomplete pair
    is counted under ``incomplete`` and left out. Per kind, ``max_pairs_per_kind`` pairs are
    drawn without replacement (seeded by domain and kind); None keeps every pair. Records
    keep the benchmark's order."""
    by_pair: dict[str, list[Mapping]] = {}
    for rec in records:
        by_pair.setdefault(rec["pair_id"], []).append(rec)
    complete: dict[str, list[str]] = {kind: [] for kind in PAIR_ROLES}
    incomplete = 0
    for pair_id, recs in by_pair.items():
        kind = recs[0]["kind"]
        roles = sorted(r["role"] for r in recs)
        if kind not in PAIR_ROLES:
            raise ValueError(f"pair {pair_id!r}: unknown kind {kind!r} (one of {list(PAIR_ROLES)})")
        if roles != sorted(PAIR_ROLES[kind]) or any(r["kind"] != kind for r in recs):
            incomplete += 1
            continue
        complete[kind].append(pair_id)
    chosen: set[str] = set()
    report = {"incomplete": incomplete, "pairs": {}, "left_out": {}}
    for kind, ids in complete.items():
        ids = sorted(ids)
        if max_pairs_per_kind is not None and len(ids) > max_pairs_per_kind:
            pick = rng(seed, "ttp-on-pqb", domain, kind).choice(
                len(ids), size=int(max_pairs_per_kind), replace=False
            )
            kept = [ids[i] for i in sorted(pick)]
        else:
            kept = ids
        chosen.update(kept)
        report["pairs"][kind] = len(kept)
        report["left_out"][kind] = len(ids) - len(kept)
    return [dict(r) for r in records if r["pair_id"] in chosen], report


# --------------------------------------------------------------------------- example sets
def build_set(
    *,
    benchmark: str | Path,
    reviews: str | Path,
    products: str | Path,
    meta: str | Path,
    name: str,
    ttp: Mapping,
    seed: int,
    train_examples: str | Path | None,
    examples_out: str | Path,
    items_out: str | Path,
    report_out: str | Path,
    log=print,
) -> dict:
    """One TTP-on-PQB example set: the chosen pairs' queries as test examples with their
    user's review history (selected, or emptied for ``-nohistory``), and the domain's items.

    ``train_examples`` (the TTP training set of the same domain, when TTP trains on it) is
    read to count queries whose (user, product) TTP saw as a training search: they are
    kept and counted (``seen_in_training``), not dropped."""

    domain, mode = parse_set_name(name)
    settings = dict(ttp.get("pqb") or {})
    records = list(read_benchmark(benchmark))
    kept, choice = select_pairs(records, settings.get("max_pairs_per_kind"), seed, domain)
    keep_ids = {r["query_id"] for r in kept}
    examples, items = pqb_examples(
        benchmark=benchmark, reviews=reviews, products=products, meta=meta, domain=domain
    )
    examples = [ex for ex in examples if ex.example_id in keep_ids]
    if not examples:
        raise ValueError(f"{benchmark}: no complete query pair to evaluate in {domain}")
    n_history = int(ttp["history"]["n"])
    if mode == "history":
        relevance = build_relevance(dict(ttp["history"]["relevance"]), ttp_device(ttp))
        select_histories(
            examples,
            items,
            relevance,
            n_history,
            item_fields(ttp),
            int(ttp["items"]["max_features"]),
        )
        relevance_name = relevance.name
    else:
        for ex in examples:
            ex.history = []
            ex.selected_history = []
        relevance_name = None
    seen = 0
    if train_examples:
        trained = {
            (ex.user_id, ex.target)
            for ex in read_examples(train_examples)
            if ex.split in ("train", "validation")
        }
        seen = sum(1 for ex in examples if (ex.user_id, ex.target) in trained)
    write_examples(examples_out, examples)
    items.write(items_out)
    report = {
        "set": name,
        "domain": domain,
        "history": mode,
        "benchmark": str(benchmark),
        "benchmark_queries": len(records),
        "pairs": choice["pairs"],
        "left_out": {
            "pairs_over_max": choice["left_out"],
            "incomplete_pairs": choice["incomplete"],
        },
        "examples": len(examples),
        "items": len(items),
        "history_n": n_history if mode == "history" else 0,
        "mean_history": float(np.mean([len(e.history) for e in examples])),
        "mean_selected": float(np.mean([len(e.selected_history or []) for e in examples])),
        "without_history": sum(1 for e in examples if not e.selected_history),
        "relevance_model": relevance_name,
        "seen_in_training": seen,
    }
    write_json(report_out, report)
    log(json.dumps(report))
    return report


# --------------------------------------------------------------------------- evaluation
def run_rows(
    methods: Sequence[str], uses_history: Mapping[str, bool]
) -> list[tuple[str, str | None]]:
    """(method, mode) of every table row in order: a history-reading method twice (with,
    without), a query-only method once (mode None, run on the history set)."""
    rows: list[tuple[str, str | None]] = []
    for m in methods:
        rows += [(m, "history"), (m, "no_history")] if uses_history[m] else [(m, None)]
    return rows


def row_key(method: str, mode: str | None) -> str:
    return method if mode is None else f"{method}:{mode}"


def metric_settings(retrieval_metrics: Mapping, depth: int):
    """PQB's metric settings with RR cut at the shallower of the two depths."""
    from dataclasses import replace

    base = MetricSettings.from_config(retrieval_metrics)
    return replace(base, rr_depth=min(int(base.rr_depth), int(depth)))


def per_query(
    runs: Mapping[tuple[str, str, str | None], str | Path],
    queries: Mapping[str, Sequence[Mapping]],
    settings,
) -> dict[tuple[str, str, str | None], pd.DataFrame]:
    """(domain, method, mode) -> PQB's per-query frame of that run over the domain's queries
    (a query the run does not list retrieves nothing)."""

    out = {}
    for key, path in runs.items():
        domain = key[0]
        ids = [q["query_id"] for q in queries[domain]]
        run = read_run(path, query_ids=ids)
        out[key] = per_query_frame(queries[domain], run, settings)
    return out


def summarize(
    frames: Mapping[tuple[str, str, str | None], pd.DataFrame],
    rows: Sequence[tuple[str, str | None]],
    domains: Sequence[str],
    labels: Mapping[str, str],
    settings,
    *,
    samples: int,
    confidence: float,
    seed: int,
) -> pd.DataFrame:
    """One row per (table row, metric, domain or Average): value, 95% CI, products, items."""

    out = []
    for method, mode in rows:
        key = row_key(method, mode)
        for name in settings.all_metrics():
            metric = parse_metric(name, settings.rr_depth)
            units = {d: metric.units(frames[(d, method, mode)]) for d in domains}
            items = {d: metric.items(frames[(d, method, mode)]) for d in domains}
            items["Average"] = sum(items.values())
            for r in bootstrap_summary(
                units,
                samples=samples,
                confidence=confidence,
                seed=seed,
                names=("ttp-on-pqb", key, name),
            ):
                out.append(
                    {
                        "row": key,
                        "method": method,
                        "label": labels.get(method, method),
                        "history": MODE_LABELS[mode],
                        "metric": name,
                        **r,
                        "items": items[r["domain"]],
                    }
                )
    return pd.DataFrame(out)


def history_effects(
    frames: Mapping[tuple[str, str, str | None], pd.DataFrame],
    methods: Sequence[str],
    uses_history: Mapping[str, bool],
    domains: Sequence[str],
    labels: Mapping[str, str],
    metrics: Sequence[str],
    settings,
    *,
    samples: int,
    confidence: float,
    permutations: int,
    seed: int,
) -> pd.DataFrame:
    """The claim-style summary: per history-reading method and metric, the difference
    with - without history over the same queries (paired per product), its bootstrap CI,
    the randomisation test's p and the verdict (lower is more robust for every PQB metric)."""

    out = []
    for method in methods:
        if not uses_history[method]:
            continue
        for name in metrics:
            metric = parse_metric(name, settings.rr_depth)
            diffs, values = {}, {"with": [], "without": []}
            for d in domains:
                with_f, without_f = restrict_to_common(
                    [frames[(d, method, "history")], frames[(d, method, "no_history")]]
                )
                a, b = metric.units(with_f), metric.units(without_f)
                values["with"].append(ratio(a))
                values["without"].append(ratio(b))
                diffs[d] = paired_differences(a, b)
            n_units = sum(len(x) for x in diffs.values())
            row = {
                "method": method,
                "label": labels.get(method, method),
                "metric": name,
                "with_history": float(np.mean(values["with"])),
                "without_history": float(np.mean(values["without"])),
                "products": n_units,
            }
            if n_units == 0 or all(x["den"].sum() <= 0 for x in diffs.values()):
                out.append(
                    row
                    | {
                        "difference": float("nan"),
                        "ci_low": float("nan"),
                        "ci_high": float("nan"),
                        "p_value": float("nan"),
                        "verdict": "not applicable",
                    }
                )
                continue
            reps = []
            per_domain = []
            for d, x in diffs.items():
                units = x.rename(columns={"d": "num"})
                per_domain.append(ratio(units))
                reps.append(
                    bootstrap_replicates(units, samples, seed, "ttp-on-pqb-effect", d, method, name)
                )
            diff = float(np.mean(per_domain))
            lo, hi = percentile_interval(np.mean(np.vstack(reps), axis=0), confidence)
            _, p = paired_randomisation_test(diffs, permutations=permutations, seed=seed)
            out.append(
                row
                | {
                    "difference": diff,
                    "ci_low": lo,
                    "ci_high": hi,
                    "p_value": p,
                    "verdict": "held" if hi < 0 else "not held",
                }
            )
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the table's rows
def table_frame(
    summary: pd.DataFrame, rows: Sequence[tuple[str, str | None]], metrics: Sequence[str]
) -> pd.DataFrame:
    """The Average block (or the one domain) as a wide table: row, label, history, pairs,
    then value and CI per metric."""
    blocks = list(dict.fromkeys(summary["domain"]))
    block = "Average" if "Average" in blocks else blocks[0]
    sub = summary[summary["domain"] == block]
    out = []
    for method, mode in rows:
        sel = sub[sub["row"] == row_key(method, mode)]
        rec = {
            "domain": block,
            "method": method,
            "label": sel["label"].iloc[0],
            "history": MODE_LABELS[mode],
        }
        for m in metrics:
            v = sel[sel["metric"] == m]
            rec[m] = float(v["value"].iloc[0])
            rec[f"{m} ci_low"] = float(v["ci_low"].iloc[0])
            rec[f"{m} ci_high"] = float(v["ci_high"].iloc[0])
            rec[f"{m} items"] = int(v["items"].iloc[0])
        out.append(rec)
    return pd.DataFrame(out)


def summary_markdown(effects: pd.DataFrame) -> str:
    lines = [
        "# TTP on PQB: does personalisation repair wording-driven ranking variation?",
        "",
        "Per history-reading method and metric: with - without history (paired per product);"
        " held when the whole 95% bootstrap interval lies below 0.",
        "",
        "| Method | Metric | With | Without | Difference | 95% CI | p | Verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in effects.itertuples(index=False):
        lines.append(
            f"| {r.label} | {r.metric} | {r.with_history:.3f} | {r.without_history:.3f} | "
            f"{r.difference:+.3f} | [{r.ci_low:+.3f}, {r.ci_high:+.3f}] | {r.p_value:.3f} | "
            f"{r.verdict} |"
        )
    held = int((effects["verdict"] == "held").sum()) if len(effects) else 0
    lines += ["", f"Held: {held} of {len(effects)}.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the rule
def table_metrics(settings, ks: Sequence[int]) -> tuple[list[str], list[str]]:
    """(robustness columns, effectiveness columns) of the LaTeX table: Flip@k, RRstd,
    Deg@k, MRRdeg for the chosen k, and RR at the run depth (MRR over all queries)."""
    missing = [k for k in ks if k not in settings.flip_k or k not in settings.deg_k]
    if missing:
        raise ValueError(
            f"ttp.pqb.k {missing} are not among retrieval.metrics.flip_k {list(settings.flip_k)}"
            f" and deg_k {list(settings.deg_k)}"
        )
    d = settings.rr_depth
    robust = [f"Flip@{k}" for k in ks] + [f"RRstd@{d}"]
    robust += [f"Deg@{k}" for k in ks] + [f"MRRdeg@{d}"]
    effective = [m for m in settings.standard if m.startswith("RR@")][:1]
    return robust, effective


def evaluate(
    *,
    runs: Mapping[tuple[str, str, str | None], str | Path],
    examples: Mapping[str, str | Path],
    set_reports: Sequence[str | Path],
    methods: Sequence[str],
    labels: Mapping[str, str],
    uses_history: Mapping[str, bool],
    retrieval_metrics: Mapping,
    ttp: Mapping,
    seed: int,
    samples: int,
    permutations: int,
    out: Mapping[str, str | Path],
    log=print,
) -> dict:
    """Score every run, write the summary (CSV), the table (CSV), the history effects (CSV,
    Markdown) and the facts the LaTeX needs (:mod:`personalir.ttp.paper.on_pqb_tables`).
    ``examples``: domain -> the history set's examples (the queries evaluated); ``out`` keys:
    summary, table, effects, effects_md, facts (what the captions say: queries, pairs, the
    table's metrics, RR's depth)."""

    settings = metric_settings(retrieval_metrics, int(ttp["depth"]))
    confidence = float(ttp["evaluation"]["confidence"])
    domains = list(examples)
    queries = {}
    for domain, path in examples.items():
        queries[domain] = [
            {
                "query_id": ex.example_id,
                "domain": domain,
                "product": ex.target,
                "user_id": ex.user_id,
                "pair_id": ex.extra["pair_id"],
                "kind": ex.label,
                "role": ex.extra["role"],
                "text": ex.query,
            }
            for ex in read_examples(path)
        ]
    frames = per_query(runs, queries, settings)
    rows = run_rows(methods, uses_history)
    summary = summarize(
        frames, rows, domains, labels, settings, samples=samples, confidence=confidence, seed=seed
    )
    robust, effective = table_metrics(settings, [int(k) for k in ttp["pqb"]["k"]])
    table = table_frame(summary, rows, robust + effective)
    effects = history_effects(
        frames,
        methods,
        uses_history,
        domains,
        labels,
        robust,
        settings,
        samples=samples,
        confidence=confidence,
        permutations=permutations,
        seed=seed,
    )
    reports = [read_json(p) for p in set_reports]
    with_history = [r for r in reports if r["history"] == "history"]
    pairs = {kind: sum(int(r["pairs"].get(kind, 0)) for r in with_history) for kind in PAIR_ROLES}
    seen = sum(int(r["seen_in_training"]) for r in with_history)
    n_queries = sum(len(q) for q in queries.values())
    write_csv(out["summary"], summary)
    write_csv(out["table"], table)
    write_csv(out["effects"], effects)
    write_text(out["effects_md"], summary_markdown(effects))
    held = int((effects["verdict"] == "held").sum()) if len(effects) else 0
    facts = {
        "queries": n_queries,
        "pairs": pairs,
        "seen_in_training": seen,
        "held": held,
        "effect_rows": len(effects),
        "domains": domains,
        "rr_depth": settings.rr_depth,
        "table_metrics": {"robustness": robust, "effectiveness": effective},
    }
    write_json(out["facts"], facts)
    log(json.dumps(facts))
    return facts
