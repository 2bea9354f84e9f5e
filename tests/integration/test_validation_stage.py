"""The validation stage of the real workflow against the real local judge server.

Upstream artifacts (a small benchmark, the users' sentences and historical edits) are written
here in their documented layouts, so only the five validation rules run (`--allowed-rules`).
Checked: both tables and the exports are made; a rerun of the judge rule makes no call (the
answer cache); killing the server in the middle of the judge rule fails the run with a message
naming the endpoint, and the rerun asks only the questions that have no cached answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.io import write_json, write_parquet
from personalir.common.provenance import provenance_record

from .workflow import copy_workflow, snakemake

pytestmark = pytest.mark.integration

DOMAIN = "Musical_Instruments"
# The judge's limits are generous: a busy machine answers slowly, not wrongly (the kill test
# below must be failed by the kill, never by a timeout).
OVERLAY = f"""
domains: [{DOMAIN}]
paper: {{build_pdf: false}}
validation:
  sample: {{size: 10, history_sentences: 3}}
  judge: {{max_retries: 1, timeout_s: 1800, startup_timeout: 3600}}
  human: {{source: simulated}}
  agreement: {{bootstrap: 50}}
ttp:
  public:
    sets: {{Amazon: {{fixture_domain: {DOMAIN}}}, KuaiSearch: {{fixture_domain: {DOMAIN}}}}}
"""
RULES = [
    "validation_items",
    "validation_judge",
    "validation_export",
    "validation_human",
    "validation_tables",
]
TARGETS = [
    "results/validation/ratings.csv",
    "results/validation/agreement.csv",
    "results/paper/generated/validation_ratings.tex",
    "results/paper/generated/validation_agreement.tex",
    "results/paper/generated/validation_distributions.pdf",
    "results/validation/annotation/label_studio_tasks.json",
    "results/validation/annotation/annotator_guide.md",
]


def _upstream(results: Path) -> None:
    """A benchmark of 4 syntactic and 8 writing-error pairs with its users' data."""
    rows, sentences, edits = [], [], []
    users = [f"U{i}" for i in range(8)]
    for p in range(4):
        a, b = users[2 * p], users[2 * p + 1]
        pid = f"{DOMAIN}:P{p}:syn0"
        texts = {
            "a": f"wooden ukulele stand for kids in blue, model {p}",
            "b": f"looking for a blue kids ukulele stand made of wood ({p})",
        }
        for role, user in (("a", a), ("b", b)):
            rows.append(
                {
                    "query_id": f"{pid}:{role}",
                    "domain": DOMAIN,
                    "product": f"P{p}",
                    "user_id": user,
                    "pair_id": pid,
                    "kind": "syntactic",
                    "role": role,
                    "text": texts[role],
                    "core_terms": [],
                    "provenance": {"backend": "grammar"},
                }
            )
        for e, user in enumerate((a, b)):
            eid = f"{DOMAIN}:P{p}:err0{'ab'[e]}"
            clean = texts["ab"[e]]
            error = clean.replace("ukulele", "ukelele").replace("blue", "bleu")
            for role, text in (("clean", clean), ("error", error)):
                rows.append(
                    {
                        "query_id": f"{eid}:{role}",
                        "domain": DOMAIN,
                        "product": f"P{p}",
                        "user_id": user,
                        "pair_id": eid,
                        "kind": "writing_error",
                        "role": role,
                        "text": text,
                        "core_terms": [],
                        "provenance": {"edits": [{"mechanism": "swap"}]},
                    }
                )
    for user in users:
        for i in range(5):
            sentences.append(
                {
                    "sentence_id": f"{user}:{i}",
                    "user_id": user,
                    "position": i,
                    "text": f"Sentence {i} that {user} wrote about the strings.",
                }
            )
        edits.append(
            {
                "sentence_id": f"{user}:0",
                "user_id": user,
                "position": 0,
                "edit_index": 0,
                "original": "teh",
                "corrected": "the",
                "mechanism": "swap",
            }
        )
    bench = results / "queries" / DOMAIN / "benchmark.jsonl"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import pyarrow as pa

    write_parquet(
        results / "data" / DOMAIN / "user_sentences.parquet", pa.Table.from_pylist(sentences)
    )
    write_parquet(results / "errors" / DOMAIN / "edits.parquet", pa.Table.from_pylist(edits))
    # Each folder's provenance record, as the workflow writes it, so the pre-run integrity
    # guard can verify the files the validation rules read.
    made = {
        "queries": ("benchmark.jsonl", "queries_select"),
        "data": ("user_sentences.parquet", "user_sentences"),
        "errors": ("edits.parquet", "errors_edits"),
    }
    for stage, (name, rule) in made.items():
        folder = results / stage / DOMAIN
        record = provenance_record(
            folder, {name: rule}, config_hash="test", label="test", models={}
        )
        write_json(folder / "provenance.json", record)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("validation_wf"))
    (work / "config" / "tiny_validation.yaml").write_text(OVERLAY)
    _upstream(work / "results")
    shared = REPO_ROOT / "results" / "model_cache"
    if shared.is_dir():  # reuse the dequantised SmolLM2 of a workflow run (saves ~25 s)
        (work / "results" / "model_cache").symlink_to(shared)
    return work


