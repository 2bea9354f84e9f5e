"""The query stage end to end on the small sample world, and the benchmark's invariants.

Upstream stages run in-process on the ``small_world`` fixture with the default configuration,
two shortcuts kept for time: the syntax encoder trains 8 epochs, and the error stage corrects
with its spelling backend only. The language model is a tiny randomly initialised Qwen2 (the
paper's model family) built by the test: every LM code path runs (LoRA on the seed set,
shared-prompt sampling, perplexity), its candidates are noise and the filters remove them.
The packaged SmolLM2 runs the same code in the workflow.
"""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pyarrow.parquet as pq
import pytest

from personalir.common.config import validate_config
from personalir.common.io import read_json, write_json
from personalir.queries.benchmark_format import from_released, read_benchmark
from personalir.queries.terms import count_terms

from .workflow import copy_workflow, snakemake

pytestmark = pytest.mark.integration


def _upstream(small_world, root, cfg):
    from personalir.errors.stage import run_correct, run_edits, run_profiles
    from personalir.syntax.encoder import run_encoder
    from personalir.syntax.features import run_features
    from personalir.syntax.gaussian import run_profiles as run_syntax_profiles
    from personalir.syntax.parse import run_parse
    from personalir.syntax.rules import ParseSettings

    syn = root / "syntax"
    s = cfg["syntax"]
    run_parse(
        small_world["sentences"],
        syn / "parsed.parquet",
        syn / "parse.json",
        ParseSettings.from_config(s["parse"]),
    )
    run_features(
        syn / "parsed.parquet",
        small_world["sentences"],
        {
            "vectors": syn / "vectors.npz",
            "index": syn / "index.parquet",
            "vocab": syn / "vocab.parquet",
            "report": syn / "features.json",
        },
        s["features"],
        cfg["seed"],
    )
    run_encoder(
        syn / "vectors.npz",
        syn / "index.parquet",
        syn / "vocab.parquet",
        small_world["reviewers"],
        {
            "weights": syn / "encoder.safetensors",
            "meta": syn / "encoder.json",
            "embeddings": syn / "embeddings.parquet",
            "curve": syn / "curve.csv",
        },
        {**s["encoder"], "epochs": 8},
        cfg["seed"],
    )
    run_syntax_profiles(
        syn / "embeddings.parquet",
        {"profiles": syn / "profiles.parquet", "report": syn / "profiles.json"},
        s["profiles"],
    )
    e = cfg["errors"]
    sentences = pq.read_table(small_world["sentences"]).to_pandas()
    corr, _ = run_correct(
        sentences, {**e["gec"], "backends": ["symspell"]}, threads=1, cache_dir=None
    )
    corr = corr.to_pandas()
    edits, words, _ = run_edits(corr, e["edits"])
    profiles = run_profiles(edits.to_pandas(), words.to_pandas(), corr, e["profiles"])
    write_json(root / "errors_profiles.json", profiles.to_json())
    return syn


