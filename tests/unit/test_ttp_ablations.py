"""TTP ablations (Tables 6, 7, Figure 5): set means, paired bootstrap, claims, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from personalir.ttp.evaluation import ablations as ab

PAPER_PATH = Path(__file__).resolve().parents[2] / "config" / "paper_results" / "ttp.yaml"
KW = {"samples": 200, "confidence": 0.95, "seed": 7}
MEASURE_COLUMNS = ("Recall@10", "Recall@100", "MRR@100", "HR@20", "nDCG@20")


def _frame(values: dict[str, dict[str, list[int]]]) -> pd.DataFrame:
    """Per-query rows: method -> test set -> Recall@20 per query (query i of a set is the same
    example for every method)."""
    rows = []
    for method, per_set in values.items():
        for label, vals in per_set.items():
            for i, v in enumerate(vals):
                rows.append(
                    {
                        "method": method,
                        "example_id": f"{label}-{i}",
                        "domain": "D1" if i % 2 else "D2",
                        "label": label,
                        "misspelled": False,
                        "rank": 1 if v else 0,
                        "Recall@20": float(v),
                        **{m: float(v) for m in MEASURE_COLUMNS},
                    }
                )
    return pd.DataFrame(rows)


def _uniform(g: list[int], b: list[int], lt: list[int]) -> dict[str, list[int]]:
    return {"General": g, "Broad": b, "LongTail": lt}


# Eight queries per set; each method's values are chosen so the claims' orderings are known.
BASE = {
    "dense": _uniform([1, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], [0] * 8),
    "decoupled": _uniform([1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0] * 2),
    "ttp_no_intent_q": _uniform([1, 1, 0, 0] * 2, [1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0] * 2),
    "ttp": _uniform([1, 1, 1, 0] * 2, [1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0] * 2),
    "ttp_rl_no_intent_q": _uniform([1, 1, 1, 0] * 2, [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 0, 0] * 2),
    "ttp_rl": _uniform([1] * 8, [1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 0] * 2),
    "ttp_rl_no_dynamic_selection": _uniform([1, 1, 0, 0] * 2, [1, 1, 0, 0] * 2, [1, 0] * 4),
    "ttp_rl_unfrozen_reward": _uniform([1] + [0] * 7, [0] * 8, [0] * 8),
    "ttp_rl_no_positive_gain": _uniform([1, 1, 1, 0] * 2, [1, 1, 1, 0] * 2, [1, 1, 0, 0] * 2),
    "ttp_rl_no_margin_gain": _uniform([1] * 8, [1, 1, 1, 0] * 2, [1, 1, 1, 0] * 2),
}


@pytest.fixture(scope="module")
def paper():
    return yaml.safe_load(PAPER_PATH.read_text(encoding="utf-8"))


def _claims(frame, paper):
    return {c["id"]: c for c in ab.evaluate_claims(frame, paper["claims"], **KW)}


def test_set_means_and_unweighted_avg():
    frame = _frame({"m": _uniform([1, 1, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 0])})
    means = ab.set_means(frame, "m")
    assert means == pytest.approx(
        {"General": 0.5, "Broad": 0.125, "LongTail": 0.75, "Avg": (0.5 + 0.125 + 0.75) / 3}
    )
    # Pooled over domains: the domain column does not split the mean.
    assert set(frame["domain"]) == {"D1", "D2"}
    # A set without queries makes the Avg NaN rather than a two-set mean.
    missing = ab.set_means(frame[frame["label"] != "Broad"], "m")
    assert pd.isna(missing["Broad"]) and pd.isna(missing["Avg"])


def test_paired_difference_golden_mean_and_ci():
    frame = _frame(BASE)
    d = ab.paired_avg_difference(frame, "ttp", "dense", measure="Recall@20", **KW)
    golden = {"General": 6 / 8 - 1 / 8, "Broad": 3 / 8 - 1 / 8, "LongTail": 4 / 8}
    for s, value in golden.items():
        assert d[s]["difference"] == pytest.approx(value)
        assert d[s]["queries"] == 8
        assert d[s]["ci_low"] <= d[s]["difference"] <= d[s]["ci_high"]
    assert d["Avg"]["difference"] == pytest.approx(sum(golden.values()) / 3)
    assert d["Avg"]["ci_low"] <= d["Avg"]["difference"] <= d["Avg"]["ci_high"]
    assert d["Avg"]["ci_low"] < d["Avg"]["ci_high"]
    # Seeded: the same call gives the same CI.
    assert ab.paired_avg_difference(frame, "ttp", "dense", measure="Recall@20", **KW) == d


def test_paired_difference_uses_only_matched_queries():
    frame = _frame({"a": _uniform([1, 1, 1, 1], [1], [1]), "b": _uniform([0, 0], [0], [0])})
    d = ab.paired_avg_difference(frame, "a", "b", measure="Recall@20", **KW)
    assert d["General"]["queries"] == 2
    assert d["General"]["difference"] == pytest.approx(1.0)
    assert d["Avg"]["queries"] == 4


def test_llm_embedding_takes_the_qwen_embedding_row_and_is_figure5s_baseline(paper):
    frame = _frame({**BASE, "llm_embedding": BASE["decoupled"]})
    rows = ab.ablation_rows(frame, "table6", paper=paper, **KW)
    assert list(rows["method"]) == [m for m in ab.TABLE6 if m != "dense"]
    assert rows.iloc[0]["paper_key"] == "qwen_embedding"
    fig = ab.figure5_rows(frame, paper=paper, **KW).set_index(["method", "test_set"])
    # ttp over decoupled's values (General: 6 of 8 against 2 of 8 hits: +50 points)
    assert fig.loc[("ttp", "General"), "gain"] == pytest.approx(50.0)


def test_ablation_rows_order_paper_values_and_reference(paper):
    frame = _frame(BASE)
    rows = ab.ablation_rows(frame, "table6", paper=paper, **KW)
    # without llm_embedding, the query-only dense baseline takes the Qwen-Embedding row
    assert list(rows["method"]) == [m for m in ab.TABLE6 if m != "llm_embedding"]
    ttp = rows.set_index("method").loc["ttp"]
    assert ttp["General"] == pytest.approx(0.75)
    assert ttp["diff_vs_sft"] == 0.0
    assert ttp["General paper"] == paper["table6"]["rows"]["ttp_sft"]["General"]
    dense = rows.set_index("method").loc["dense"]
    assert dense["label"].startswith("Query-only dense")
    assert dense["Avg paper"] == paper["table6"]["rows"]["qwen_embedding"]["Avg"]
    expect = ab.set_means(frame, "dense")["Avg"] - ab.set_means(frame, "ttp")["Avg"]
    assert dense["diff_vs_sft"] == pytest.approx(expect)
    assert dense["diff_ci_low"] <= dense["diff_vs_sft"] <= dense["diff_ci_high"]
    # A method missing from the frame is left out, not an error.
    partial = ab.ablation_rows(frame[frame["method"] != "decoupled"], "table6", **KW)
    assert "decoupled" not in set(partial["method"])
    assert partial["General paper"].isna().all()  # no paper given
    with pytest.raises(ValueError):
        ab.ablation_rows(frame, "table8", **KW)


def test_figure5_gains_in_points(paper):
    fig = ab.figure5_rows(_frame(BASE), paper=paper, **KW)
    assert len(fig) == 4 * 3
    ttp_broad = fig[(fig["method"] == "ttp") & (fig["test_set"] == "Broad")].iloc[0]
    assert ttp_broad["gain"] == pytest.approx(100 * (3 / 8 - 1 / 8))
    assert ttp_broad["ci_low"] <= ttp_broad["gain"] <= ttp_broad["ci_high"]
    assert ttp_broad["paper_gain"] == paper["figure5"]["Broad"]["ttp_sft"]
    assert ab.figure5_rows(_frame({"ttp": BASE["ttp"]}), **KW).empty  # no baseline


def test_claims_hold_on_constructed_data(paper):
    claims = _claims(_frame(BASE), paper)
    assert list(claims) == list(ab.CLAIM_IDS)  # only the ablation claims, in paper order
    for c in claims.values():
        assert c["status"] == "held", c
        assert c["margin"] > 0
        assert c["text"]
    # intent_q_helps: SFT's differences are (2/8, 1/8, 2/8), RL's (2/8, 3/8, 2/8).
    assert claims["intent_q_helps"]["margin"] == pytest.approx(100 * 1 / 8)
    assert "ttp - ttp_no_intent_q on Broad" in claims["intent_q_helps"]["detail"]
    grows = claims["intent_q_gain_grows_with_rl"]
    assert grows["margin"] == pytest.approx(100 * (7 / 8 - 5 / 8) / 3)
    assert grows["ci_low"] <= grows["margin"] <= grows["ci_high"]
    # Avg: TTP (SFT) 13/24, no dynamic selection 12/24.
    assert claims["random_selection_hurts"]["margin"] == pytest.approx(100 / 24)
    # Avg: ttp_rl 21/24, no positive gain 16/24, no margin gain 20/24 -> min(5, 1, 4) / 24.
    assert claims["both_reward_terms_help"]["margin"] == pytest.approx(100 / 24)
    assert "ttp_rl_unfrozen_reward" in claims["unfrozen_rm_catastrophic"]["detail"]


def test_intent_q_not_held_when_rl_rewrite_hurts(paper):
    values = dict(BASE)
    # ttp_rl below ttp_rl_no_intent_q on LongTail by 2/8.
    values["ttp_rl"] = _uniform([1] * 8, [1, 1, 1, 1, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0, 1, 1])
    claim = _claims(_frame(values), paper)["intent_q_helps"]
    assert claim["status"] == "not held"
    assert claim["margin"] == pytest.approx(-100 * 2 / 8)
    assert claim["ci_low"] <= claim["margin"] <= claim["ci_high"]
    assert "LongTail" in claim["detail"]


def test_unfrozen_not_worst_is_not_held(paper):
    values = dict(BASE)
    values["ttp_rl_no_dynamic_selection"] = _uniform([0] * 8, [0] * 8, [0] * 8)
    claim = _claims(_frame(values), paper)["unfrozen_rm_catastrophic"]
    assert claim["status"] == "not held"
    assert claim["margin"] > 0  # still below SFT, but not the lowest row
    assert "ttp_rl_no_dynamic_selection" in claim["detail"]


def test_missing_methods_make_claims_not_applicable(paper):
    frame = _frame({m: BASE[m] for m in ("dense", "decoupled", "ttp")})
    claims = _claims(frame, paper)
    assert {c["status"] for c in claims.values()} == {"not applicable"}
    assert "ttp_rl" in claims["intent_q_helps"]["detail"]
    assert pd.isna(claims["intent_q_helps"]["margin"])


def test_run_ablations_and_outputs_write_every_file(tmp_path, paper):
    from personalir.ttp.evaluation.claims import run_claims
    from personalir.ttp.paper.ablation_tables import make_ablation_outputs

    frame = _frame({m: v for m, v in BASE.items() if m != "ttp_rl_no_margin_gain"})
    per_query = tmp_path / "per_query.parquet"
    frame.to_parquet(per_query)
    out = tmp_path / "ablations"
    summary = ab.run_ablations(
        per_query_path=per_query,
        paper_path=PAPER_PATH,
        ttp_eval={"bootstrap_samples": 100, "confidence": 0.95},
        seed=3,
        out_dir=out,
    )
    assert summary["missing"]["table7"] == ["ttp_rl_no_margin_gain"]
    for name in ("table6.parquet", "table7.parquet", "figure5.parquet"):
        assert (out / name).is_file()
    statuses = run_claims(
        per_query_path=per_query,
        paper_path=PAPER_PATH,
        ttp_eval={"bootstrap_samples": 100, "confidence": 0.95},
        seed=3,
        out_path=tmp_path / "claims.json",
    )
    assert statuses["both_reward_terms_help"] == "not applicable"
    assert statuses["intent_q_helps"] == "held"
    claims = json.loads((tmp_path / "claims.json").read_text(encoding="utf-8"))
    # the ablation claims, Table 4's and the history sweep's, in the paper's order
    from personalir.ttp.evaluation.history_sweep import CLAIM_ID as SWEEP
    from personalir.ttp.evaluation.table4_claims import CLAIM_IDS as T4

    order = [c["id"] for c in yaml.safe_load(PAPER_PATH.read_text())["claims"]]
    want = [i for i in order if i in set(ab.CLAIM_IDS) | set(T4) | {SWEEP, "public_generalises"}]
    assert [c["id"] for c in claims] == want
    # no sweep given: its claim is not applicable, and says why
    sweep = next(c for c in claims if c["id"] == SWEEP)
    assert sweep["status"] == "not applicable" and "no history-length sweep" in sweep["detail"]
    public = next(c for c in claims if c["id"] == "public_generalises")
    assert public["status"] == "not applicable" and "no public sets" in public["detail"]

    tex, csv, pdf = tmp_path / "tex", tmp_path / "csv", tmp_path / "fig" / "figure5.pdf"
    make_ablation_outputs(
        ablation_dir=out,
        claims_path=tmp_path / "claims.json",
        config_label="sample_world",
        tex_dir=tex,
        csv_dir=csv,
        figure_out=pdf,
    )
    for path in (
        csv / "table6.csv",
        csv / "table7.csv",
        csv / "figure5.csv",
        csv / "claims.md",
        tex / "ttp_table6.tex",
        tex / "ttp_table7.tex",
        tex / "ttp_claims.tex",
        pdf,
    ):
        assert path.is_file() and path.stat().st_size > 0, path
    table6 = (tex / "ttp_table6.tex").read_text(encoding="utf-8")
    assert f"{paper['table6']['rows']['ttp_sft']['General']:.2f}" in table6
    assert "75.0" in table6  # ours x100 for TTP (SFT) on General
    assert "synthetic" in table6 and "Qwen-Embedding" in table6
    assert r"sample\_world" in table6
    table7 = (tex / "ttp_table7.tex").read_text(encoding="utf-8")
    assert f"{paper['table7']['rows']['rl_unfrozen_reward_model']['Avg']:.2f}" in table7
    assert "Not in this run" in table7
    md = (csv / "claims.md").read_text(encoding="utf-8")
    assert "`intent_q_helps` | held" in md and "not applicable" in md
    assert pdf.read_bytes().startswith(b"%PDF")
    assert b"CreationDate" not in pdf.read_bytes()


# ------------------------------------------------------------------- Table 4's claims


def _t4(frame):
    from personalir.ttp.evaluation.table4_claims import evaluate_table4_claims

    claims = yaml.safe_load(PAPER_PATH.read_text())["claims"]
    rows = ["dense", "decoupled", "ttp", "ttp_rl"]
    hist = {"dense": False, "decoupled": True, "ttp": True, "ttp_rl": True}
    out = evaluate_table4_claims(frame, claims, table4=rows, uses_history=hist, **KW)
    return {c["id"]: c for c in out}


def test_table4_claims_hold_and_fail_with_the_right_margins():
    frame = _frame(BASE)
    got = _t4(frame)
    assert list(got) == [
        "history_helps",
        "ttp_best_everywhere",
        "rl_helps",
        "gains_largest_on_broad_longtail",
        "student_retains_teacher",
    ]
    assert got["student_retains_teacher"]["status"] == "not applicable"  # no student row
    # lowest history-using Avg (decoupled: (2+2+2)/8/3 = 0.25) - dense's (1/8+1/8+0)/3
    assert got["history_helps"]["status"] == "held"
    assert got["history_helps"]["margin"] == pytest.approx(100 * (0.25 - 1 / 12))
    # ttp_rl leads every row in every cell (all measures equal Recall@20 here); its leads
    # over the runner-up ttp: General 1 - 0.75, Broad 7/8 - 3/8, LongTail 0.75 - 0.5
    assert got["ttp_best_everywhere"]["status"] == "held"
    assert got["ttp_best_everywhere"]["margin"] == pytest.approx(25.0)
    assert got["rl_helps"]["margin"] == pytest.approx(25.0)
    # gain over dense: Broad 7/8 - 1/8 = 0.75, General 1 - 1/8 = 0.875 -> -0.125: not held
    g = got["gains_largest_on_broad_longtail"]
    assert g["status"] == "not held" and g["margin"] == pytest.approx(-12.5)
    assert g["ci_low"] <= g["margin"] <= g["ci_high"]


def test_table4_claims_not_applicable_without_the_rl_row():
    frame = _frame({k: v for k, v in BASE.items() if k != "ttp_rl"})
    got = _t4(frame)
    assert got["rl_helps"]["status"] == "not applicable"
    assert got["ttp_best_everywhere"]["status"] == "not applicable"
    assert got["history_helps"]["status"] == "held"


def _relevance_record(method, scores, labels, qids):
    return {
        "method": method,
        "spearman": None,
        "scored": [
            [q, f"i{k}", lab, s]
            for k, (q, lab, s) in enumerate(zip(qids, labels, scores, strict=True))
        ],
    }


def test_relevance_cell_joins_best_everywhere_and_rl_helps():
    from personalir.ttp.evaluation.table4_claims import evaluate_table4_claims
    from personalir.ttp.inputs.relevance_set import spearman

    qids = ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    labels = [2, 1, 0] * 3
    scores = {
        "ttp_rl": [3, 2, 1, 6, 5, 4, 9, 8, 7],  # rho 0.775 (perfect within each query)
        "ttp": [3, 2, 1, 6, 4, 5, 9, 8, 7],  # one swap in query b
        "dense": [1, 2, 3, 4, 5, 6, 7, 8, 9],
        "decoupled": [3, 1, 2, 4, 6, 5, 7, 8, 9],
    }
    rel = {}
    for m, sc in scores.items():
        rec = _relevance_record(m, sc, labels, qids)
        rec["spearman"] = spearman(sc, labels)
        rel[m] = {"S": rec}
    claims = yaml.safe_load(PAPER_PATH.read_text())["claims"]
    rows = ["dense", "decoupled", "ttp", "ttp_rl"]
    hist = {"dense": False, "decoupled": True, "ttp": True, "ttp_rl": True}
    got = {
        c["id"]: c
        for c in evaluate_table4_claims(
            _frame(BASE), claims, table4=rows, uses_history=hist, relevance=rel, **KW
        )
    }
    lead = 100 * (spearman(scores["ttp_rl"], labels) - spearman(scores["ttp"], labels))
    assert 0 < lead < 25  # smaller than the 25-point lead of the twelve cells
    for claim in ("ttp_best_everywhere", "rl_helps"):
        assert got[claim]["margin"] == pytest.approx(lead)
        assert "Relevance Spearman" in got[claim]["measured"]
        assert got[claim]["ci_low"] <= got[claim]["margin"] + 1e-9
        assert "13 cells" in got[claim]["detail"]
    # without the Relevance outputs the twelve cells decide, as before
    plain = {
        c["id"]: c
        for c in evaluate_table4_claims(_frame(BASE), claims, table4=rows, uses_history=hist, **KW)
    }
    assert plain["rl_helps"]["margin"] == pytest.approx(25.0)
    assert "not evaluated here" in plain["rl_helps"]["detail"]


def test_student_retains_teacher_margin_golden():
    from personalir.ttp.evaluation.table4_claims import RETENTION, evaluate_table4_claims

    claims = yaml.safe_load(PAPER_PATH.read_text())["claims"]
    students = {
        "student": BASE["ttp_rl"],  # Avg 0.875
        "student_no_qr_p": BASE["ttp"],  # 13/24
        "student_no_q_qr": BASE["ttp_rl_no_intent_q"],  # 14/24
        "student_no_qr_p_no_q_qr": BASE["dense"],  # 2/24
    }

    def run(values):
        frame = _frame({"ttp_rl": BASE["ttp_rl"], **values})
        out = evaluate_table4_claims(
            frame, claims, table4=["ttp_rl"], uses_history={"ttp_rl": True}, **KW
        )
        return {c["id"]: c for c in out}["student_retains_teacher"]

    got = run(students)
    # the retention part decides: 0.875 - 0.9 x 0.875
    assert got["status"] == "held"
    assert got["margin"] == pytest.approx(100 * (0.875 - RETENTION * 0.875))
    assert "gain of <q_r,p+> +33.33" in got["detail"]
    got = run({**students, "student": BASE["ttp"]})  # student as weak as its ablation
    assert got["status"] == "not held"
    assert got["margin"] == pytest.approx(100 * (13 / 24 - RETENTION * 0.875))
    got = run({"student": BASE["ttp_rl"]})  # no ablation variants: retention only, said so
    assert "not evaluated (variant missing)" in got["detail"]
    frame = _frame({"student": BASE["ttp_rl"]})
    out = evaluate_table4_claims(frame, claims, table4=[], uses_history={}, **KW)
    assert {c["id"]: c for c in out}["student_retains_teacher"]["status"] == "not applicable"
