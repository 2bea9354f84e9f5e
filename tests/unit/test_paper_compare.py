"""The PQB paper's tables beside ours (personalir.report.paper_compare) and the documents'
contents and front matter (personalir.report.contents), on hand-built tables."""

from __future__ import annotations

import csv
import re

import pytest
import yaml

from personalir.common.config import REPO_ROOT
from personalir.common.io import sha256_file
from personalir.report import claims as cl
from personalir.report import contents as ct
from personalir.report import paper_compare as pc
from personalir.report.paper import paper_inputs

from .test_claims import config, write, write_retrieval


def paper() -> dict:
    return yaml.safe_load(cl.PQB_YAML.read_text(encoding="utf-8"))


def by_key(tables):
    return {t.key: t for t in tables}


def test_specs_cover_the_paper_rows():
    data = paper()
    assert set(pc.MODEL_ROWS) == set(data["attribution"]["rows"])
    assert set(pc.SAMPLER_ROWS) == set(data["error_sampling"]["rows"])
    assert set(pc.DATASET_COLUMNS) == set(data["dataset"]["columns"])
    assert set(pc.SPECS) <= set(data)


def test_retrieval_rows_in_the_papers_unit(tmp_path):
    write_retrieval(tmp_path)
    flip = by_key(pc.compare_all(tmp_path, config(), cl.PQB_YAML))["flip_rrstd"]
    rows = {p: (o, ours) for p, o, _, ours in flip.rows}
    # test_claims' FLIP: BM25 Flip@1 0.10 -> 10 points; RRstd 0.07 -> 7 (the Mean RRstd)
    label, ours = rows["BM25"]
    assert label == "BM25" and ours["Flip@1"].v == pytest.approx(10.0)
    assert ours["Mean RRstd"].v == pytest.approx(7.0)
    assert ours["Mean RRstd"].lo == pytest.approx(6.0)
    # The table has no Flip@5/10: the nearest K stands in, and the note says which
    assert "Flip@5 = our Flip@20" in flip.note
    assert rows["Qwen3-Reranker-8B"][0] == "SmolLM2 yes/no"
    paper_bm25 = next(v for p, _, v, _ in flip.rows if p == "BM25")
    assert paper_bm25["Flip@1"] == paper()["flip_rrstd"]["rows"]["BM25"]["Flip@1"]


def test_missing_stand_in_and_missing_table_show_dashes(tmp_path):
    write_retrieval(tmp_path, names=["bm25", "splade"])
    cfg = config(["bm25", "splade"])
    tables = by_key(pc.compare_all(tmp_path, cfg, cl.PQB_YAML))
    flip = tables["flip_rrstd"]
    assert len(flip.rows) == len(paper()["flip_rrstd"]["rows"])  # nothing left out
    missing = [p for p, o, _, ours in flip.rows if not o]
    assert "ColBERTv2" in missing and "no counterpart here for" in flip.note
    # No attribution table under the tree: every paper row, ours absent, and why
    attr = tables["attribution"]
    assert all(not o and not ours for _, o, _, ours in attr.rows)
    assert attr.note.startswith("ours absent: no syntax/attribution.csv")
    tex = pc.latex(attr, "x", synthetic=False)
    assert tex.count("--") >= 3 * len(attr.rows) and "synthetic" not in tex


def test_attribution_sampling_and_dataset(tmp_path):
    attr = [
        {
            "domain": d,
            "model": m,
            "label": m.title(),
            "balanced": b,
            "auroc": 0.6,
            "full_profile": 0.7,
        }
        for d, b in (("A", 0.60), ("B", 0.70))
        for m in cl.PAPER_MODELS
    ]
    write(tmp_path, "syntax/attribution.csv", attr)
    write(
        tmp_path,
        "errors/sampling_eval.csv",
        [
            {"domain": "Average", "sampler": s, "top1": 0.05, "mrr": 0.2, "single_query_top1": 0.04}
            for s in cl.PAPER_SAMPLERS
        ],
    )
    write(
        tmp_path,
        "queries/datasheet.csv",
        [
            {
                "Domain": "Baby Products",
                "Syntactic": 10,
                "Writing-error": 8,
                "Total queries": 18,
                "User profiles": 5,
                "Sentences": 250,
            },
        ],
    )
    tables = by_key(pc.compare_all(tmp_path, {}, cl.PQB_YAML))
    row = next(r for r in tables["attribution"].rows if r[0] == "k-Nearest Neighbor")
    # The two domains' mean (no Average row), balanced in percent, AUROC a fraction
    assert row[3]["Balanced Attr."].v == pytest.approx(65.0)
    assert row[3]["AUROC"].v == pytest.approx(0.6)
    assert "the mean of 2 domains" in tables["attribution"].note
    sampling = tables["error_sampling"].rows
    assert sampling[-1][1] == "personalised" and sampling[-1][3]["Top-1"].v == pytest.approx(5)
    dataset = {p: ours for p, _, _, ours in tables["dataset"].rows}
    assert dataset["Baby_Products"]["total"].v == 18 and dataset["Video_Games"] == {}