def _queries(small_world, root, syn, cfg, model_dir, tag):
    from personalir.queries.candidates import run_candidates
    from personalir.queries.generator import run_lm
    from personalir.queries.select import run_select
    from personalir.queries.tables import run_tables

    domain = small_world["domain"]
    q = validate_config(
        {
            "queries": {
                "products_per_domain": 12,
                "lm": {
                    "model": str(model_dir),
                    "products": 2,
                    "candidates_per_round": 4,
                    "max_rounds": 2,
                    "max_new_tokens": 24,
                    "lora": {"steps": 2, "batch_size": 4, "last_layers": 1},
                },
                "grammar": {"candidates_per_product": 16},
            }
        }
    )["queries"]
    out = root / tag
    lm_out = {
        "adapter": out / "lm" / "adapter_model.safetensors",
        "adapter_config": out / "lm" / "adapter_config.json",
        "report": out / "lm" / "lm.report.json",
    }
    from personalir.queries.seeds import SEED_PATH

    run_lm(SEED_PATH, q, cfg["seed"], lm_out)
    cand = {"candidates": out / "candidates.parquet", "report": out / "candidates.json"}
    run_candidates(
        domain,
        small_world["products"],
        small_world["reviewers"],
        out / "lm",
        lm_out["report"],
        q,
        cfg["seed"],
        cand,
    )
    sel = {
        k: out / v
        for k, v in (
            ("benchmark", "benchmark.jsonl"),
            ("released", "released.json"),
            ("pairs", "pairs.csv"),
            ("report", "select.json"),
            ("filter_report", "filters.json"),
        )
    }
    paths = {
        "candidates": cand["candidates"],
        "candidates_report": cand["report"],
        "products": small_world["products"],
        "reviewers": small_world["reviewers"],
        "encoder_weights": syn / "encoder.safetensors",
        "encoder_meta": syn / "encoder.json",
        "profiles": syn / "profiles.parquet",
        "embeddings": syn / "embeddings.parquet",
        "error_profiles": root / "errors_profiles.json",
        "lm_report": lm_out["report"],
    }
    run_select(domain, paths, q, cfg["syntax"]["parse"], cfg["errors"], cfg["seed"], sel)
    tables = {
        k: out / "tables" / f"{k}.{k.rsplit('_', 1)[1]}"
        for k in (
            "datasheet_csv",
            "datasheet_tex",
            "filters_csv",
            "filters_tex",
            "identifiability_csv",
            "identifiability_tex",
        )
    }
    run_tables(
        [domain],
        {
            "benchmarks": [sel["benchmark"]],
            "select_reports": [sel["report"]],
            "filter_reports": [sel["filter_report"]],
            "syntax_profiles": [syn / "profiles.parquet"],
            "syntax_embeddings": [syn / "embeddings.parquet"],
        },
        tables,
        q,
        "test",
    )
    return {
        **sel,
        **cand,
        "candidates_report": cand["report"],
        "lm_report": lm_out["report"],
        "tables": tables,
    }


@pytest.fixture(scope="module")
def run(small_world, tmp_path_factory):
    from personalir.queries.seeds import load_seeds
    from tests.fixtures.models import build_tiny_qwen2

    cfg = validate_config({})
    root = tmp_path_factory.mktemp("queries")
    seeds = load_seeds()
    texts = [s["query"] for s in seeds] + [f"{k}: {v}" for s in seeds for k, v in s["attributes"]]
    model_dir = build_tiny_qwen2(root / "tiny_qwen2", texts)
    syn = _upstream(small_world, root, cfg)
    first = _queries(small_world, root, syn, cfg, model_dir, "first")
    return {
        "paths": first,
        "root": root,
        "syn": syn,
        "cfg": cfg,
        "model": model_dir,
        "world": small_world,
    }


def test_pairs_of_both_kinds_and_every_candidate_accounted_for(run):
    p = run["paths"]
    recs = read_benchmark(p["benchmark"])
    kinds = Counter(r["kind"] for r in recs)
    assert kinds["syntactic"] >= 6 and kinds["writing_error"] >= 6
    cand = pq.read_table(p["candidates"]).to_pandas()
    rep = read_json(p["filter_report"])
    for backend, c in rep["by_backend"].items():
        # Eager filters partition what was generated; fluency at selection acts on valid ones.
        removed = sum(
            v for k, v in c.items() if k.startswith("removed_") and not k.endswith("at_selection")
        )
        assert c["generated"] == removed + c["valid"] == int((cand["backend"] == backend).sum())
        assert c["removed_fluency_at_selection"] <= c["fluency_at_selection"]
        assert c["used_in_pairs"] <= c["valid"]
    assert sum(c["used_in_pairs"] for c in rep["by_backend"].values()) == kinds["syntactic"]
    # Fluency is scored at selection (the CPU default): only what a pair would use.
    assert rep["filters"][-1] == "fluency (at selection)"
    for c in rep["by_backend"].values():
        assert c["used_in_pairs"] <= c["fluency_at_selection"] <= c["valid"]
    # Constrained decoding (the default): even the tiny random LM names every core value once
    # and no contradicting value, so the lexical and contradiction filters remove nothing.
    lm = rep["by_backend"]["lm"]
    assert lm["generated"] > 0 and lm["removed_lexical"] == 0 and lm["removed_contradiction"] == 0
    cand_rep = read_json(p["candidates_report"])
    assert cand_rep["backends"]["lm"]["constraint"]["violations"] == 0
    lm_report = read_json(p["lm_report"])
    assert lm_report["fluency"]["max_perplexity"] > 0 and len(lm_report["history"]) == 2


