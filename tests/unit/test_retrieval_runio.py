"""TREC run files: round trip, tie order, and errors that name the file and line."""

from pathlib import Path

import pytest

from personalir.retrieval.runio import RunFormatError, read_run, read_run_text, write_run

QUERIES = ["q1", "q2"]
DOCS = ["d1", "d2", "d3"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "x.run"
    path.write_text(text, encoding="utf-8")
    return path


def test_round_trip(tmp_path):
    ranking = {"q1": [("d2", 3.5), ("d1", 1.25)], "q2": [("d3", 0.5)]}
    path = tmp_path / "r.run"
    assert write_run(path, ranking, tag="bm25") == 3
    assert path.read_text().splitlines() == [
        "q1 Q0 d2 1 3.500000 bm25",
        "q1 Q0 d1 2 1.250000 bm25",
        "q2 Q0 d3 1 0.500000 bm25",
    ]
    assert read_run(path, query_ids=QUERIES, doc_ids=DOCS) == {"q1": ["d2", "d1"], "q2": ["d3"]}


def test_order_is_score_then_rank_column(tmp_path):
    # d3 has the highest score although listed last; d1/d2 tie on score and keep rank order
    # (trec_eval would order the tie by document id instead).
    path = _write(
        tmp_path,
        "q1 Q0 d2 1 1.0 t\nq1 Q0 d1 2 1.0 t\nq1 Q0 d3 3 2.0 t\n",
    )
    assert read_run(path)["q1"] == ["d3", "d2", "d1"]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 1.0\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 one 1.0 t\n", 1, "rank 'one' is not an integer"),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 0 1.0 t\n", 2, "rank 0 is not positive"),
        ("q1 Q0 d1 1 high t\n", 1, "score 'high' is not a number"),
        ("q1 Q0 d1 1 nan t\n", 1, "is not finite"),
        ("q1 Q0 d1 1 1.0 t\nq9 Q0 d2 1 1.0 t\n", 2, "unknown query id 'q9'"),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 dx 2 0.5 t\n", 2, "unknown document id 'dx'"),
        (
            "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 1 0.5 t\n",
            2,
            "duplicate rank 1 for query 'q1' (first at line 1)",
        ),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n", 2, "document 'd1' listed twice"),
        ("q1 Q0 d1 1 1.0 t\n\n", 2, "blank line"),
    ],
)
def test_bad_lines_are_named(tmp_path, text, line, message):
    path = _write(tmp_path, text)
    with pytest.raises(RunFormatError) as err:
        read_run(path, query_ids=QUERIES, doc_ids=DOCS)
    assert f"{path}:{line}:" in str(err.value)
    assert message in str(err.value)


def test_writer_rejects_bad_tag_and_scores(tmp_path):
    with pytest.raises(ValueError, match="tag"):
        write_run(tmp_path / "a.run", {"q1": [("d1", 1.0)]}, tag="two words")
    with pytest.raises(ValueError, match="not finite"):
        write_run(tmp_path / "b.run", {"q1": [("d1", float("inf"))]}, tag="t")
    assert not (tmp_path / "b.run").exists()  # atomic: nothing half-written is left


def test_gzip_runs_round_trip_with_stable_bytes(tmp_path):
    ranking = {"q1": [("d2", 2.0), ("d1", 1.0)], "q2": [("d1", 0.5)]}
    a, b = tmp_path / "a.run.gz", tmp_path / "b.run.gz"
    assert write_run(a, ranking, tag="t") == 3
    write_run(b, ranking, tag="t")
    assert a.read_bytes()[:2] == b"\x1f\x8b" and a.read_bytes() == b.read_bytes()
    assert read_run(a) == {"q1": ["d2", "d1"], "q2": ["d1"]}
    plain = tmp_path / "a.run"
    write_run(plain, ranking, tag="t")
    assert read_run_text(a) == plain.read_text()
