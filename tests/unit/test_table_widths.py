"""Tables legible at 100% zoom: the width probe (personalir.report.table_widths), Table 4 in
parts that each fit the line at their natural size, and a table in parts numbered a, b, ...

The compiling tests use pdflatex and the manuscripts' shared preamble (paper/preamble.tex);
they are skipped where pdflatex is not installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pypdfium2
import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.latex import dataframe_to_latex, stacked, table_parts
from personalir.report.paper import build_pdf
from personalir.report.table_widths import Reading, measure, parse_log, problems
from personalir.ttp.paper.tables import (
    TABLE_MEASURES,
    TEST_SETS,
    table4,
    table4_latex,
    table4_parts,
)

needs_tex = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
LABELS = {"bm25": "BM25", "llm_embedding": "LLM embedding (no generation)", "ttp": "TTP (SFT)"}


def tiny_table4() -> tuple[pd.DataFrame, dict]:
    """Three methods (the longest label of the real table among them), every test set and
    measure, the paper's values for all but the pooled set, a Relevance column."""
    rows = [
        {
            "domain": "All",
            "label": t,
            "method": m,
            "measure": measure,
            "value": 0.5 + 0.1 * i,
            "ci_low": 0.4,
            "ci_high": 0.9,
        }
        for i, m in enumerate(LABELS)
        for t in TEST_SETS
        for measure in TABLE_MEASURES
    ]
    paper = {
        m: {t: dict.fromkeys(TABLE_MEASURES, 31.01) for t in TEST_SETS if t != "All"}
        | {"Relevance": {"Spearman": 45.7}}
        for m in LABELS
    }
    relevance = {"bm25": 0.758, "llm_embedding": None, "ttp": {"value": 0.818}}
    return table4(pd.DataFrame(rows), list(LABELS), LABELS, paper=paper, relevance=relevance), paper


def manuscript(tmp_path: Path, body: str, generated: dict[str, str]) -> Path:
    """A document on the manuscripts' preamble: paper/doc/main.tex, the generated inputs in
    results/paper/generated/ (the layout build_pdf and the probe expect)."""
    (tmp_path / "paper" / "doc").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "paper" / "preamble.tex", tmp_path / "paper" / "preamble.tex")
    gen = tmp_path / "results" / "paper" / "generated"
    gen.mkdir(parents=True)
    for name, text in generated.items():
        (gen / name).write_text(text, encoding="utf-8")
    main = tmp_path / "paper" / "doc" / "main.tex"
    main.write_text(
        "\\documentclass[11pt]{article}\n\\input{preamble}\n\\begin{document}\n"
        + body
        + "\n\\end{document}\n",
        encoding="utf-8",
    )
    return main


def probe(tmp_path: Path, main: Path):
    return measure(main, [tmp_path / "results" / "paper", main.parent, main.parent.parent])


def pdf_text(tmp_path: Path, main: Path) -> str:
    out = tmp_path / "doc.pdf"
    build_pdf(main, out, tmp_path / "results" / "paper" / "generated")
    pdf = pypdfium2.PdfDocument(str(out))
    return "\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))


# --------------------------------------------------------------------------- no TeX needed
def test_table4_parts_one_per_test_set_relevance_beside_the_pooled_set():
    table, _ = tiny_table4()
    parts = table4_parts(table, with_paper=True)
    assert [sets for sets, _ in parts] == [
        ["General"],
        ["Broad"],
        ["LongTail"],
        ["All", "Relevance"],
    ]
    general = parts[0][1]
    # ours and the paper's per measure: 8 value columns, the most a part holds
    assert [(m, paper is not None) for _, m, _, paper in general] == [
        (m, True) for m in TABLE_MEASURES
    ]
    # The paper has no pooled values: All shows ours only, Relevance ours and the paper's.
    pooled = parts[3][1]
    assert [paper for t, _, _, paper in pooled if t == "All"] == [None] * 4
    assert pooled[-1][2:] == ("Relevance Spearman", "Relevance Spearman paper")
    tex = table4_latex(table, caption="C.", label="tab:ttp-table4", with_paper=True)
    assert r"\resizebox" not in tex  # printed at its natural size, never scaled
    assert tex.count(r"\begin{table}") == 4
    assert r"\label{tab:ttp-table4-a}\partslabel{tab:ttp-table4}" in tex
    assert "The paper reports no values for All." in tex
    # Every value of the frame is printed once, as before the split (0.700 bold: the best).
    assert r"\textbf{0.700}" in tex and "31.010" in tex and "45.700" in tex


def test_stacked_headers():
    assert stacked("Users", 10) == "Users"
    assert stacked("Products with core terms", 10) == (
        r"\begin{tabular}[b]{@{}c@{}}Products \\ with core \\ terms\end{tabular}"
    )
    # a hyphenated word breaks after its hyphen; a leading minus stays with its word
    assert (
        stacked("Writing-error", 10) == r"\begin{tabular}[b]{@{}c@{}}Writing- \\ error\end{tabular}"
    )
    assert stacked("-Contradiction", 10) == "-Contradiction"


