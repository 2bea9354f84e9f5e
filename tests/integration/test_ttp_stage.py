"""The TTP stage of the real workflow on a tiny sample configuration (one domain, a tiny
random Llama backbone cut to one layer, a few SFT steps, every method): every rule runs,
outputs have the documented shapes and a second run has nothing to do. (Resuming SFT from a
checkpoint is tested in tests/unit/test_ttp_model.py; the packaged SmolLM2 backbone runs in
the sample workflow itself, which this test keeps cheap by not dequantising it.)"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from tests.fixtures.models import build_tiny_causal_lm

from .workflow import copy_workflow, snakemake

pytestmark = pytest.mark.integration

TINY = """
domains: [Musical_Instruments]
sample: {n_products: 60, n_users: 24, min_sentences_per_user: 12,
         search_log: {searches_per_user: 2}}
paper: {build_pdf: false}
ttp:
  split: {test_share: 0.4, max_test_per_label: 3}
  items: {fields: [title]}
  history: {n: 2}
  backbone: {model: tiny_lm, num_layers: 1}
  sft: {batch_size: 4, max_steps: 4, max_query_tokens: 96, max_item_tokens: 16,
        history_item_tokens: 12, checkpoint_every: 2}
  inference: {max_new_tokens: 4}
  dense: {epochs: 0.3, batch_size: 8}
  hyde: {max_new_tokens: 4}
  rl: {group_size: 2, prompts_per_step: 2, max_steps: 2, max_completion_tokens: 4,
       checkpoint_every: 1, reward: {length_limit: 3},
       variants: {full: {}, unfrozen_reward: {scorer: policy}}}
  methods: [bm25, dense, p_prf, hyde, history_aware, decoupled, ttp, ttp_rl,
            ttp_rl_no_intent_q, ttp_rl_unfrozen_reward]
  evaluation: {bootstrap_samples: 100}
  relevance_test: {methods: [bm25, dense, ttp, ttp_rl]}
  public:  # Table 5's path on the one domain there is, with the cheapest method
    sets: {Amazon: {fixture_domain: Musical_Instruments},
           KuaiSearch: {fixture_domain: Musical_Instruments}}
    methods: [bm25]
    max_test: 3
