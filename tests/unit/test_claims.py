"""The PQB claims engine (personalir.report.claims) on tiny hand-built result tables.

Tables are written in the column layout of the real ones (retrieval values as fractions with
``<metric> ci_low/ci_high`` columns, validation ``human``/``human_ci_low``, attribution and
sampling ``<measure>_ci_low``); margins are in points (x100) for retrieval, attribution and
sampling, in the table's unit for validation. Every golden value is worked out in a comment.
"""

from __future__ import annotations

import csv
import json
import math

import pandas as pd
import pytest
import yaml

from personalir.report import claims as cl
from personalir.report import claims_output

# name: (type, label, family)
SYSTEMS = {
    "bm25": ("bm25", "BM25", "lexical"),
    "splade": ("splade", "SPLADE-tiny", "learned_sparse"),
    "minilm": ("dense", "MiniLM-L6", "dense"),
    "fused": ("fused_dense_sparse", "Fused", "hybrid"),
    "maxsim": ("maxsim_untrained", "MaxSim", "late_interaction"),
    "yesno": ("llm_yesno", "SmolLM2 yes/no", "llm_reranker"),
    "grade": ("llm_prompt", "SmolLM2 grade", "llm_reranker"),
}
# Flip table, fractions: Flip@1, Flip@20, RRstd@200 per retriever (CI: value +- 0.01).
FLIP = {
    "bm25": (0.10, 0.15, 0.07),
    "splade": (0.05, 0.05, 0.05),
    "minilm": (0.20, 0.12, 0.09),
    "fused": (0.08, 0.03, 0.08),
    "maxsim": (0.12, 0.10, 0.10),
    "yesno": (0.04, 0.06, 0.12),
    "grade": (0.02, 0.04, 0.09),
}
# Degradation table: Deg@1, Deg@20, MRRdeg@200.
DEG = {
    "bm25": (0.02, 0.12, 0.06),
    "splade": (0.03, 0.06, 0.04),
    "minilm": (0.04, 0.06, 0.05),
    "fused": (0.01, 0.05, 0.03),
    "maxsim": (0.02, 0.07, 0.04),
    "yesno": (0.05, 0.11, 0.07),
    "grade": (0.04, 0.11, 0.06),
}


def config(names=tuple(SYSTEMS)) -> dict:
    retrievers = {n: {"type": SYSTEMS[n][0], "label": SYSTEMS[n][1]} for n in names}
    return {"retrieval": {"use": list(names), "retrievers": retrievers}}


def retrieval_rows(values, metrics, names=None, domain="Average", shift=0.0) -> list[dict]:
    rows = []
    for name in names or values:
        _, label, family = SYSTEMS[name]
        row = {"domain": domain, "retriever": name, "label": label, "family": family, "pairs": 50}
        for metric, v in zip(metrics, values[name], strict=True):
            v += shift
            row |= {metric: v, f"{metric} ci_low": v - 0.01, f"{metric} ci_high": v + 0.01}
        rows.append(row)
    return rows


def write(tmp_path, rel: str, rows) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)


def write_retrieval(tmp_path, names=None) -> None:
    flip = retrieval_rows(FLIP, ("Flip@1", "Flip@20", "RRstd@200"), names)
    write(tmp_path, "retrieval/table_flip_rrstd.csv", flip)
    deg = retrieval_rows(DEG, ("Deg@1", "Deg@20", "MRRdeg@200"), names)
    write(tmp_path, "retrieval/table_degradation.csv", deg)


def evaluate(tmp_path, claim_id, cfg=None) -> dict:
    claim = next(c for c in cl.pqb_claims() if c["id"] == claim_id)
    return cl.evaluate_claim(cl.Context(tmp_path, config() if cfg is None else cfg), claim)


def check(result, status, margin=None, lo=None, hi=None) -> None:
    assert result["status"] == status, result
    for key, want in (("margin", margin), ("ci_low", lo), ("ci_high", hi)):
        if want is not None:
            assert result[key] == pytest.approx(want, abs=1e-9), (key, result)


