"""Table 5: the TTP methods on public benchmarks (PersonalWAB's Amazon version, KuaiSearch).

A *public set* (``ttp.public.sets``: Table 5 column -> its format and files) is read by its
loader (:func:`personalir.ttp.inputs.data.personalwab_examples`,
:mod:`personalir.ttp.inputs.kuaisearch`), cut to its test searches, given histories by the same
selection as the main sets, and ranked by each method of ``ttp.public.methods`` with the
models the workflow trained (the public set is never trained on: a transfer evaluation; the
paper trains one model per dataset, docs/ttp.md says where this differs). On the embedded
default the files are written from a sample-world domain the TTP models never saw
(:mod:`personalir.ttp.inputs.public_fixture`).

Measures (ir_measures): HR@20 (``Success@20``), nDCG@20 and Recall@20 against the example's
relevant items (``extra["relevant"]`` where the source keeps several, KuaiSearch's clicked
and purchased items; else the one target), with percentile-bootstrap CIs over queries.

:func:`build_public_set` is the rule ``ttp_public_examples``; :func:`evaluate_public` the
rule ``ttp_public_evaluate``, which also evaluates the paper's claim ``public_generalises``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from personalir.common.bootstrap import paired_difference_interval
from personalir.common.claims import not_applicable, verdict
from personalir.common.device import ttp_device
from personalir.common.io import write_json, write_parquet
from personalir.common.seeding import rng
from personalir.retrieval.runio import read_run
from personalir.ttp.evaluation.evaluate import bootstrap_ci
from personalir.ttp.evaluation.names import PUBLIC_MEASURES
from personalir.ttp.inputs.data import item_fields, load_examples, read_examples, write_examples
from personalir.ttp.inputs.history import select_histories
from personalir.ttp.inputs.relevance import build_relevance

CLAIM_ID = "public_generalises"


def build_public_set(
    *,
    fmt: str,
    data_dir: str | Path,
    name: str,
    ttp: Mapping,
    max_test: int | None,
    examples_out: str | Path,
    items_out: str | Path,
    report_out: str | Path,
    log=print,
) -> dict:
    """One public set's test examples (the first ``max_test`` by example id; None: all),
    labelled with the set's name, with selected histories, and its items."""

    t0 = time.perf_counter()
    # KuaiSearch's items file is 2.8 GB: its corpus is the items some session names (the
    # recall pool); PersonalWAB's loader ignores the option.
    examples, corpus = load_examples(
        fmt, data_dir=str(data_dir), domain=name, items_scope="sessions"
    )
    by_split: dict[str, int] = {}
    for ex in examples:
        by_split[ex.split] = by_split.get(ex.split, 0) + 1
    test = sorted((ex for ex in examples if ex.split == "test"), key=lambda e: e.example_id)
    if not test:
        raise ValueError(f"{data_dir}: no test searches in this {fmt} set")
    kept = test if max_test is None else test[: int(max_test)]
    kept = [replace(ex, label=name, domain=name) for ex in kept]
    relevance = build_relevance(dict(ttp["history"]["relevance"]), ttp_device(ttp))
    t1 = time.perf_counter()
    select_histories(
        kept,
        corpus,
        relevance,
        int(ttp["history"]["n"]),
        item_fields(ttp),
        int(ttp["items"]["max_features"]),
    )
    write_examples(examples_out, kept)
    corpus.write(items_out)
    report = {
        "set": name,
        "format": fmt,
        "data_dir": str(data_dir),
        "examples_read": len(examples),
        "by_split": dict(sorted(by_split.items())),
        "left_out": {
            "not_test": len(examples) - len(test),
            "over_max_test": len(test) - len(kept),
        },
        "examples": len(kept),
        "items": len(corpus),
        "mean_history": float(np.mean([len(e.history) for e in kept])),
        "mean_selected": float(np.mean([len(e.selected_history or []) for e in kept])),
        "without_history": sum(1 for e in kept if not e.history),
        "relevance_model": relevance.name,
        "seconds": {
            "load": round(t1 - t0, 3),
            "history_selection": round(time.perf_counter() - t1, 3),
        },
    }
    write_json(report_out, report)
    log(json.dumps(report))
    return report


def relevant_items(ex) -> list[str]:
    """The example's relevant items: ``extra["relevant"]`` when the source keeps several,
    else its target."""
    rel = (ex.extra or {}).get("relevant")
    return [str(r) for r in rel] if rel else [ex.target]


def public_measures(examples: Sequence, run: Mapping[str, Sequence[str]], method: str):
    """One row per example: HR@20, nDCG@20, Recall@20 (ir_measures) against its relevant
    items; a query the run does not list scores 0."""
    import ir_measures

    measures = {name: ir_measures.parse_measure(code) for name, code in PUBLIC_MEASURES.items()}
    qrels = {ex.example_id: dict.fromkeys(relevant_items(ex), 1) for ex in examples}
    scored = {
        ex.example_id: {d: float(len(docs) - i) for i, d in enumerate(docs)}
        for ex in examples
        if (docs := list(run.get(ex.example_id, ())))
    }
    values: dict[str, dict[str, float]] = {str(m): {} for m in measures.values()}
    for metric in ir_measures.iter_calc(list(measures.values()), qrels, scored):
        values[str(metric.measure)][metric.query_id] = float(metric.value)
    rows = []
    for ex in examples:
        row = {
            "method": method,
            "set": ex.label,
            "example_id": ex.example_id,
            "relevant": len(qrels[ex.example_id]),
        }
        for name, m in measures.items():
            row[name] = values[str(m)].get(ex.example_id, 0.0)
        rows.append(row)
    return pd.DataFrame(rows)


