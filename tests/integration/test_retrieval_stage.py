"""The retrieval stage of the real workflow on a small sample (two domains, 60 products).

Queries come in the released PQB format (stand-in queries written by the test, as the query
stage would); the retrievers are BM25 (built in), a class given by path, and a run file made
"elsewhere". (Neural retrievers are exercised in-process by the unit tests: importing torch in
a workflow job costs more than the rest of this test.)
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from personalir.queries.benchmark_format import from_released, write_released
from personalir.retrieval.base import QueryText
from personalir.retrieval.corpus import load_corpus
from personalir.retrieval.lexical import BM25Retriever
from personalir.retrieval.runio import write_run
from tests.fixtures.queries import toy_benchmark_from_products

from .workflow import copy_workflow, snakemake

pytestmark = pytest.mark.integration

DOMAINS = ["Baby_Products", "Video_Games"]
NAMES = ["bm25", "overlap", "mine"]
TARGETS = [
    "results/retrieval/table_flip_rrstd.csv",
    "results/retrieval/table_degradation.csv",
    "results/retrieval/table_effectiveness.csv",
    "results/retrieval/significance.csv",
    "results/paper/generated/retrieval_flip_rrstd.tex",
    "results/paper/generated/retrieval_degradation.tex",
    "results/paper/generated/retrieval_flip_by_depth.pdf",
    "results/paper/generated/retrieval_deg_ci.pdf",
]


def _config() -> dict:
    return {
        "domains": DOMAINS,
        "threads": 1,
        "sample": {"n_products": 60, "n_users": 20, "min_sentences_per_user": 5},
        "retrieval": {
            "enabled": True,
            "queries": {"source": "released", "released_path": "released/{domain}.json"},
            "use": NAMES,
            "retrievers": {
                "overlap": {"class": "personalir.retrieval.examples:TermOverlapRetriever"},
            },
            "run_files": {"mine": {"path": "user_runs/{domain}.run", "label": "My run"}},
            "bootstrap": {"samples": 200},
            "significance": {"permutations": 500},
        },
        "ttp": {"enabled": False},  # its default domain is not among these two
    }


@pytest.fixture(scope="module")
def stage_run(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("wf"))
    (work / "config" / "test_retrieval.yaml").write_text(yaml.safe_dump(_config()))
    # Targets go first: --configfile takes every following word as a file.
    args = ["--profile", "profiles/local", "--configfile", "config/test_retrieval.yaml"]
    products = [f"results/data/{d}/products.parquet" for d in DOMAINS]
    snakemake(work, *products, *args)
    for d in DOMAINS:
        path = work / f"results/data/{d}/products.parquet"
        records = toy_benchmark_from_products(str(path), d, seed=2, n_products=25)
        write_released(work / f"released/{d}.json", records)
        # "Elsewhere": a user's own BM25 variant (stemmed) ranks the queries the stage will
        # read from the released file, and writes a TREC run file.
        queries = [
            QueryText(r["query_id"], r["text"])
            for r in from_released(work / f"released/{d}.json", d)
        ]
        bm25 = BM25Retriever(params={"stemmer": "english"})
        bm25.index(load_corpus(path))
        write_run(work / f"user_runs/{d}.run", bm25.rank(queries, 200), tag="mine")
    proc = snakemake(work, *TARGETS, *args)
    return {"work": work, "args": args, "log": proc.stderr}


def test_tables_figures_and_metrics(stage_run):
    work = stage_run["work"]
    table = pd.read_csv(work / "results/retrieval/table_flip_rrstd.csv")
    assert list(table["domain"].unique()) == [*DOMAINS, "Average"]
    assert list(table.loc[table["domain"] == "Average", "retriever"]) == NAMES
    assert (table["pairs"] > 0).all()
    deg = pd.read_csv(work / "results/retrieval/table_degradation.csv")
    assert {"Deg@1", "Deg@20", "MRRdeg@200", "MRRdeg@200 ci_low"} <= set(deg.columns)
    tex = (work / "results/paper/generated/retrieval_flip_rrstd.tex").read_text()
    assert "My run" in tex and r"\textbf{" in tex
    for name in ("retrieval_flip_by_depth.pdf", "retrieval_deg_ci.pdf"):
        assert (work / "results/paper/generated" / name).read_bytes()[:5] == b"%PDF-"
    for d in DOMAINS:
        for name in NAMES:
            frame = pd.read_parquet(work / f"results/retrieval/{d}/{name}.metrics.parquet")
            assert len(frame) > 0 and frame["retriever"].eq(name).all()
    tests = pd.read_csv(work / "results/retrieval/significance.csv")
    assert len(tests[tests["domain"] == "Average"]["retriever_a"].unique()) == len(NAMES) - 1


def test_second_run_has_nothing_to_do(stage_run):
    proc = snakemake(stage_run["work"], *TARGETS, "-n", *stage_run["args"])
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_bad_run_file_stops_the_workflow_naming_the_line(stage_run):
    work = stage_run["work"]
    path = work / "user_runs/Video_Games.run"
    lines = path.read_text().splitlines()
    qid, q0, doc, _, score, tag = lines[2].split()
    lines[2] = " ".join([qid, q0, doc, "2", score, tag])  # rank 2 again for the same query
    path.write_text("\n".join(lines) + "\n")
    proc = snakemake(work, *TARGETS, *stage_run["args"], check=False)
    assert proc.returncode != 0
    log = (work / "results/logs/retrieval/import_mine.log").read_text()
    assert "user_runs/Video_Games.run:3: duplicate rank 2" in log