# --------------------------------------------------------------------------- registry, mapping
def test_every_pqb_claim_id_has_an_encoding():
    ids = [c["id"] for c in cl.pqb_claims()]
    assert len(ids) == 18 and set(ids) <= set(cl.CLAIMS.names())


def test_paper_rows_match_the_paper_results_file():
    paper = yaml.safe_load(cl.PQB_YAML.read_text(encoding="utf-8"))
    assert list(cl.PAPER_SYSTEMS) == list(paper["flip_rrstd"]["rows"])
    assert len(cl.PAPER_MODELS) == len(paper["attribution"]["rows"])
    assert len(cl.PAPER_SAMPLERS) == len(paper["error_sampling"]["rows"])


def test_unencoded_claim_and_empty_tree_are_not_applicable(tmp_path):
    out = cl.evaluate_claim(cl.Context(tmp_path, {}), {"id": "nope", "table": "x", "text": "t"})
    assert out["status"] == "not applicable" and out["measured"] == "not encoded"
    found = cl.evaluate_all(tmp_path, {})
    assert [c["id"] for c in found] == [c["id"] for c in cl.pqb_claims()]
    assert {c["status"] for c in found} == {"not applicable"}
    assert all(c["measured"] != "not encoded" and c["paper"] == "PQB" for c in found)
    assert set(found[0]) == {"paper", *cl.RESULT_KEYS}


def test_stand_ins_by_family_type_and_label():
    cfg = config()
    cfg["retrieval"]["retrievers"]["gte"] = {"type": "dense", "label": "GTE-base"}
    cfg["retrieval"]["use"].append("gte")
    stand = cl.stand_ins(cfg)  # no table: families from the retriever registry
    assert stand["GTE-base"].retriever == "gte"  # the label matches the paper's name
    assert stand["GTE-base"].candidates == ("minilm", "gte")
    assert stand["Qwen3-Reranker-8B"].retriever == "yesno"  # type llm_yesno
    assert stand["Llama-3.1-8B"].retriever == "grade"  # type llm_prompt
    assert str(stand["SPLADE"]) == "SPLADE-tiny for SPLADE"
    cfg["retrieval"]["retrievers"]["gte"]["label"] = "Other dense"
    assert cl.stand_ins(cfg)["GTE-base"].retriever == "minilm"  # no label match: the first


# --------------------------------------------------------------------------- retrieval
def test_splade_most_stable_rank_held(tmp_path):
    write_retrieval(tmp_path)
    out = evaluate(tmp_path, "splade_most_stable_rank")
    # RRstd: SPLADE 5, closest other BM25 7 -> +2; CI [(7-1)-(5+1), (7+1)-(5-1)] = [0, 4]
    check(out, "held", 2.0, 0.0, 4.0)
    assert "SPLADE-tiny for SPLADE" in out["measured"] and "BM25 for BM25" in out["measured"]
    assert "values: the Average rows" in out["detail"]


def test_colbert_most_flips_at_depth_not_held(tmp_path):
    write_retrieval(tmp_path)
    out = evaluate(tmp_path, "colbert_most_flips_at_depth")
    # Flip@20: MaxSim 10, highest other BM25 15 -> -5; CI [(10-1)-(15+1), (10+1)-(15-1)]
    check(out, "not held", -5.0, -7.0, -3.0)
    assert "MaxSim for ColBERTv2" in out["measured"]


def test_every_system_moves_held_and_reranker_not_a_cure(tmp_path):
    write_retrieval(tmp_path)
    # smallest Flip@1: SmolLM2 grade 2, CI [1, 3]
    check(evaluate(tmp_path, "every_system_moves"), "held", 2.0, 1.0, 3.0)
    # RRstd yes/no 12 - grade 9 = +3; CI [11 - 10, 13 - 8]
    check(evaluate(tmp_path, "reranker_not_a_cure"), "held", 3.0, 1.0, 5.0)