def test_syntactic_pairs_share_the_core_term_multiset(run):
    recs = read_benchmark(run["paths"]["benchmark"])
    pairs = {}
    for r in recs:
        if r["kind"] == "syntactic":
            pairs.setdefault(r["pair_id"], {})[r["role"]] = r
    assert pairs
    for pair in pairs.values():
        a, b = pair["a"], pair["b"]
        assert a["core_terms"] == b["core_terms"] and len(a["core_terms"]) == 5
        ca, cb = count_terms(a["text"], a["core_terms"]), count_terms(b["text"], b["core_terms"])
        assert ca == cb == {t: 1 for t in a["core_terms"]}
        assert a["user_id"] != b["user_id"] and a["text"] != b["text"]
        assert a["provenance"]["gaussian_distance"]["value"] > 0
        for side in (a, b):  # inside its own user's region, outside the partner's
            prov = side["provenance"]
            assert prov["d2_own"] <= prov["threshold_own"]
            assert prov["d2_partner"] > prov["threshold_partner"]


def test_error_query_is_its_clean_query_up_to_the_recorded_edits(run):
    recs = read_benchmark(run["paths"]["benchmark"])
    pairs = {}
    for r in recs:
        if r["kind"] == "writing_error":
            pairs.setdefault(r["pair_id"], {})[r["role"]] = r
    syn_text = {r["query_id"]: r["text"] for r in recs if r["kind"] == "syntactic"}
    assert pairs
    for pair in pairs.values():
        clean, err = pair["clean"], pair["error"]
        assert clean["user_id"] == err["user_id"] and clean["text"] != err["text"]
        assert syn_text[clean["provenance"]["source_query_id"]] == clean["text"]
        edits = err["provenance"]["edits"]
        assert 1 <= len(edits) == err["provenance"]["applied"]
        text = clean["text"]
        for e in sorted(edits, key=lambda e: e["start"], reverse=True):
            assert text[e["start"] : e["end"]] == e["original"]
            text = text[: e["start"]] + e["replacement"] + text[e["end"] :]
        assert text == err["text"]
        for e in edits:  # the minimality constraints
            assert len(e["original"]) >= 3 and abs(len(e["replacement"]) - len(e["original"])) <= 1


def test_pairs_reference_existing_users_and_products_and_never_the_product_id(run):
    recs = read_benchmark(run["paths"]["benchmark"])
    world = run["world"]
    products = set(pq.read_table(world["products"], columns=["parent_asin"]).column(0).to_pylist())
    users = set(pq.read_table(world["users"], columns=["user_id"]).column(0).to_pylist())
    reviewers = pq.read_table(world["reviewers"]).to_pandas()
    reviewed = set(zip(reviewers["parent_asin"], reviewers["user_id"], strict=True))
    for r in recs:
        assert r["product"] in products and r["user_id"] in users
        assert (r["product"], r["user_id"]) in reviewed  # the user reviewed the product
        assert r["product"].lower() not in r["text"].lower()


