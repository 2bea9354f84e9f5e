"""Rows evaluated on a subset (an LLM reranker scores a sample of the pairs) are marked with
a dagger in the retrieval tables, figures and the paper comparison, which say on how many.

Hand-built tables in the layout of the real ones: two domains and their Average, BM25 on
50 and 56 pairs (106 in all), a reranker on 3 per domain (6 in all)."""

from __future__ import annotations

import pandas as pd

from personalir.report import claims as cl
from personalir.report import paper_compare as pc
from personalir.retrieval import figures
from personalir.retrieval.tables import SUBSET_MARK, subset_counts, subset_note, to_latex

from .test_claims import DEG, FLIP, config, retrieval_rows, write

PAIRS = {("A", "bm25"): 50, ("B", "bm25"): 56, ("A", "grade"): 3, ("B", "grade"): 3}


def flip_table() -> pd.DataFrame:
    rows = []
    for domain in ("A", "B", "Average"):
        for name, label in (("bm25", "BM25"), ("grade", "SmolLM2 grade")):
            pairs = (
                PAIRS[("A", name)] + PAIRS[("B", name)]
                if domain == "Average"
                else PAIRS[(domain, name)]
            )
            rows.append(
                {
                    "domain": domain,
                    "retriever": name,
                    "label": label,
                    "family": "lexical" if name == "bm25" else "llm_reranker",
                    "pairs": pairs,
                    "Flip@1": 0.1,
                }
            )
    return pd.DataFrame(rows)


def test_subset_counts_and_the_caption_sentence():
    table = flip_table()
    # 6 of the most pairs of any retriever in all (106), 3 of 50-56 in each domain
    assert subset_counts(table, "pairs", "pairs") == {
        "grade": "6 of 106 pairs (3 of 50-56 per domain)"
    }
    assert subset_counts(table, "pairs", "pairs", per_domain=False) == {"grade": "6 of 106 pairs"}
    # One domain, no Average block
    assert subset_counts(table[table["domain"] == "A"], "pairs", "pairs") == {
        "grade": "3 of 50 pairs"
    }
    note = subset_note(table, "pairs", "pairs")
    assert note.startswith(f" {SUBSET_MARK}: evaluated on a subset")
    assert "SmolLM2 grade on 6 of 106 pairs (3 of 50-56 per domain)." in note
    # Evaluated on as many pairs as BM25 (in every domain): no mark, no sentence.
    full = flip_table()
    full.loc[full["retriever"] == "grade", "pairs"] = full.loc[
        full["retriever"] == "bm25", "pairs"
    ].to_numpy()
    assert subset_counts(full, "pairs", "pairs") == {} and subset_note(full, "pairs", "x") == ""


def test_table_marks_the_subset_rows_and_says_how_many():
    tex = to_latex(flip_table(), ["Flip@1"], lower_is_better=True, caption="Flip.", label="tab:f")
    assert tex.count(r"SmolLM2 grade$^\dagger$") == 3  # each domain's block and Average's
    assert r"BM25$^\dagger$" not in tex and "\nBM25 & " in tex
    assert "SmolLM2 grade on 6 of 106 pairs (3 of 50-56 per domain).}" in tex


def test_figure_legend_marks_the_subset_and_its_count():
    summary = pd.DataFrame(
        [
            {
                "retriever": name,
                "label": label,
                "domain": domain,
                "metric": metric,
                "items": items if metric == "Flip@1" else 999,
            }
            for name, label in (("bm25", "BM25"), ("grade", "SmolLM2 grade"))
            for domain, items in (
                ("A", PAIRS[("A", name)]),
                ("B", PAIRS[("B", name)]),
                ("Average", PAIRS[("A", name)] + PAIRS[("B", name)]),
            )
            for metric in ("Flip@1", "Deg@1")
        ]
    )
    labels = figures.legend_labels(summary, ["bm25", "grade"], "Flip@1")
    assert labels == [("BM25", False), ("SmolLM2 grade\u2020 (6 of 106 pairs)", True)]
    # Deg@1: every retriever on 999 pairs, nothing marked
    assert figures.legend_labels(summary, ["bm25", "grade"], "Deg@1") == [
        ("BM25", False),
        ("SmolLM2 grade", False),
    ]


def test_paper_comparison_marks_the_stand_in_evaluated_on_a_subset(tmp_path):
    flip = retrieval_rows(FLIP, ("Flip@1", "Flip@20", "RRstd@200"))
    for row in flip:  # the rerankers on 9 of the 50 pairs
        if row["retriever"] in ("yesno", "grade"):
            row["pairs"] = 9
    write(tmp_path, "retrieval/table_flip_rrstd.csv", flip)
    write(
        tmp_path,
        "retrieval/table_degradation.csv",
        retrieval_rows(DEG, ("Deg@1", "Deg@20", "MRRdeg@200")),
    )
    tables = {t.key: t for t in pc.compare_all(tmp_path, config(), cl.PQB_YAML)}
    assert tables["flip_rrstd"].subsets == {
        "SmolLM2 grade": "9 of 50 syntactic pairs",
        "SmolLM2 yes/no": "9 of 50 syntactic pairs",
    }
    assert tables["degradation"].subsets == {}  # every system on 50 pairs there
    tex = pc.latex(tables["flip_rrstd"], "x", synthetic=False)
    assert r"SmolLM2 grade}$^\dagger$" in tex and r"SmolLM2 yes/no}$^\dagger$" in tex
    assert r"BM25$^\dagger$" not in tex
    assert "SmolLM2 grade and SmolLM2 yes/no on 9 of 50 syntactic pairs." in tex
    assert r"\dagger" not in pc.latex(tables["degradation"], "x", synthetic=False)
    # the figure: drawn, with the note under its panels
    pc.figure(list(tables.values()), tmp_path / "f.pdf", label="x", name="retrieval")
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"