def test_degradation_claims(tmp_path):
    write_retrieval(tmp_path)
    # smallest of 21 cells: fused Deg@1 = 1, CI [0, 2]
    check(evaluate(tmp_path, "every_system_degrades"), "held", 1.0, 0.0, 2.0)
    # fused: Deg@20 5 vs splade/minilm 6 -> +1; MRRdeg 3 vs 4 -> +1; CI [6-1-6, 7-4] = [-1, 3]
    check(evaluate(tmp_path, "hybrid_least_affected"), "held", 1.0, -1.0, 3.0)
    # BM25 Deg@20 12 - highest other 11 = +1
    check(evaluate(tmp_path, "bm25_loses_most_at_depth"), "held", 1.0, -1.0, 3.0)
    # Qwen stand-in MRRdeg 7 - highest other (BM25, grade) 6 = +1
    check(evaluate(tmp_path, "qwen_reranker_loses_most_rr"), "held", 1.0)
    # smallest Deg@20 - Deg@1: splade 6 - 3 = 3 ... minilm 6 - 4 = 2; CI [5-5, 7-3] = [0, 4]
    check(evaluate(tmp_path, "depth_does_not_recover"), "held", 2.0, 0.0, 4.0)


def test_robustness_not_effectiveness(tmp_path):
    write_retrieval(tmp_path)
    eff = []
    for name, rr in {"bm25": 0.8, "splade": 0.7, "fused": 0.75}.items():
        for subset, shift in (("clean", 0.1), ("error", -0.1), ("all", 0.0)):
            row = retrieval_rows({name: (rr + shift,)}, ("RR@200",), [name])[0]
            eff.append(row | {"subset": subset, "queries": 10})
    write(tmp_path, "retrieval/table_effectiveness.csv", eff)
    out = evaluate(tmp_path, "robustness_not_effectiveness")
    # most effective (all): BM25 (RRstd 7); lowest other RRstd: SPLADE 5 -> 7 - 5 = +2
    check(out, "held", 2.0, 0.0, 4.0)
    assert "BM25 for BM25" in out["measured"] and "SPLADE-tiny for SPLADE" in out["measured"]
    assert "not compared" not in out["detail"]


def test_missing_table_and_missing_system_are_not_applicable(tmp_path):
    write(tmp_path, "retrieval/table_flip_rrstd.csv", retrieval_rows(FLIP, ("Flip@1", "x", "y")))
    out = evaluate(tmp_path, "every_system_degrades")
    assert out["status"] == "not applicable"
    assert "retrieval/table_degradation.csv" in out["measured"]
    assert math.isnan(out["margin"]) and math.isnan(out["ci_low"])
    names = [n for n in SYSTEMS if n != "maxsim"]
    write_retrieval(tmp_path, names)
    out = evaluate(tmp_path, "colbert_most_flips_at_depth", config(names))
    assert out["status"] == "not applicable" and "ColBERTv2" in out["measured"]
    assert "no stand-in for ColBERTv2" in out["detail"]


def test_domain_mean_without_average_row_and_average_row_preferred(tmp_path):
    names = ["bm25", "splade", "minilm"]
    rows = retrieval_rows(DEG, ("Deg@1", "Deg@20", "MRRdeg@200"), names, "D1", shift=0.0)
    rows += retrieval_rows(DEG, ("Deg@1", "Deg@20", "MRRdeg@200"), names, "D2", shift=0.02)
    rows[0]["Deg@20"] = 0.04  # bm25 in D1: mean Deg@20 = (4 + 14) / 2 = 9
    write(tmp_path, "retrieval/table_degradation.csv", rows)
    out = evaluate(tmp_path, "bm25_loses_most_at_depth", config(names))
    # BM25 9 - highest other (splade, minilm: (6 + 8) / 2 = 7) = +2, no CI without Average rows
    check(out, "held", 2.0)
    assert math.isnan(out["ci_low"]) and "the mean of 2 domains" in out["detail"]
    average = retrieval_rows(DEG, ("Deg@1", "Deg@20", "MRRdeg@200"), names)
    write(tmp_path, "retrieval/table_degradation.csv", rows + average)
    # the Average rows win over the domains' mean: BM25 12 - 6 = +6
    check(evaluate(tmp_path, "bm25_loses_most_at_depth", config(names)), "held", 6.0)


