"""The history-length sweep (the TTP paper's Figure 6): how TTP's Recall@20 moves with N.

For each N of ``ttp.history_sweep.values`` the example set's examples get their top-N
history again (the same relevance model as the main run, :mod:`personalir.ttp.inputs.history`), the
teacher writes SFT targets from that history, a TTP model is trained by the SFT recipe on
them and its test run is scored. History length changes training and inference alike, as in
the paper. On a small machine the sweep's training can be shrunk (``max_train_per_set``,
``sft`` overrides): every point is trained alike, so the points compare with each other, not
with Table 4's TTP row.

The prompt budget grows with N (``max_query_tokens`` + ``history_item_tokens`` per item
above the main run's ``history.n``): a prompt longer than the budget loses its oldest tokens
(:class:`personalir.ttp.model.encoder.TTPEncoder`), which would cut exactly the history the sweep
adds.

Claim ``history_length_peak`` (the paper: Recall@20 peaks at N = 10, its main N): Avg
Recall@20 (mean of the three test sets) is highest at the main run's N; margin = Avg at the
main N minus the best other point's, with a paired bootstrap CI over the same test queries.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from personalir.common.bootstrap import bootstrap_group_means
from personalir.common.claims import not_applicable, verdict
from personalir.common.device import ttp_device
from personalir.common.io import read_parquet, write_json, write_parquet
from personalir.common.seeding import rng
from personalir.retrieval.runio import read_run
from personalir.ttp.evaluation.contrasts import paired_avg_difference, per_set_contrasts, set_means
from personalir.ttp.evaluation.layout import MEASURE, SETS
from personalir.ttp.evaluation.names import point_method
from personalir.ttp.inputs.data import ItemCorpus, item_fields, read_examples, write_examples
from personalir.ttp.inputs.examples import cap_examples
from personalir.ttp.inputs.history import select_histories
from personalir.ttp.inputs.relevance import build_relevance
from personalir.ttp.model.search import per_query_measures

CLAIM_ID = "history_length_peak"


def build_point_examples(
    *,
    examples_path: str | Path,
    items_path: str | Path,
    ttp: Mapping,
    examples_out: str | Path,
    report_out: str | Path,
    relevance=None,
    log=print,
) -> dict:
    """One set's examples for one sweep point: the training searches capped as ``ttp``'s
    ``split`` says (validation and test searches are kept, so every point is validated and
    tested on the same searches), each with its top-``history.n`` history again.
    ``relevance``: the relevance model (default: the one ``ttp.history.relevance`` names)."""

    examples = read_examples(examples_path)
    corpus = ItemCorpus.read(items_path)
    kept = cap_examples(examples, {**ttp["split"], "max_test_per_label": {}})
    removed = Counter(e.split for e in examples) - Counter(e.split for e in kept)
    if relevance is None:
        relevance = build_relevance(dict(ttp["history"]["relevance"]), ttp_device(ttp))
    n = int(ttp["history"]["n"])
    select_histories(
        kept, corpus, relevance, n, item_fields(ttp), int(ttp["items"]["max_features"])
    )
    write_examples(examples_out, kept)
    lengths = [len(e.selected_history or ()) for e in kept]
    report = {
        "history_n": n,
        "examples": len(kept),
        "by_split": dict(sorted(Counter(e.split for e in kept).items())),
        "removed_by_training_cap": dict(sorted(removed.items())),
        "mean_selected": float(np.mean(lengths)) if lengths else 0.0,
        "shorter_than_n": int(sum(x < n for x in lengths)),
        "relevance_model": relevance.name,
    }
    write_json(report_out, report)
    log(json.dumps(report))
    return report


def sweep_frame(
    examples_paths: Sequence[str | Path], runs: Sequence[tuple[int, str, str | Path]]
) -> pd.DataFrame:
    """Per-query measures of every sweep point's runs (``(N, example set, run path)``; method
    :func:`point_method`) on the main example sets' test searches; column ``history_n`` names
    the point."""

    test: dict[str, list] = {}
    for p in examples_paths:
        for ex in read_examples(p):
            if ex.split == "test":
                test.setdefault(ex.domain, []).append(ex)
    frames = []
    for n, ex_set, path in runs:
        if ex_set not in test:
            raise ValueError(
                f"{path}: example set {ex_set!r} has no test searches in {list(examples_paths)}"
            )
        exs = test[ex_set]
        run = read_run(path, query_ids=[e.example_id for e in exs])
        frames.append(per_query_measures(exs, run, point_method(n)).assign(history_n=int(n)))
    return pd.concat(frames, ignore_index=True)


def well_formed_shares(runs: Sequence[tuple[int, str, str | Path]]) -> dict[int, float]:
    """Per N, the mean over example sets of the share of test queries whose generation was a
    well-formed ``<think>..</think><embed>`` (each run's ``.info.json`` beside its ``.trec``):
    a point whose model never learnt the format embeds without a rewrite."""
    shares: dict[int, list[float]] = {}
    for n, _, path in runs:
        info_path = Path(str(path)).with_suffix(".info.json")
        info = json.loads(info_path.read_text(encoding="utf-8"))
        if "well_formed_share" not in info:
            raise ValueError(f"{info_path}: no well_formed_share")
        shares.setdefault(int(n), []).append(float(info["well_formed_share"]))
    return {n: float(np.mean(v)) for n, v in sorted(shares.items())}


def figure6_rows(
    frame: pd.DataFrame,
    *,
    samples: int,
    confidence: float,
    seed: int,
    measure: str = MEASURE,
    well_formed: Mapping[int, float] | None = None,
) -> pd.DataFrame:
    """Long table: one row per (N, test set or Avg) with the mean ``measure``, its percentile
    bootstrap CI and the number of queries; the Avg's CI resamples each set independently.
    ``well_formed`` (N -> share, :func:`well_formed_shares`) adds that column."""

    rows = []
    for n in sorted(set(frame["history_n"])):
        method = point_method(n)
        per_set = per_set_contrasts(frame, [(method, 1.0)], measure, SETS)
        gen = rng(seed, "history_sweep", int(n), measure)
        boot = bootstrap_group_means(per_set, samples=samples, confidence=confidence, gen=gen)
        for s in (*SETS, "Avg"):
            rows.append(
                {
                    "history_n": int(n),
                    "set": s,
                    "measure": measure,
                    "value": boot[s]["difference"],
                    "ci_low": boot[s]["ci_low"],
                    "ci_high": boot[s]["ci_high"],
                    "queries": int(boot[s]["queries"]),
                    "well_formed_share": (well_formed or {}).get(int(n), float("nan")),
                }
            )
    return pd.DataFrame(rows)


def evaluate_sweep(
    *,
    examples_paths: Sequence[str | Path],
    runs: Sequence[tuple[int, str, str | Path]],
    ttp_eval: Mapping,
    seed: int,
    per_query_out: str | Path,
    figure6_out: str | Path,
    log=print,
) -> pd.DataFrame:
    """Write the sweep's per-query measures and Figure 6's rows; return the rows."""
    frame = sweep_frame(examples_paths, runs)
    rows = figure6_rows(
        frame,
        samples=int(ttp_eval["bootstrap_samples"]),
        confidence=float(ttp_eval["confidence"]),
        seed=seed,
        well_formed=well_formed_shares(runs),
    )
    write_parquet(per_query_out, frame)
    write_parquet(figure6_out, rows)
    log(rows.to_string(index=False))
    return rows


def history_length_peak(
    frame: pd.DataFrame,
    claim: Mapping,
    *,
    main_n: int,
    samples: int,
    confidence: float,
    seed: int,
) -> dict:
    """Verdict on ``history_length_peak`` over the sweep's per-query frame (see module doc)."""
    values = sorted(int(n) for n in set(frame["history_n"])) if len(frame) else []
    if int(main_n) not in values or len(values) < 2:
        return not_applicable(
            claim,
            f"the sweep ({values or 'none'}) does not hold the main N = {main_n} and another point",
        )
    avg = {n: set_means(frame, point_method(n), MEASURE)["Avg"] for n in values}
    others = [n for n in values if n != int(main_n)]
    best = max(others, key=lambda n: (avg[n], -n))
    diff = paired_avg_difference(
        frame,
        point_method(main_n),
        point_method(best),
        samples=samples,
        confidence=confidence,
        seed=seed,
    )["Avg"]
    peak = max(values, key=lambda n: (avg[n], -n))
    margin = avg[int(main_n)] - avg[best]
    measured = ", ".join(f"N={n}: {100 * avg[n]:.2f}" for n in values)
    found = verdict(
        claim,
        not math.isnan(margin) and margin > 0,
        margin,
        diff["ci_low"],
        diff["ci_high"],
        measured=f"Avg Recall@20 {measured}",
        detail=f"peak at N = {peak}; main N = {main_n}; runner-up N = {best}",
    )
    return found


def sweep_claims(
    paper_claims: Sequence[Mapping],
    per_query_path: str | Path | None,
    *,
    main_n: int | None,
    samples: int,
    confidence: float,
    seed: int,
) -> list[dict]:
    """The verdict on :data:`CLAIM_ID` when the paper lists it: over the sweep's per-query
    measures, or not applicable when no sweep is configured."""
    out = []
    for claim in paper_claims:
        if claim.get("id") != CLAIM_ID:
            continue
        if not per_query_path:
            out.append(not_applicable(claim, "no history-length sweep configured"))
            continue
        out.append(
            history_length_peak(
                read_parquet(per_query_path),
                claim,
                main_n=int(main_n),
                samples=samples,
                confidence=confidence,
                seed=seed,
            )
        )
    return out