def test_released_export_reads_back(run):
    p = run["paths"]
    recs = read_benchmark(p["benchmark"])
    released = json.loads(p["released"].read_text())
    n_syn = len({(r["product"], r["user_id"]) for r in recs if r["kind"] == "syntactic"})
    assert sum(len(v) for v in released.values()) == n_syn
    back = from_released(released, run["world"]["domain"])
    typo = {(r["product"], r["user_id"]): r["text"] for r in back if r["role"] == "error"}
    ours = {(r["product"], r["user_id"]): r["text"] for r in recs if r["role"] == "error"}
    assert typo == ours


def test_identifiability_and_tables(run):
    t = run["paths"]["tables"]
    ident = pd.read_csv(t["identifiability_csv"])
    assert ident.iloc[-1]["Both own (profile)"] > 0.5
    sheet = pd.read_csv(t["datasheet_csv"])
    recs = read_benchmark(run["paths"]["benchmark"])
    row = sheet.iloc[0]
    assert row["Writing-error"] == sum(r["role"] == "error" for r in recs)
    assert row["Total queries"] == row["Syntactic"] + row["Writing-error"]
    assert "\\label{tab:pqb-datasheet}" in t["datasheet_tex"].read_text()


def test_same_seed_same_benchmark(run):
    again = _queries(run["world"], run["root"], run["syn"], run["cfg"], run["model"], "again")
    first = run["paths"]
    assert again["benchmark"].read_bytes() == first["benchmark"].read_bytes()
    assert again["released"].read_bytes() == first["released"].read_bytes()
    a = pq.read_table(again["candidates"])
    assert a.equals(pq.read_table(first["candidates"]))


def test_eager_fluency_scores_every_candidate_that_reaches_it(run, tmp_path):
    """The paper-scale setting: fluency among the eager filters, scored with the adapter off."""
    from personalir.queries.candidates import run_candidates

    q = validate_config(
        {
            "queries": {
                "products_per_domain": 3,
                "lm": {
                    "model": str(run["model"]),
                    "products": 1,
                    "candidates_per_round": 4,
                    "max_new_tokens": 6,
                },
                "grammar": {"candidates_per_product": 6},
                "filters": {
                    "eager": ["lexical", "contradiction", "duplicate", "semantic", "fluency"],
                    "fluency": {"at_selection": False},
                },
            }
        }
    )["queries"]
    out = {"candidates": tmp_path / "c.parquet", "report": tmp_path / "c.json"}
    first = run["paths"]
    world = run["world"]
    run_candidates(
        world["domain"],
        world["products"],
        world["reviewers"],
        first["lm_report"].parent,
        first["lm_report"],
        q,
        1,
        out,
    )
    cand = pq.read_table(out["candidates"]).to_pandas()
    reached = cand["status"].isin(["valid", "fluency"])
    assert reached.any() and cand.loc[reached, "perplexity"].notna().all()
    assert cand.loc[~reached, "perplexity"].isna().all()
    bound = read_json(first["lm_report"])["fluency"]["max_perplexity"]
    assert (cand.loc[cand["status"] == "valid", "perplexity"] <= bound).all()
    assert (cand.loc[cand["status"] == "fluency", "perplexity"] > bound).all()
    counts = read_json(out["report"])["counts"]
    assert sum(c["removed_fluency"] for c in counts.values()) == int(
        (cand["status"] == "fluency").sum()
    )
    # Both placements at once are refused, naming the keys.
    both = {
        **q,
        "filters": {**q["filters"], "fluency": {**q["filters"]["fluency"], "at_selection": True}},
    }
    with pytest.raises(ValueError, match="both eager and at_selection"):
        run_candidates(
            world["domain"],
            world["products"],
            world["reviewers"],
            first["lm_report"].parent,
            first["lm_report"],
            both,
            1,
            out,
        )


def test_rules_wire_up(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    proc = snakemake(work, "results/queries/datasheet.csv", "-n", "--quiet", "rules")
    out = proc.stdout + proc.stderr
    for rule in ("queries_lm", "queries_candidates", "queries_select", "queries_tables"):
        assert rule in out, out[-2000:]
