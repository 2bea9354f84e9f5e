"""TTP on PQB: pair choice, set names, the history effects' verdicts, the rule's outputs and
the workflow's checks of `ttp.pqb`."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from personalir.retrieval.metrics import MetricSettings, per_query_frame
from personalir.ttp.evaluation import names, on_pqb
from personalir.ttp.paper import on_pqb_tables
from personalir.workflow import ttp_pqb as ttp_pqb_wf

SETTINGS = MetricSettings(flip_k=(1, 10), deg_k=(1, 10), rr_depth=100, standard=("RR@100",))
DOCS = [f"d{i}" for i in range(30)]


def _queries(products=("p0", "p1", "p2", "p3"), kinds=("syntactic", "writing_error")):
    out = []
    for p in products:
        for kind in kinds:
            for role in names.PAIR_ROLES[kind]:
                out.append(
                    {
                        "query_id": f"{p}:{kind}:{role}",
                        "domain": "D",
                        "product": p,
                        "user_id": f"u-{role}",
                        "pair_id": f"{p}:{kind}",
                        "kind": kind,
                        "role": role,
                        "text": f"{p} {kind} {role}",
                    }
                )
    return out


def _run(queries, rank_of):
    """A run placing each query's product at ``rank_of(query)`` among filler documents."""
    run = {}
    for q in queries:
        docs = [d for d in DOCS if d != q["product"]]
        docs.insert(rank_of(q) - 1, q["product"])
        run[q["query_id"]] = docs
    return run


def test_set_names_round_trip():
    assert names.set_name("Video_Games", "history") == "PQB-Video_Games"
    assert names.set_name("Video_Games", "no_history") == "PQB-Video_Games-nohistory"
    for mode in names.MODES:
        assert names.parse_set_name(names.set_name("A_B", mode)) == ("A_B", mode)
    with pytest.raises(ValueError, match="not a TTP-on-PQB set"):
        names.parse_set_name("Musical_Instruments")


def test_select_pairs_counts_incomplete_and_caps_each_kind_deterministically():
    records = _queries(products=[f"p{i}" for i in range(6)])
    records.append({**records[0], "query_id": "lonely", "pair_id": "lonely", "role": "a"})
    kept, report = on_pqb.select_pairs(records, 2, seed=7, domain="D")
    assert report["incomplete"] == 1
    assert report["pairs"] == {"syntactic": 2, "writing_error": 2}
    assert report["left_out"] == {"syntactic": 4, "writing_error": 4}
    assert len(kept) == 8 and {r["pair_id"] for r in kept} <= {r["pair_id"] for r in records}
    again, _ = on_pqb.select_pairs(records, 2, seed=7, domain="D")
    assert again == kept
    everything, report = on_pqb.select_pairs(records, None, seed=7, domain="D")
    assert len(everything) == 24 and report["left_out"] == {"syntactic": 0, "writing_error": 0}
    with pytest.raises(ValueError, match="unknown kind"):
        on_pqb.select_pairs([{**records[0], "kind": "other"}], None, 0, "D")


def _frames():
    queries = _queries()
    robust = per_query_frame(queries, _run(queries, lambda q: 1), SETTINGS)
    # Without history the b query of every syntactic pair drops to rank 20: a flip at 1 and 10.
    flipping = per_query_frame(
        queries, _run(queries, lambda q: 20 if q["role"] == "b" else 1), SETTINGS
    )
    return {("D", "m", "history"): robust, ("D", "m", "no_history"): flipping}


def _effects(frames, metrics):
    return on_pqb.history_effects(
        frames,
        ["m", "q"],
        {"m": True, "q": False},
        ["D"],
        {"m": "Method"},
        metrics,
        SETTINGS,
        samples=200,
        confidence=0.95,
        permutations=200,
        seed=1,
    )


