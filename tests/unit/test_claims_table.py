"""The PQB claims' LaTeX table: PQB rows only, verdicts counted, text escaped, margins."""

from __future__ import annotations

import pandas as pd

from personalir.report.claims_table import claims_frame, make_claims_table

ROWS = [
    # paper, id, status, measured, margin, ci_low, ci_high, text
    ("PQB", "every_system_moves", "held", "smallest Flip@1: BM25 = 2.00 pts", 2.0, 0.5, 3.5, "x"),
    ("PQB", "agreement_substantial", "not held", "alpha 50% & more", -0.64, None, None, "y"),
    ("PQB", "knn_trails", "not applicable", "no table", None, None, None, "z"),
    ("TTP", "rl_helps", "held", "TTP row", 1.0, 0.0, 2.0, "w"),
]


def _csv(tmp_path):
    frame = pd.DataFrame(
        ROWS,
        columns=["paper", "id", "status", "measured", "margin", "ci_low", "ci_high", "text"],
    )
    path = tmp_path / "claims.csv"
    frame.to_csv(path, index=False)
    return path


def test_rows_margins_and_escaping(tmp_path):
    path = _csv(tmp_path)
    frame = claims_frame(pd.read_csv(path))
    assert list(frame["Claim"]) == ["every_system_moves", "agreement_substantial", "knn_trails"]
    assert list(frame["Margin [CI]"]) == ["+2.00 [+0.50, +3.50]", "-0.64", "--"]
    tex = make_claims_table(claims_csv=path, config_label="sample", tex_out=tmp_path / "t.tex")
    assert (tmp_path / "t.tex").read_text() == tex
    assert "(1 held, 1 not held, 1 not applicable)" in tex
    # an id breaks at its underscores in its narrow column
    assert r"every\_\allowbreak{}system\_\allowbreak{}moves" in tex
    assert r"alpha 50\% \& more" in tex
    assert "rl_helps" not in tex and r"rl\_helps" not in tex
    assert "The sample world is synthetic" in tex
    assert tex.count(r"\\") == 1 + 3  # the header and one line per PQB claim
    assert r"\begin{table}" in tex and "tab:pqb-claims-a" not in tex  # three claims: one part