# --------------------------------------------------------------------------- validation
MEASURES = ("Naturalness (1-5)", "Syntactic quality (1-5)", "Syntactic attribution")
MEASURES += ("No-preference rate", "Error strict pass", "Error acceptable")


def ratings(human: dict[str, float]) -> list[dict]:
    rows = []
    for name in MEASURES:
        h = human.get(name, float("nan"))
        rows.append(
            {"measure": name, "llm": 1.0, "llm_ci_low": 1.0, "llm_ci_high": 1.0, "llm_n": 9}
            | {"human": h, "human_ci_low": h - 0.5, "human_ci_high": h + 0.5, "human_n": 9}
            | {"paper_llm": 1.0, "paper_human": 1.0, "chance": ""}
        )
    return rows


def test_validation_claims(tmp_path):
    human = {"Naturalness (1-5)": 4.25, "Syntactic quality (1-5)": 4.0}
    human |= {"Syntactic attribution": 62.5, "Error strict pass": 85.0, "Error acceptable": 92.0}
    write(tmp_path, "validation/ratings.csv", ratings(human))
    # min(4.25 - 4, 4.0 - 4) = 0, and ">=" holds at 0; CI [3.5 - 4, 4.5 - 4]
    check(evaluate(tmp_path, "queries_language_like"), "held", 0.0, -0.5, 0.5)
    check(evaluate(tmp_path, "personal_signal_identifiable"), "held", 12.5, 12.0, 13.0)
    # min(85 - 80, 92 - 90) = 2
    check(evaluate(tmp_path, "error_profiles_faithful"), "held", 2.0, 1.5, 2.5)
    human["Syntactic attribution"] = 45.0
    write(tmp_path, "validation/ratings.csv", ratings(human))
    check(evaluate(tmp_path, "personal_signal_identifiable"), "not held", -5.0)
    write(tmp_path, "validation/ratings.csv", ratings({}))  # no human labels
    out = evaluate(tmp_path, "queries_language_like")
    assert out["status"] == "not applicable" and "no human labels" in out["measured"]


def test_agreement_substantial(tmp_path):
    rows = []
    for dim, a, k in (("Naturalness", 0.72, 0.67), ("Attribution", 0.55, 0.7)):
        rows.append(
            {"dimension": dim, "alpha": a, "alpha_ci_low": a - 0.1, "alpha_ci_high": a + 0.1}
            | {"kappa": k, "kappa_ci_low": k - 0.1, "kappa_ci_high": k + 0.1, "items": 40}
        )
    write(tmp_path, "validation/agreement.csv", rows)
    out = evaluate(tmp_path, "agreement_substantial")
    # lowest: Attribution alpha 0.55 - 0.6 = -0.05; CI [0.45 - 0.6, 0.65 - 0.6]
    check(out, "not held", -0.05, -0.15, 0.05)
    assert "Attribution alpha" in out["measured"]
    rows[1]["alpha"] = 0.61
    write(tmp_path, "validation/agreement.csv", rows)
    check(evaluate(tmp_path, "agreement_substantial"), "held", 0.01)  # 0.61 - 0.6


# --------------------------------------------------------------------------- attribution, sampling
def attribution(values: dict[str, tuple[float, float, float]]) -> list[dict]:
    rows = []
    for domain in ("D1", "D2", "Average"):
        for model, vals in values.items():
            row = {"domain": domain, "model": model, "label": model, "users": 10}
            for col, v in zip(("balanced", "auroc", "full_profile"), vals, strict=True):
                ci = (float("nan"),) * 2 if domain == "Average" else (v - 0.01, v + 0.01)
                row |= {col: v, f"{col}_ci_low": ci[0], f"{col}_ci_high": ci[1]}
            rows.append(row)
    return rows


