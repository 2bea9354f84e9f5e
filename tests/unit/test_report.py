"""LaTeX tables, dataset statistics and the manuscript's inputs."""

import shutil

import pandas as pd
import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.latex import dataframe_to_latex, escape
from personalir.report.datasheet import statistics_frame
from personalir.report.paper import PaperBuildError, build_pdf, paper_inputs


def test_escape():
    assert escape("Baby_Products & 50%") == r"Baby\_Products \& 50\%"


def test_latex_table_layout():
    df = pd.DataFrame({"Model": ["a_b", "c"], "Acc": [0.5, 0.75], "N": [1200, 3]})
    tex = dataframe_to_latex(
        df, caption="Cap", label="tab:x", bold={(1, "Acc"): True}, midrule_before=[1]
    )
    body = tex.splitlines()
    assert r"\begin{tabular}{lrr}" in body
    assert r"a\_b & 0.50 & 1{,}200 \\" in body
    assert body[body.index(r"c & \textbf{0.75} & 3 \\") - 1] == r"\midrule"


def test_latex_header_groups_and_fit_width():
    df = pd.DataFrame({"Method": ["m"], "A x": [0.5], "A y": [0.25], "B x": [1.0]})
    tex = dataframe_to_latex(
        df,
        caption="Cap",
        label="tab:g",
        header_groups=[("", 1), ("Set_A", 2), ("B", 1)],
        column_labels=["Method", "x", "y", "x"],
        fit_width=True,
    )
    body = tex.splitlines()
    assert r" & \multicolumn{2}{c}{Set\_A} & B \\" in body
    assert r"\cmidrule(lr){2-3}" in body and r"Method & x & y & x \\" in body
    # shrunk to the line only when wider (graphicx's \width: the table's natural width)
    assert body[body.index(r"\begin{tabular}{lrrr}") - 1] == (
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%"
    )
    assert r"\end{tabular}}" in body
    with pytest.raises(ValueError, match="span 3 of 4"):
        dataframe_to_latex(df, caption="c", label="l", header_groups=[("", 1), ("A", 2)])
    with pytest.raises(ValueError, match="2 labels for 4 columns"):
        dataframe_to_latex(df, caption="c", label="l", column_labels=["a", "b"])


def test_statistics_frame_totals():
    rep = {
        "products": {"products": 10, "eligible": 8},
        "sentences": {"reviews": 30, "users": 5, "users_selected": 4, "sentences_kept": 200},
        "quality_reviews": {"quarantined_by_reason": {"invalid_json": 2}},
        "quality_meta": {"quarantined_by_reason": {}},
    }
    df = statistics_frame({"Baby_Products": rep, "Video_Games": rep})
    assert list(df["Domain"]) == ["Baby Products", "Video Games", "Total"]
    assert df.iloc[-1]["Sentences"] == 400 and df.iloc[-1]["Quarantined records"] == 4


def test_manuscript_inputs_are_generated_files(tmp_path):
    tex = tmp_path / "main.tex"
    tex.write_text(
        "\\input{generated/a}\n% \\input{generated/commented}\n"
        "\\includegraphics[width=3cm]{generated/fig.pdf}\n\\input{preamble}\n"
    )
    # The inputs lie in the configuration's folder, not beside the manuscript.
    assert paper_inputs(tex, "out/paper/generated") == [
        "out/paper/generated/a.tex",
        "out/paper/generated/fig.pdf",
    ]


def test_repository_manuscripts_input_their_tables():
    pqb = paper_inputs(REPO_ROOT / "paper" / "pqb" / "main.tex", "results/paper/generated")
    ttp = paper_inputs(REPO_ROOT / "paper" / "ttp" / "main.tex", "results/paper/generated")
    assert "results/paper/generated/dataset_statistics.tex" in pqb
    assert "results/paper/generated/ttp_table4.tex" in ttp
    # The PQB manuscript builds without the TTP stage: the only TTP tables it inputs are
    # TTP on PQB's, which rule ttp_pqb_tables writes in every configuration (saying why they
    # are absent where TTP is off).
    assert not any("/ttp_" in p and "/ttp_on_pqb" not in p for p in pqb)
    assert "results/paper/generated/ttp_on_pqb.tex" in pqb


def test_build_refuses_missing_inputs(tmp_path):
    tex = tmp_path / "main.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\input{generated/x}\\end{document}")
    with pytest.raises(PaperBuildError, match="do not exist"):
        build_pdf(tex, tmp_path / "main.pdf", tmp_path / "generated")


def test_build_refuses_a_folder_not_named_generated(tmp_path):
    tex = tmp_path / "main.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\end{document}")
    with pytest.raises(PaperBuildError, match="must be named generated"):
        build_pdf(tex, tmp_path / "main.pdf", tmp_path / "tables")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_build_pdf_is_reproducible(tmp_path):
    # The manuscript in one folder, its generated input under a results root elsewhere; a
    # stale generated/ beside the manuscript must not be the one read.
    tex = tmp_path / "paper" / "main.tex"
    generated = tmp_path / "results-x" / "paper" / "generated"
    generated.mkdir(parents=True)
    (generated / "t.tex").write_text("Hello table.")
    (tmp_path / "paper" / "generated").mkdir(parents=True)
    (tmp_path / "paper" / "generated" / "t.tex").write_text("\\undefinedmacro")
    tex.write_text("\\documentclass{article}\\begin{document}\\input{generated/t}\\end{document}\n")
    build_pdf(tex, tmp_path / "a.pdf", generated)
    build_pdf(tex, tmp_path / "b.pdf", generated)
    assert (tmp_path / "a.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