def test_history_effects_golden_values_and_verdicts():
    effects = _effects(_frames(), ["Flip@1", "Flip@10", "Deg@1", "MRRdeg@100"]).set_index("metric")
    assert list(effects["method"].unique()) == ["m"]  # the query-only method has no effect row
    flip = effects.loc["Flip@1"]
    assert (flip["with_history"], flip["without_history"]) == (0.0, 1.0)
    assert (flip["difference"], flip["ci_low"], flip["ci_high"]) == (-1.0, -1.0, -1.0)
    assert flip["verdict"] == "held" and flip["p_value"] < 0.2
    # the writing-error pairs rank the same with and without history: no effect, not held
    deg = effects.loc["Deg@1"]
    assert (deg["difference"], deg["ci_low"], deg["ci_high"]) == (0.0, 0.0, 0.0)
    assert deg["verdict"] == "not held"
    assert effects.loc["MRRdeg@100", "verdict"] == "not held"


def test_history_effects_not_applicable_without_pairs_of_the_kind():
    queries = _queries(kinds=("syntactic",))
    frame = per_query_frame(queries, _run(queries, lambda q: 1), SETTINGS)
    frames = {("D", "m", "history"): frame, ("D", "m", "no_history"): frame}
    effects = _effects(frames, ["Flip@1", "Deg@1"]).set_index("metric")
    assert effects.loc["Deg@1", "verdict"] == "not applicable"
    assert effects.loc["Flip@1", "verdict"] == "not held"


def test_table_metrics_refuse_a_cutoff_that_is_not_computed():
    robust, effective = on_pqb.table_metrics(SETTINGS, [1, 10])
    assert robust == ["Flip@1", "Flip@10", "RRstd@100", "Deg@1", "Deg@10", "MRRdeg@100"]
    assert effective == ["RR@100"]
    with pytest.raises(ValueError, match="ttp.pqb.k"):
        on_pqb.table_metrics(SETTINGS, [5])


def _write_examples(path, queries):
    from personalir.ttp.inputs.data import Example, write_examples

    write_examples(
        path,
        [
            Example(
                example_id=q["query_id"],
                source="pqb",
                domain="D",
                user_id=q["user_id"],
                query=q["text"],
                target=q["product"],
                label=q["kind"],
                split="test",
                history=[],
                extra={"pair_id": q["pair_id"], "role": q["role"]},
            )
            for q in queries
        ],
    )


def _write_run(path, run, tag):
    lines = [
        f"{qid} Q0 {d} {i + 1} {len(docs) - i} {tag}"
        for qid, docs in run.items()
        for i, d in enumerate(docs)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_evaluate_writes_the_table_effects_and_latex(tmp_path):
    queries = _queries()
    (tmp_path / "PQB-D").mkdir()
    _write_examples(tmp_path / "PQB-D" / "examples.jsonl", queries)
    runs = {}
    for key, rank_of in {
        ("D", "m", "history"): lambda q: 1,
        ("D", "m", "no_history"): lambda q: 20 if q["role"] == "b" else 1,
        ("D", "q", None): lambda q: 3,
    }.items():
        path = tmp_path / f"{key[1]}-{key[2]}.trec"
        _write_run(path, _run(queries, rank_of), key[1])
        runs[key] = path
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            {
                "history": "history",
                "pairs": {"syntactic": 4, "writing_error": 4},
                "seen_in_training": 1,
            }
        ),
        encoding="utf-8",
    )
    out = {
        k: tmp_path / name
        for k, name in {
            "summary": "summary.csv",
            "table": "table.csv",
            "effects": "effects.csv",
            "effects_md": "effects.md",
            "facts": "facts.json",
            "table_tex": "table.tex",
            "effects_tex": "effects.tex",
        }.items()
    }
    facts = on_pqb.evaluate(
        runs=runs,
        examples={"D": tmp_path / "PQB-D" / "examples.jsonl"},
        set_reports=[report],
        methods=["m", "q"],
        labels={"m": "Method M", "q": "Query only"},
        uses_history={"m": True, "q": False},
        retrieval_metrics={
            "flip_k": [1, 10],
            "deg_k": [1, 10],
            "rr_depth": 200,
            "standard": ["RR@200"],
        },
        ttp={"depth": 100, "pqb": {"k": [1, 10]}, "evaluation": {"confidence": 0.95}},
        seed=3,
        samples=100,
        permutations=100,
        out={k: v for k, v in out.items() if not k.endswith("tex")},
        log=lambda *_: None,
    )
    on_pqb_tables.write_tex(
        table=out["table"],
        effects=out["effects"],
        facts=out["facts"],
        config_label="unit",
        synthetic=True,
        table_out=out["table_tex"],
        effects_out=out["effects_tex"],
    )
    facts = {k: facts[k] for k in ("queries", "pairs", "seen_in_training", "held", "effect_rows")}
    assert facts == {
        "queries": 16,
        "pairs": {"syntactic": 4, "writing_error": 4},
        "seen_in_training": 1,
        "held": 3,
        "effect_rows": 6,
    }
    table = pd.read_csv(out["table"])
    assert list(table["history"]) == ["with", "without", "not used"]
    assert list(table["Flip@1"]) == [0.0, 1.0, 0.0]
    assert table.loc[2, "RR@200"] == pytest.approx(1 / 3)
    tex = out["table_tex"].read_text(encoding="utf-8")
    assert r"\label{tab:ttp-on-pqb}" in tex and "depth 100" in tex and "synthetic" in tex
    assert "1 of the 16 queries" in tex
    effects = pd.read_csv(out["effects"])
    assert set(effects.loc[effects["verdict"] == "held", "metric"]) == {
        "Flip@1",
        "Flip@10",
        "RRstd@100",
    }
    assert "Held: 3 of 6." in out["effects_md"].read_text(encoding="utf-8")
    assert r"\label{tab:ttp-on-pqb-effects}" in out["effects_tex"].read_text(encoding="utf-8")