def _args(*extra):
    return (
        "--profile",
        "profiles/local",
        "--configfile",
        "config/tiny_validation.yaml",
        "--allowed-rules",
        *RULES,
        *extra,
    )


def _report(work):
    """The judge's report with the run facts its rule logged (calls, cache hits, tokens)."""
    from personalir.common.runfacts import run_facts

    path = "results/validation/judge.report.json"
    report = json.loads((work / path).read_text())
    facts = run_facts(work / "results" / "logs")[path]
    return {**report, **{k.removesuffix("_this_run"): v for k, v in facts.items()}}


def test_stage_makes_both_tables_and_a_rerun_makes_no_call(workdir):
    snakemake(workdir, *TARGETS, *_args())
    ratings = pd.read_csv(workdir / "results/validation/ratings.csv")
    assert list(ratings["measure"]) == [
        "Naturalness (1-5)",
        "Syntactic quality (1-5)",
        "Syntactic attribution",
        "No-preference rate",
        "Error strict pass",
        "Error acceptable",
    ]
    assert ratings["paper_llm"].notna().all()  # the paper's values beside ours
    agreement = pd.read_csv(workdir / "results/validation/agreement.csv")
    assert len(agreement) == 4
    report = _report(workdir)
    assert report["questions"] == 30 and report["calls"] >= 30
    assert report["judge"].startswith("SmolLM2-135M-Instruct")
    tex = (workdir / "results/paper/generated/validation_ratings.tex").read_text()
    assert "SmolLM2" in tex and "simulated annotators" in tex
    first = (workdir / "results/validation/judgements.csv").read_bytes()
    # A forced rerun of the judge rule: every answer from the cache, the same labels.
    snakemake(workdir, *TARGETS, *_args("--forcerun", "validation_judge"))
    again = _report(workdir)
    assert again["calls"] == 0 and again["cache_hits"] >= 30
    assert (workdir / "results/validation/judgements.csv").read_bytes() == first


def _server_pid(work: Path) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if b"personalir.validation.server" in cmd and Path(cwd) == work:
            return int(entry.name)
    return None


def test_killing_the_server_fails_clearly_and_the_rerun_resumes(workdir):
    # A cold cache (and another seed, so no earlier answer is reused).
    (workdir / "results" / "judge_cache" / "judge.sqlite").unlink(missing_ok=True)
    overlay = workdir / "config" / "tiny_validation.yaml"
    overlay.write_text(OVERLAY + "seed: 99\n")
    log = workdir / "results/logs/validation/judge_server.log"
    before = log.read_text().count("/v1/chat/completions") if log.exists() else 0
    exe = Path(sys.executable).with_name("snakemake")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen(
        [str(exe), "results/validation/judgements.csv", *_args()],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # The kill waits for an event (the server has answered four questions), however long the
    # machine takes to get there; pytest-timeout is the backstop for a hang.
    killed = False
    while proc.poll() is None:
        served = log.read_text().count("/v1/chat/completions") if log.exists() else 0
        pid = _server_pid(workdir)
        if pid and served - before >= 4:
            os.kill(pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.2)
    out, _ = proc.communicate()
    assert killed, "the server never answered four questions:\n" + out[-3000:]
    assert proc.returncode != 0
    judge_log = (workdir / "results/logs/validation/judge.log").read_text()
    assert "127.0.0.1" in judge_log and "unreachable" in judge_log
    assert "rerun resumes" in judge_log
    # The rerun starts a new server and asks only what the cache lacks.
    snakemake(workdir, "results/validation/judgements.csv", *_args())
    report = _report(workdir)
    assert report["cache_hits"] >= 4
    assert report["calls"] + report["cache_hits"] >= report["questions"]
    assert report["calls"] < report["questions"]
    assert report["answered"] + sum(report["failed"].values()) == report["questions"]