def evaluate_public(
    *,
    runs: Sequence[tuple[str, str, str]],
    examples: Mapping[str, str | Path],
    ttp_eval: Mapping,
    paper_claims: Sequence[Mapping],
    seed: int,
    per_query_out: str | Path,
    summary_out: str | Path,
    claims_out: str | Path,
    cells: Mapping[str, Sequence[str]] | None = None,
    log=print,
) -> pd.DataFrame:
    """Rule ttp_public_evaluate: per-query measures of every (set, method, run file), their
    means with bootstrap CIs, and the verdict on ``public_generalises`` over ``cells`` (set ->
    the measures Table 5 shows for it; None: every measure of every set)."""

    samples = int(ttp_eval["bootstrap_samples"])
    confidence = float(ttp_eval["confidence"])
    sets = {s: read_examples(p) for s, p in examples.items()}
    frames = []
    for set_name, method, path in runs:
        run = read_run(path)
        frames.append(public_measures(sets[set_name], run, method))
    frame = pd.concat(frames, ignore_index=True)
    write_parquet(per_query_out, frame)
    rows = []
    for (set_name, method), sub in frame.groupby(["set", "method"], sort=False):
        for name in PUBLIC_MEASURES:
            lo, hi = bootstrap_ci(
                sub[name].to_numpy(), samples, confidence, seed, set_name, method, name
            )
            rows.append(
                {
                    "set": set_name,
                    "method": method,
                    "measure": name,
                    "value": float(sub[name].mean()),
                    "ci_low": lo,
                    "ci_high": hi,
                    "queries": int(len(sub)),
                }
            )
    summary = pd.DataFrame(rows)
    write_parquet(summary_out, summary)
    claims = [
        generalises(frame, c, samples=samples, confidence=confidence, seed=seed, cells=cells)
        for c in paper_claims
        if c.get("id") == CLAIM_ID
    ]
    write_json(claims_out, claims)
    log(f"{len(runs)} runs on {len(sets)} public sets; claims: {[c['status'] for c in claims]}")
    return summary


def _paired(frame, a: str, b: str, set_name: str, measure: str):
    sub = frame[frame["set"] == set_name]
    x = sub[sub["method"] == a].set_index("example_id")[measure]
    y = sub[sub["method"] == b].set_index("example_id")[measure]
    common = x.index.intersection(y.index)
    return x.loc[common].to_numpy(float), y.loc[common].to_numpy(float)


def generalises(
    frame: pd.DataFrame,
    claim: Mapping,
    *,
    samples: int,
    confidence: float,
    seed: int,
    cells: Mapping[str, Sequence[str]] | None = None,
) -> dict:
    """``public_generalises``: TTP (SFT+RL) has the best mean of every Table 5 cell among the
    methods run, and beats TTP (SFT) in every cell (``cells``: set -> its Table 5 measures;
    None: all). Margin: the smallest of (ttp_rl - best
    other method) over the cells, in points; its CI a paired bootstrap over that cell's
    queries."""

    methods = set(frame["method"])
    if not {"ttp_rl", "ttp"} <= methods:
        return not_applicable(claim, "needs ttp_rl and ttp among ttp.public.methods")
    worst, cell = np.inf, None
    for set_name in dict.fromkeys(frame["set"]):
        sub = frame[frame["set"] == set_name]
        means = sub.groupby("method")[list(PUBLIC_MEASURES)].mean()
        for measure in (cells or {}).get(set_name, PUBLIC_MEASURES):
            others = means[measure].drop("ttp_rl")
            rival = str(others.idxmax())
            gap = float(means.loc["ttp_rl", measure] - others.max())
            if gap < worst:
                worst, cell = gap, (set_name, measure, rival)
    set_name, measure, rival = cell
    mine, theirs = _paired(frame, "ttp_rl", rival, set_name, measure)
    lo, hi = paired_difference_interval(
        mine, theirs, samples, confidence, rng(seed, "ttp_public_claim", set_name, measure)
    )
    rl_vs_sft = {
        f"{s} {m}": float(
            frame[(frame["set"] == s) & (frame["method"] == "ttp_rl")][m].mean()
            - frame[(frame["set"] == s) & (frame["method"] == "ttp")][m].mean()
        )
        for s in dict.fromkeys(frame["set"])
        for m in (cells or {}).get(s, PUBLIC_MEASURES)
    }
    held = worst > 0 and all(v > 0 for v in rl_vs_sft.values())
    return verdict(
        claim,
        held,
        worst,
        float(lo),
        float(hi),
        measured=f"ttp_rl - best other ({rival}) on {set_name} {measure} = {100 * worst:+.2f} pts",
        detail="RL - SFT: " + "; ".join(f"{k} {100 * v:+.2f}" for k, v in rl_vs_sft.items()),
    )