def test_absent_tables_say_why_under_the_same_labels(tmp_path):
    on_pqb_tables.write_absent(
        "TTP is disabled (ttp.enabled is false)", tmp_path / "t", tmp_path / "e"
    )
    tex = (tmp_path / "t").read_text(encoding="utf-8")
    assert r"\label{tab:ttp-on-pqb}" in tex and "ttp.enabled is false" in tex
    assert r"\label{tab:ttp-on-pqb-effects}" in (tmp_path / "e").read_text(encoding="utf-8")


def _config(**pqb):
    return {
        "results_dir": "res",
        "domains": ["A", "B"],
        "ttp": {
            "enabled": True,
            "source": "sample_world",
            "domains": ["B"],
            "methods": ["bm25", "dense", "history_aware", "ttp", "decoupled"],
            "pqb": {"methods": ["bm25", "history_aware"], "domains": None, **pqb},
        },
    }


def test_workflow_plans_both_sets_and_runs_by_history_use():
    config = _config()
    assert ttp_pqb_wf.pqb_domains(config) == ["B"]
    assert ttp_pqb_wf.pqb_sets(config) == ["PQB-B", "PQB-B-nohistory"]
    assert ttp_pqb_wf.pqb_run_specs(config) == [
        ("PQB-B", "bm25", "res/ttp/PQB-B/runs/bm25.trec"),
        ("PQB-B", "history_aware", "res/ttp/PQB-B/runs/history_aware.trec"),
        ("PQB-B-nohistory", "history_aware", "res/ttp/PQB-B-nohistory/runs/history_aware.trec"),
    ]
    inputs = ttp_pqb_wf.pqb_example_inputs(config, "PQB-B-nohistory")
    assert inputs["benchmark"] == "res/queries/B/benchmark.jsonl"
    assert inputs["train_examples"] == "res/ttp/B/examples.jsonl"
    assert "train_examples" not in ttp_pqb_wf.pqb_example_inputs(_config(domains=["A"]), "PQB-A")
    assert ttp_pqb_wf.pqb_sets(_config(methods=[])) == []


def test_workflow_refuses_methods_it_cannot_run_on_pqb():
    with pytest.raises(ValueError, match="not in ttp.methods"):
        ttp_pqb_wf.pqb_methods(_config(methods=["bm25", "hyde"]))
    with pytest.raises(ValueError, match="per-set rewrites"):
        ttp_pqb_wf.pqb_methods(_config(methods=["decoupled"]))
    with pytest.raises(ValueError, match="not among the configured domains"):
        ttp_pqb_wf.pqb_domains(_config(domains=["Z"]))