def test_outputs_csv_and_latex(tmp_path):
    write_retrieval(tmp_path)
    tables = pc.compare_all(tmp_path, config(), cl.PQB_YAML)
    tex = {t.key: tmp_path / f"{t.key}.tex" for t in tables}
    pc.write_outputs(tables, tmp_path / "c.csv", tex, "sample", synthetic=True)
    rows = list(csv.DictReader((tmp_path / "c.csv").read_text(encoding="utf-8").splitlines()))
    assert tuple(rows[0]) == pc.CSV_COLUMNS
    bm25 = next(r for r in rows if r["paper_row"] == "BM25" and r["measure"] == "Flip@1")
    assert float(bm25["ours"]) == pytest.approx(10.0) and bm25["unit"] == "percent"
    assert all(r["ours"] == "" for r in rows if r["table"] == "attribution")
    text = tex["flip_rrstd"].read_text(encoding="utf-8")
    assert r"\label{tab:pqb-paper-flip-rrstd}" in text and "synthetic" in text
    # two header rows and one per paper row (a name of ours below the paper's in its cell)
    rows_ = [line for line in text.splitlines() if line.endswith(r" \\")]
    assert len(rows_) == len(paper()["flip_rrstd"]["rows"]) + 2
    assert r"ColBERTv2\\\footnotesize\emph{MaxSim}" in text and "\nBM25 & " in text
    for name in pc.FIGURES:
        pc.figure(tables, tmp_path / f"{name}.pdf", label="sample", name=name)
        assert (tmp_path / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(KeyError, match="no paper table 'nope'"):
        pc.write_outputs(tables, tmp_path / "d.csv", {"nope": tmp_path / "x"}, "s", synthetic=False)


# --------------------------------------------------------------------------- contents
def test_contents_lists_every_item_with_a_reference_or_a_reason():
    for doc in ct.DOCUMENTS:
        tex = ct.contents_tex(doc)
        for item in ct.items(doc):
            if item.label:
                assert rf"\ref{{{item.label}}}" in tex
            else:
                assert item.reason and f"absent: {item.reason}" in tex
    assert "Table 9" in ct.contents_tex("ttp")
    with pytest.raises(KeyError, match="unknown document"):
        ct.items("other")


@pytest.mark.parametrize("doc", ct.DOCUMENTS)
def test_every_present_item_is_labelled_in_its_manuscript_or_generated_inputs(doc):
    """Each label the contents refer to is defined by the manuscript or by a table it
    inputs (the generated tables' labels are fixed in their modules)."""
    root = REPO_ROOT
    text = (root / "paper" / doc / "main.tex").read_text(encoding="utf-8")
    inputs = [p.split("/")[-1] for p in paper_inputs(root / "paper" / doc / "main.tex", "g")]
    for item in ct.items(doc):
        if not item.label:
            continue
        stem = item.label.split(":")[1].replace("-", "_")
        assert rf"\label{{{item.label}}}" in text or any(stem in n for n in inputs), item
    # TTP carries the paper's numbers: each numbered item is preceded by its macro
    if doc == "ttp":
        for item in ct.items(doc):
            m = re.fullmatch(r"(Table|Figure) (\d+)", item.paper)
            if m and item.label:
                assert rf"\Paper{m[1]}{{{m[2]}}}" in text, item


def test_front_matter_names_configuration_commit_and_fingerprints(tmp_path):
    raw = tmp_path / "r.jsonl"
    raw.write_text("x\n")
    a, b = tmp_path / "a.tex", tmp_path / "b.tex"
    a.write_text("A")
    b.write_text("B")
    commit = ct.git_commit(tmp_path)
    assert commit.startswith("unknown")  # a folder that is no git checkout
    tex = ct.front_matter_tex(
        label="sample",
        config_sha256="f" * 64,
        config_files=["config/config.yaml"],
        commit=commit,
        data={"D/reviews": raw},
        inputs=[a, b],
        synthetic=True,
    )
    assert sha256_file(raw)[:32] in tex and "synthetic" in tex and "D/reviews" in tex
    assert ct.inputs_digest([a, b]) == ct.inputs_digest([b, a])
    b.write_text("B2")
    assert ct.inputs_digest([a, b])[:32] not in tex
    assert "(2 files)" in tex and "ffffffffffffffff" in tex


def test_git_commit_of_this_checkout():
    commit = ct.git_commit(REPO_ROOT)
    assert re.match(r"[0-9a-f]{40}|unknown", commit)


def test_table4_figure_draws_the_sets_it_has(tmp_path):
    from personalir.ttp.paper.table4_figure import plot_file

    table = tmp_path / "table4.csv"
    table.write_text(
        "Method,Broad Recall@20,Broad Recall@20 ci_low,Broad Recall@20 ci_high,"
        "Broad Recall@20 paper\nBM25,0.5,0.4,0.6,42.0\nTTP,0.7,,,\n",
        encoding="utf-8",
    )
    assert plot_file(table, out=tmp_path / "t4.pdf", title="t") == ["Broad"]
    assert (tmp_path / "t4.pdf").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match="no '<set> MRR@100' column"):
        import pandas as pd

        from personalir.ttp.paper.table4_figure import plot

        plot(pd.read_csv(table), out=tmp_path / "x.pdf", title="t", measure="MRR@100")