def test_attribution_claims(tmp_path):
    values = {m: (0.60, 0.58, 0.61) for m in cl.PAPER_MODELS}
    values["single_embedding_cosine"] = (0.64, 0.615, 0.65)
    values["rank_one_diagonal_gaussian"] = (0.66, 0.62, 0.66)
    values["knn"] = (0.55, 0.59, 0.50)
    values["rank_one_diagonal_gaussian_eigenpair"] = (0.90, 0.90, 0.90)  # not the paper's
    write(tmp_path, "syntax/attribution.csv", attribution(values))
    out = evaluate(tmp_path, "rank_one_diag_leads")
    # leads over single_embedding_cosine: 2.0, 0.5, 1.0 points -> 0.5; Average rows: no CI
    check(out, "held", 0.5)
    assert math.isnan(out["ci_low"]) and "eigenpair" in out["detail"]
    # knn vs the lowest other: balanced 60 - 55 = +5, AUROC 58 - 59 = -1, full 61 - 50 = +11
    check(evaluate(tmp_path, "knn_trails"), "not held", -1.0)


def test_sampling_claims(tmp_path):
    vals = {  # top1, mrr, single_query_top1
        "global": (0.06, 0.19, 0.06),
        "uniform": (0.04, 0.18, 0.05),
        "character_random": (0.03, 0.17, 0.05),
        "wrong_user": (0.05, 0.20, 0.04),
        "personalised": (0.10, 0.25, 0.08),
    }
    rows = []
    for sampler, v in vals.items():
        row = {"domain": "D1", "sampler": sampler, "users": 10}
        for col, x in zip(("top1", "mrr", "single_query_top1"), v, strict=True):
            row |= {col: x, f"{col}_ci_low": x - 0.01, f"{col}_ci_high": x + 0.01}
        rows.append(row)
    write(tmp_path, "errors/sampling_eval.csv", rows)
    # Top-1 lead over global 10 - 6 = 4, MRR lead over wrong_user 25 - 20 = 5 -> 4
    check(evaluate(tmp_path, "personalised_sampling_wins"), "held", 4.0, 2.0, 6.0)
    out = evaluate(tmp_path, "margin_largest_single_query")
    # vs wrong_user: single-query 8 - 4 = 4, Top-1 10 - 5 = 5 -> 4 - 5 = -1
    # CI: single [2, 6] minus Top-1 [3, 7] -> [2 - 7, 6 - 3] = [-5, 3]
    check(out, "not held", -1.0, -5.0, 3.0)
    assert "over global: single-query Top-1 +2.00, Top-1 +4.00" in out["detail"]


# --------------------------------------------------------------------------- all, outputs, CLI
TTP = [
    {"id": "history_helps", "table": "table4", "text": "t", "status": "not held"}
    | {"measured": "m", "margin": -5.0, "ci_low": -9.0, "ci_high": None, "detail": "d"}
]


def test_cli_writes_both_files_and_passes_ttp_claims_through(tmp_path, capsys):
    results = tmp_path / "results"
    write_retrieval(results)
    (results / "ttp" / "claims").mkdir(parents=True)
    (results / "ttp" / "claims" / "claims.json").write_text(json.dumps(TTP))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config()))
    out_csv, out_md = tmp_path / "out" / "claims.csv", tmp_path / "out" / "claims.md"
    argv = [str(results), "--config", str(cfg), "--csv", str(out_csv), "--md", str(out_md)]
    assert claims_output.main(argv) == 0
    printed = capsys.readouterr().out
    assert printed == out_md.read_text(encoding="utf-8")
    assert printed.splitlines()[2:5] == ["- held: 8", "- not held: 2", "- not applicable: 9"]
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert list(rows[0]) == list(cl.CSV_COLUMNS)
    assert [r["paper"] for r in rows] == ["PQB"] * 18 + ["TTP"]
    ttp = rows[-1]
    assert (ttp["id"], ttp["status"], ttp["margin"], ttp["ci_high"]) == (
        "history_helps",
        "not held",
        "-5.000000",
        "",
    )
    found = cl.evaluate_all(results, config())
    assert found[-1] == {"paper": "TTP", **TTP[0]}  # as the TTP stage wrote it