def test_parse_log_and_the_criterion():
    log = "\n".join(
        [
            "PROBE-FILE a",
            "PROBE-TABLE table=1 natural=400.0pt line=469.75pt resized=0",
            "PROBE-FILE b",
            "PROBE-TABLE table=2 natural=600.0pt line=469.75pt resized=1",
            "PROBE-RESIZE target=469.75pt",
            "PROBE-TABLE table=3 natural=500.0pt line=469.75pt resized=0",
            r"Overfull \hbox (30.25pt too wide) in paragraph at lines 5--6",
            "PROBE-FILE main.tex",
            "LaTeX Warning: Float too large for page by 12.5pt on input line 9.",
        ]
    )
    readings, overfull = parse_log(log)
    assert readings == [
        Reading("a", "1", 400.0, 469.75, 0.0),
        Reading("b", "2", 600.0, 469.75, 469.75),
        Reading("b", "3", 500.0, 469.75, 0.0),
    ]
    assert readings[1].scale == pytest.approx(469.75 / 600)  # 0.78: below 0.85
    found = problems(readings, overfull)
    assert len(found) == 4
    assert found[0].startswith("b (table 2): shrunk to 0.78")
    assert found[1].startswith("b (table 3): 500.0pt runs 30.2pt past")
    assert found[2] == "b: overfull box, 30.2pt too wide in paragraph at lines 5--6"
    assert found[3].startswith("main.tex: overfull box, 12.5pt too tall for the page")
    assert problems(readings, overfull, min_scale=0.75)[0].startswith("b (table 3)")


# --------------------------------------------------------------------------- compiled
@needs_tex
def test_table4_parts_fit_the_line_at_scale_one(tmp_path):
    table, _ = tiny_table4()
    tex = table4_latex(table, caption="Table 4 caption.", label="tab:ttp-table4", with_paper=True)
    body = (
        "See Table~\\ref{tab:ttp-table4} and Table~\\ref{tab:ttp-table4-b}.\n"
        "\\PaperTable{4}\n\\input{generated/ttp_table4}\n"
        "\\OurTable\n\\begin{table}[h]\\caption{After.}\\end{table}"
    )
    main = manuscript(tmp_path, body, {"ttp_table4.tex": tex})
    readings, overfull = probe(tmp_path, main)
    assert [r.table for r in readings] == ["4a", "4b", "4c", "4d"]
    for r in readings:
        assert r.target == 0 and r.scale == 1.0  # no \resizebox: text at its own size
        assert r.natural <= r.line, r  # every part within the line at scale 1
    assert overfull == [] and problems(readings, overfull) == []
    text = pdf_text(tmp_path, main)
    assert "See Table 4 and Table 4b." in text  # the whole's number, a part's number
    for caption in ("Table 4a: Table 4 caption.", "Table 4d: Table 4 continued", "Table S1:"):
        assert caption in text


@needs_tex
def test_the_one_table_layout_breaks_the_criterion(tmp_path):
    """The former Table 4 (every test set in one row of 35 columns) fails the check, at its
    natural size (it runs past the line) and scaled to the line (far below 85%)."""
    table, _ = tiny_table4()
    cols = [c for c in table.columns if not c.endswith(("ci_low", "ci_high"))]
    wide = dataframe_to_latex(table[cols], caption="Wide.", label="tab:wide", floatfmt=".3f")
    fitted = dataframe_to_latex(
        table[cols], caption="Fitted.", label="tab:fit", floatfmt=".3f", fit_width=True
    )
    main = manuscript(
        tmp_path,
        "\\input{generated/wide}\n\\input{generated/fitted}",
        {"wide.tex": wide, "fitted.tex": fitted},
    )
    readings, overfull = probe(tmp_path, main)
    found = problems(readings, overfull)
    assert any(p.startswith("wide (table 1):") and "past the" in p for p in found)
    assert any(p.startswith("fitted (table 2): shrunk to") for p in found)
    assert readings[1].scale < 0.5


@needs_tex
def test_a_table_in_parts_keeps_the_numbering_of_the_tables_after_it(tmp_path):
    """In a document numbered by the counter: Table 1, then 2a and 2b, then Table 3 (not 4:
    the parts advance the counter once); the whole's label prints 2."""
    frame = pd.DataFrame({"A": ["x"], "B": [1.0]})
    parts = [dataframe_to_latex(frame, caption=f"Part {i}.", label=f"tab:p-{i}") for i in "ab"]
    one = dataframe_to_latex(frame, caption="One.", label="tab:one")
    three = dataframe_to_latex(frame, caption="Three.", label="tab:three")
    main = manuscript(
        tmp_path,
        "Whole: \\ref{tab:p}; after: \\ref{tab:three}.\n"
        "\\input{generated/one}\n\\input{generated/parts}\n\\input{generated/three}",
        {"one.tex": one, "parts.tex": table_parts(parts, "tab:p"), "three.tex": three},
    )
    text = pdf_text(tmp_path, main)
    for caption in ("Table 1: One.", "Table 2a: Part a.", "Table 2b: Part b.", "Table 3: Three."):
        assert caption in text
    assert "Whole: 2; after: 3." in text
    with pytest.raises(ValueError, match="no parts"):
        table_parts([], "tab:x")