"""
TARGETS = [
    "results/ttp/table4.csv",
    "results/paper/generated/ttp_table4.tex",
    "results/paper/generated/ttp_sft_loss.pdf",
    "results/paper/generated/ttp_rl_curves.pdf",
    "results/ttp/table7.csv",
    "results/ttp/claims.md",
]


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def ttp_run(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("ttp_wf"))
    (work / "config" / "tiny_ttp.yaml").write_text(TINY)
    build_tiny_causal_lm(work / "tiny_lm", architecture="llama", layers=2)
    args = ("--profile", "profiles/local", "--configfile", "config/tiny_ttp.yaml")
    snakemake(work, *TARGETS, *args)
    return work, args


def test_stage_outputs(ttp_run):
    work, _ = ttp_run
    res = work / "results"
    log = _jsonl(res / "sample_world/Musical_Instruments/search_log.jsonl")
    assert len(log) == 48 and {r["label"] for r in log} == {"General", "Broad", "LongTail"}
    examples = _jsonl(res / "ttp/Musical_Instruments/examples.jsonl")
    test = [e for e in examples if e["split"] == "test"]
    assert 0 < len(test) <= 9 and all(len(e["selected_history"]) <= 2 for e in examples)
    teacher = json.loads((res / "ttp/Musical_Instruments/teacher.report.json").read_text())
    assert teacher["teacher"].startswith("history_attributes")
    train = json.loads((res / "ttp/sft/train.report.json").read_text())
    assert train["finished"] and train["steps"] == 4
    assert train["seed"] == 20251129  # ttp.sft.seed null: the workflow seed
    assert train["backbone"] == "tiny_lm (first 1 of 2 layers)"
    # The adapter's, the backbone's and the bi-encoders' weights are temporary: gone once
    # consumed (the adapter's config stays).
    assert (res / "ttp/sft/adapter/adapter_config.json").exists()
    assert not (res / "ttp/sft/adapter/adapter_model.safetensors").exists()
    assert (res / "ttp/backbone/config.json").exists()
    assert not (res / "ttp/backbone/model.safetensors").exists()
    assert not list((res / "ttp/dense").glob("*/model.safetensors"))
    for run in sorted((res / "ttp/Musical_Instruments/runs").glob("*.trec")):
        lines = run.read_text().splitlines()
        assert {line.split()[0] for line in lines} == {e["example_id"] for e in test}
    # Decoupled-Stage: a separate rewriter (token loss only, epoch chosen on validation by
    # the base bi-encoder) rewrote every example; its retriever trained on the rewrites and
    # the run retrieved with the test rewrites.
    rewriter = json.loads((res / "ttp/rewriter/train.report.json").read_text())
    assert rewriter["role"].startswith("rewriter") and rewriter["finished"]
    assert rewriter["settings"]["contrastive_weight"] == 0.0
    assert {
        h["contrastive_loss"] for h in json.loads((res / "ttp/rewriter/loss.json").read_text())
    } == {0.0}
    assert rewriter["selection"]["chosen"] in [
        c["epoch"] for c in rewriter["selection"]["candidates"]
    ]
    assert not (res / "ttp/rewriter/adapter/adapter_model.safetensors").exists()
    rw = json.loads((res / "ttp/Musical_Instruments/rewrites.json").read_text())
    assert set(rw["rewrites"]) == {e["example_id"] for e in examples}
    assert rw["per_split"] == dict(sorted(Counter(e["split"] for e in examples).items()))
    dec_ft = json.loads((res / "ttp/dense/decoupled.report.json").read_text())
    assert dec_ft["variant"] == "decoupled" and dec_ft["examples"] == sum(
        e["split"] == "train" for e in examples
    )
    dec = json.loads((res / "ttp/Musical_Instruments/runs/decoupled.info.json").read_text())
    assert dec["models"] == {"decoupled": "results/ttp/dense/decoupled"}
    assert {q: r["rewrite"] for q, r in dec["rewrites"].items()} == {
        e["example_id"]: rw["rewrites"][e["example_id"]]["rewrite"] or e["query"] for e in test
    }
    table = pd.read_csv(res / "ttp/table4.csv")
    assert list(table["Method"])[-2:] == ["TTP (SFT)", "TTP (SFT+RL)"]
    assert "Broad Recall@20" in table.columns and "Broad MRR@100 paper" in table.columns
    # GRPO: two variants trained (only those a configured method needs), both logged per
    # step; their adapters' weights are temporary like the SFT adapter's.
    # SFT keeps the epoch, GRPO's full variant the step, that is best on the validation
    # split; the other variants train as many steps as full kept.
    examples_by_split = {e["split"] for e in examples}
    assert "valid" in examples_by_split
    sel = train["selection"]
    assert sel["unit"] == "epoch" and sel["validation_examples"] > 0 and sel["candidates"]
    assert sel["chosen"] in [c["epoch"] for c in sel["candidates"]]
    full = json.loads((res / "ttp/rl/full.report.json").read_text())["selection"]
    assert [c["step"] for c in full["candidates"]] == [1, 2] and full["chosen"] in (1, 2)
    for variant in ("full", "unfrozen_reward"):
        report = json.loads((res / f"ttp/rl/{variant}.report.json").read_text())
        assert report["steps"] == 2 and report["rl_prompts"] >= 2
        log = json.loads((res / f"ttp/rl/{variant}/log.json").read_text())
        trained = 2 if variant == "full" else full["chosen"]
        assert [h["step"] for h in log] == list(range(1, trained + 1))
        assert report["selection"]["chosen"] == full["chosen"]
        assert {"rewards/format/mean", "rewards/retrieval/mean", "kl"} <= set(log[0])
        assert not (res / f"ttp/rl/{variant}/adapter/adapter_model.safetensors").exists()
    assert json.loads((res / "ttp/rl/unfrozen_reward.report.json").read_text())["scorer"] == (
        "policy"
    )
    assert not (res / "ttp/rl/no_margin_gain.report.json").exists()
    for method in ("ttp_rl", "ttp_rl_no_intent_q", "ttp_rl_unfrozen_reward"):
        assert (res / f"ttp/Musical_Instruments/runs/{method}.trec").read_text()
    no_q = json.loads(
        (res / "ttp/Musical_Instruments/runs/ttp_rl_no_intent_q.info.json").read_text()
    )
    # w/o Intent-Q reads the item encodings of the run with its adapter (the cache); hits
    # and misses are run facts, in the rule's log
    from personalir.common.runfacts import run_facts

    facts = run_facts(res / "logs")
    runs = {Path(k).name: v for k, v in facts.items() if "/runs/" in k}
    assert no_q["encoding_cache"] == {"recomputed": 0}
    assert runs["ttp_rl_no_intent_q.info.json"]["encoding_cache.hits_this_run"] == 1
    assert runs["ttp_rl_no_intent_q.info.json"]["encoding_cache.misses_this_run"] == 0
    assert runs["ttp_rl.info.json"]["encoding_cache.misses_this_run"] == 1
    # w/o Intent-Q: no generation, the query itself in the rewrite's place
    queries = {e["example_id"]: e["query"] for e in test}
    for qid, r in no_q["rewrites"].items():
        assert r["rewrite"] == queries[qid]
        assert r["generated"] == f"<think>{queries[qid]}</think><embed>"
    t7 = pd.read_csv(res / "ttp/table7.csv")
    assert set(t7["method"]) == {"ttp", "ttp_rl", "ttp_rl_unfrozen_reward"}
    claims = (res / "ttp/claims.md").read_text()
    assert "not applicable" in claims  # e.g. no_margin_gain is not configured
    tex = (work / "results/paper/generated/ttp_table4.tex").read_text()
    assert r"\begin{tabular}" in tex and "History-Aware" in tex
    assert (work / "results/paper/generated/ttp_sft_loss.pdf").read_bytes()[:5] == b"%PDF-"
    # the paper's claims, Table 4's among them, each held / not held / not applicable
    verdicts = {
        c["id"]: c["status"] for c in json.loads((res / "ttp/claims/claims.json").read_text())
    }
    assert {"history_helps", "rl_helps", "intent_q_helps", "both_reward_terms_help"} <= set(
        verdicts
    )
    assert set(verdicts.values()) <= {"held", "not held", "not applicable"}
    assert verdicts["both_reward_terms_help"] == "not applicable"
    assert not (res / "ttp/acceptance.txt").exists()


def test_second_run_has_nothing_to_do(ttp_run):
    work, args = ttp_run
    proc = snakemake(work, *TARGETS, "-n", *args)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_an_sft_seed_retrains_only_from_sft_on(ttp_run):
    """``ttp.sft.seed`` (a seed study) reruns SFT and what reads the model, nothing before."""
    work, args = ttp_run
    (work / "config" / "sft_seed.yaml").write_text("ttp:\n  sft:\n    seed: 5\n")
    proc = snakemake(work, *TARGETS, "-n", *args, "config/sft_seed.yaml")
    block = (proc.stdout + proc.stderr).split("Job stats:")[1].split("total")[0]
    jobs = {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+\s*$", block, re.MULTILINE)}
    # (the backbone's weights are temporary, so its rule runs again to feed SFT)
    assert {"ttp_sft", "ttp_evaluate"} <= jobs
    assert {"sample_world", "ttp_examples", "ttp_teacher"}.isdisjoint(jobs)
