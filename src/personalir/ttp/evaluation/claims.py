"""The TTP paper's claims, evaluated on the per-query measures: one verdict per claim of
``config/paper_results/ttp.yaml``, in the paper's order (rule ``ttp_claims``).

Each group of claims is evaluated where its numbers are computed: Table 4's
(:mod:`~personalir.ttp.evaluation.table4_claims`), the ablations' (Tables 6, 7 and Figure 5,
:mod:`~personalir.ttp.evaluation.ablations`), the history sweep's (Figure 6,
:mod:`~personalir.ttp.evaluation.history_sweep`) and the public sets' (Table 5, written by
``ttp_public_evaluate``). This module only gathers them; a claim whose inputs the
configuration does not produce is "not applicable" with the reason
(:mod:`personalir.common.claims`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from personalir.common.claims import json_safe, not_applicable
from personalir.common.io import read_json, read_parquet, write_json
from personalir.ttp.evaluation.ablations import evaluate_claims
from personalir.ttp.evaluation.history_sweep import sweep_claims
from personalir.ttp.evaluation.relevance_eval import read_relevance_records
from personalir.ttp.evaluation.table4_claims import evaluate_table4_claims
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS


def run_claims(
    *,
    per_query_path: str | Path,
    paper_path: str | Path,
    ttp_eval: Mapping,
    seed: int,
    out_path: str | Path,
    relevance_paths: Sequence[str | Path] = (),
    teacher: str = "ttp_rl",
    history_sweep_path: str | Path | None = None,
    main_n: int | None = None,
    public_claims_path: str | Path | None = None,
) -> dict[str, str]:
    """Write every TTP claim's verdict to ``out_path`` (JSON) and return ``{id: status}``.

    ``relevance_paths``: the ``ttp_relevance`` outputs (Table 4's Relevance column, for the
    claims that include it); ``teacher``: the distilled student's teacher (Table 8);
    ``history_sweep_path``: the sweep's per-query measures (Figure 6), whose claim expects the
    peak at ``main_n`` (the main run's ``history.n``); ``public_claims_path``: the public
    sets' claim verdicts (Table 5, :mod:`personalir.ttp.evaluation.public`)."""
    frame = read_parquet(per_query_path)
    paper = yaml.safe_load(Path(paper_path).read_text(encoding="utf-8")) or {}
    kw = {
        "samples": int(ttp_eval["bootstrap_samples"]),
        "confidence": float(ttp_eval["confidence"]),
        "seed": int(seed),
    }
    order = list(dict.fromkeys(frame["method"]))
    known = [m for m in order if m in PERSONAL_RETRIEVERS]
    paper_claims = paper.get("claims") or []
    found = evaluate_claims(frame, paper_claims, **kw) + evaluate_table4_claims(
        frame,
        paper_claims,
        table4=[m for m in known if PERSONAL_RETRIEVERS.get(m).table4_row],
        uses_history={m: PERSONAL_RETRIEVERS.get(m).uses_history for m in known},
        samples=kw["samples"],
        confidence=kw["confidence"],
        seed=kw["seed"],
        relevance=read_relevance_records(relevance_paths) if relevance_paths else None,
        teacher=teacher,
    )

    found += sweep_claims(paper_claims, history_sweep_path, main_n=main_n, **kw)

    public = read_json(public_claims_path) if public_claims_path else []
    found += public or [
        not_applicable(c, "no public sets configured (ttp.public.sets)")
        for c in paper_claims
        if c.get("id") == "public_generalises"
    ]
    rank = {c["id"]: i for i, c in enumerate(paper_claims)}
    claims = sorted(found, key=lambda c: rank[c["id"]])
    write_json(out_path, json_safe(claims))
    return {c["id"]: c["status"] for c in claims}
