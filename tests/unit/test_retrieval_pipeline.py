"""The stage end to end in-process on the small world: queries (ours and released format),
a built-in run, a class-path retriever, an imported run file, metrics, summary, tables,
figures, and the bring-your-own command."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from personalir.queries.benchmark_format import (
    BenchmarkFormatError,
    write_benchmark,
    write_released,
)
from personalir.retrieval.base import RunSettings
from personalir.retrieval.evaluate import main as evaluate_main
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.pipeline import evaluate_runs, import_run, prepare_queries, run_retriever
from personalir.retrieval.runio import RunFormatError
from personalir.retrieval.summary import SummarySettings, read_summary, significance, summarize
from personalir.retrieval.tables import write_tables
from tests.fixtures.queries import toy_benchmark_from_products

OVERLAP = "personalir.retrieval.examples:TermOverlapRetriever"


@pytest.fixture(scope="module")
def stage(small_world, tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieval")
    d = small_world["domain"]
    records = toy_benchmark_from_products(str(small_world["products"]), d, seed=3, n_products=30)
    write_benchmark(root / "benchmark.jsonl", records)
    paths = {
        "root": root,
        "domain": d,
        "corpus": str(small_world["products"]),
        "queries": str(root / d / "queries.jsonl"),
    }
    prepare_queries(
        domain=d,
        source="benchmark",
        source_path=root / "benchmark.jsonl",
        corpus_path=paths["corpus"],
        unknown_products="error",
        out_path=paths["queries"],
        report_path=root / d / "queries.report.json",
    )
    settings = RunSettings(threads=1, seed=11)
    for name, entry in (("bm25", {"type": "bm25"}), ("overlap", {"class": OVERLAP})):
        run_retriever(
            name=name,
            entry=entry,
            settings=settings,
            depth=200,
            domains=[d],
            corpus_paths=[paths["corpus"]],
            query_paths=[paths["queries"]],
            run_paths=[str(root / d / f"{name}.run")],
            meta_path=root / "meta" / f"{name}.json",
        )
    # A user's run file made elsewhere: here, BM25's run under another tag.
    user_run = root / "user.trec"
    user_run.write_text((root / d / "bm25.run").read_text().replace(" bm25\n", " mine\n"))
    import_run(
        name="mine",
        entry={"path": str(user_run)},
        domains=[d],
        source_paths=[str(user_run)],
        corpus_paths=[paths["corpus"]],
        query_paths=[paths["queries"]],
        run_paths=[str(root / d / "mine.run")],
        meta_path=root / "meta" / "mine.json",
    )
    names = ["bm25", "overlap", "mine"]
    frames = {}
    for name in names:
        (frame,) = evaluate_runs(
            name=name,
            domains=[d],
            corpus_paths=[paths["corpus"]],
            query_paths=[paths["queries"]],
            run_paths=[str(root / d / f"{name}.run")],
            meta_path=root / "meta" / f"{name}.json",
            settings=MetricSettings(),
            out_paths=[str(root / d / f"{name}.metrics.parquet")],
        )
        frames[(name, d)] = frame
    stats = SummarySettings(samples=200, permutations=500, seed=11)
    paths.update(
        records=records,
        frames=frames,
        names=names,
        summary=summarize(frames, names, [d], MetricSettings(), stats),
        tests=significance(frames, names, [d], MetricSettings(), stats),
    )
    return paths


def test_runs_reach_depth_and_are_tagged(stage):
    d, root = stage["domain"], stage["root"]
    lines = (root / d / "overlap.run").read_text().splitlines()
    # Depth 200, capped by the small world's 80 documents: every document for every query.
    assert len(lines) == 80 * len(stage["records"])
    meta = json.loads((root / "meta" / "overlap.json").read_text())
    assert meta["family"] == "lexical" and meta["domains"][d]["evaluated_query_ids"] is None


def test_imported_run_evaluates_like_the_original(stage):
    bm25, mine = (
        stage["frames"][("bm25", stage["domain"])],
        stage["frames"][("mine", stage["domain"])],
    )
    cols = ["rank", "rr", "hit@10", "nDCG@10"]
    pd.testing.assert_frame_equal(bm25[cols], mine[cols])
    same = stage["tests"].query("retriever_a == 'bm25' and retriever_b == 'mine'")
    assert (same["difference"] == 0).all() and (same["p_value"] == 1).all()


def test_summary_has_every_metric(stage):
    summary = stage["summary"]
    expected = set(MetricSettings().all_metrics())
    assert set(summary["metric"]) == expected
    # the tests cover the PQB metrics and the standard measures on all queries
    settings = MetricSettings()
    tested = set(settings.pqb_metrics()) | set(settings.standard)
    assert set(stage["tests"]["metric"]) == tested and "R@10[clean]" in expected - tested
    flip = summary.query("retriever == 'bm25' and metric == 'Flip@10'").iloc[0]
    assert flip["products"] == 30 and flip["ci_low"] <= flip["value"] <= flip["ci_high"]


def test_tables_and_figures(stage, tmp_path):
    from personalir.retrieval.figures import deg_ci, flip_by_depth

    keys = ("flip_rrstd", "degradation", "effectiveness")
    csv = {k: str(tmp_path / f"{k}.csv") for k in keys}
    tex = {k: str(tmp_path / f"{k}.tex") for k in keys}
    write_tables(
        stage["summary"],
        stage["names"],
        [stage["domain"]],
        MetricSettings(),
        label="unit",
        csv_paths=csv,
        tex_paths=tex,
    )
    table = pd.read_csv(csv["flip_rrstd"])
    assert list(table["retriever"]) == stage["names"]
    assert {"Flip@1", "Flip@1 ci_low", "RRstd@200", "pairs"} <= set(table.columns)
    # The table shows the paper's pair share; the per-product variant is only in the summary.
    assert not any(c.startswith("FlipProd") for c in table.columns)
    assert {"Flip@1", "FlipProd@1"} <= set(stage["summary"]["metric"])
    caption = (tmp_path / "flip_rrstd.tex").read_text()
    assert "the paper's" in caption and "(FlipProd@K), is in the summary CSV" in caption
    text = (tmp_path / "effectiveness.tex").read_text()
    assert r"\begin{tabular}" in text and "Configuration: unit." in text
    assert r"\textbf{" in text or "*" not in text
    # effectiveness: a tidy CSV, one row per retriever and query subset; in LaTeX one
    # column group per subset, the caption saying which queries each holds
    eff = pd.read_csv(csv["effectiveness"])
    assert list(eff["subset"]) == ["clean", "error", "all"] * len(stage["names"])
    assert list(eff["retriever"]) == [n for n in stage["names"] for _ in range(3)]
    assert {"queries", "R@10", "R@10 ci_low", "nDCG@10"} <= set(eff.columns)
    by = eff[eff["retriever"] == "bm25"].set_index("subset")
    assert by.loc["clean", "queries"] + by.loc["error", "queries"] == by.loc["all", "queries"]
    summary = stage["summary"].query("retriever == 'bm25'").set_index("metric")["value"]
    assert by.loc["error", "R@10"] == pytest.approx(summary["R@10[error]"], abs=1e-6)
    assert by.loc["all", "R@10"] == pytest.approx(summary["R@10"], abs=1e-6)
    for words in (r"\multicolumn{6}{c}{Clean}", r"\multicolumn{6}{c}{Error}", "{All}"):
        assert words in text
    assert "Error, the error query of each writing-error pair" in text
    assert "number of queries (n)" in text and " & n=" in text
    # 18 value columns: one part per subset, each at its natural size within the line
    assert text.count(r"\begin{table}") == 3 and r"\resizebox" not in text
    assert r"\label{tab:retrieval-effectiveness-a}" not in text  # parts named by subset
    assert r"\label{tab:retrieval-effectiveness-error}" in text
    for fn, name in ((flip_by_depth, "flip.pdf"), (deg_ci, "deg.pdf")):
        fn(
            stage["summary"],
            stage["names"],
            [stage["domain"]],
            MetricSettings(),
            str(tmp_path / name),
        )
        first = (tmp_path / name).read_bytes()
        fn(
            stage["summary"],
            stage["names"],
            [stage["domain"]],
            MetricSettings(),
            str(tmp_path / name),
        )
        assert first[:5] == b"%PDF-" and (tmp_path / name).read_bytes() == first  # deterministic


def test_released_format_and_unknown_products(stage, tmp_path):
    d = stage["domain"]
    write_released(tmp_path / "released.json", stage["records"])
    report = prepare_queries(
        domain=d,
        source="released",
        source_path=tmp_path / "released.json",
        corpus_path=stage["corpus"],
        unknown_products="error",
        out_path=tmp_path / "q.jsonl",
        report_path=tmp_path / "r.json",
    )
    assert report["queries_by_kind"] == {"syntactic": 60, "writing_error": 60}
    bad = [
        dict(r, product="B_NOT_THERE") if r["pair_id"].endswith("syn") and i < 2 else r
        for i, r in enumerate(stage["records"])
    ]
    write_benchmark(tmp_path / "bad.jsonl", bad)
    with pytest.raises(BenchmarkFormatError, match="not in the corpus .*B_NOT_THERE"):
        prepare_queries(
            domain=d,
            source="benchmark",
            source_path=tmp_path / "bad.jsonl",
            corpus_path=stage["corpus"],
            unknown_products="error",
            out_path=tmp_path / "q2.jsonl",
            report_path=tmp_path / "r2.json",
        )
    report = prepare_queries(
        domain=d,
        source="benchmark",
        source_path=tmp_path / "bad.jsonl",
        corpus_path=stage["corpus"],
        unknown_products="drop",
        out_path=tmp_path / "q3.jsonl",
        report_path=tmp_path / "r3.json",
    )
    assert report["queries_dropped"] == 2


def test_bad_user_run_names_the_line(stage, tmp_path):
    d, root = stage["domain"], stage["root"]
    lines = (root / d / "bm25.run").read_text().splitlines()
    qid, q0, doc, rank, score, tag = lines[4].split()
    lines[4] = " ".join([qid, q0, "NO_SUCH_DOC", rank, score, tag])
    bad = tmp_path / "bad.run"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(RunFormatError, match=r"bad.run:5: unknown document id 'NO_SUCH_DOC'"):
        import_run(
            name="bad",
            entry={"path": str(bad)},
            domains=[d],
            source_paths=[str(bad)],
            corpus_paths=[stage["corpus"]],
            query_paths=[stage["queries"]],
            run_paths=[str(tmp_path / "out.run")],
            meta_path=tmp_path / "m.json",
        )
    assert not (tmp_path / "out.run").exists()


def test_bring_your_own_command(stage, tmp_path):
    d, root = stage["domain"], stage["root"]
    shutil.copy(root / d / "bm25.run", tmp_path / f"{d}.trec")
    out = tmp_path / "out"
    code = evaluate_main(
        [
            "--domains",
            d,
            "--corpus",
            stage["corpus"],
            "--queries",
            str(root / "benchmark.jsonl"),
            "--catalog",
            "bm25",
            "--run",
            f"mine={tmp_path}/{{domain}}.trec",
            "--class",
            f"overlap={OVERLAP}",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    summary = read_summary(out / "summary.csv")
    assert list(dict.fromkeys(summary["retriever"])) == ["bm25", "mine", "overlap"]
    for name in (
        "table_flip_rrstd.tex",
        "table_degradation.csv",
        "retrieval_deg_ci.pdf",
        "significance.csv",
        f"{d}/overlap.metrics.parquet",
    ):
        assert (out / name).exists(), name
