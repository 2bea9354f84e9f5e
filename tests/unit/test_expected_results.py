"""Expected results with tolerances: recording a results tree, checking it value by value,
and the configurations' expected files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from personalir.report import expected as ex

ROOT = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path, recall: float = 0.5, queries: int = 25) -> Path:
    (tmp_path / "ttp").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "method": ["bm25", "ttp"],
            "label": ["BM25", "TTP"],
            "General": [0.25, recall],
            "Avg": [0.3, float("nan")],
            "diff_ci_low": [0.0, 0.1],
            "General paper": [41.0, 45.4],
            "queries": [queries, queries],
            "confidence": [0.95, 0.95],
        }
    ).to_csv(tmp_path / "ttp" / "table6.csv", index=False)
    return tmp_path


def test_record_keeps_headline_values_only(tmp_path):
    doc = ex.record(_tree(tmp_path), configuration="t")
    assert list(doc["tables"]) == ["ttp/table6.csv"]
    rows = doc["tables"]["ttp/table6.csv"]["rows"]
    # CI bounds, the paper's values, settings and text columns are left out; NaN -> None
    assert rows == {
        "bm25": {"General": 0.25, "Avg": 0.3, "queries": 25},
        "ttp": {"General": 0.5, "Avg": None, "queries": 25},
    }
    assert isinstance(rows["bm25"]["queries"], int)


def test_check_passes_within_and_fails_outside_the_tolerance(tmp_path):
    doc = ex.record(_tree(tmp_path / "a"), configuration="t")
    ok = ex.check(_tree(tmp_path / "b", recall=0.504), doc)
    assert set(ok["status"]) == {"OK"} and len(ok) == 6
    bad = ex.check(_tree(tmp_path / "c", recall=0.51), doc)
    (fail,) = bad[bad["status"] == "FAIL"].itertuples(index=False)
    assert (fail.file, fail.row, fail.column) == ("ttp/table6.csv", "ttp", "General")
    assert (fail.expected, fail.observed, fail.tolerance) == (0.5, 0.51, 0.005)
    (line,) = ex.describe(bad)[1:]
    assert line == (
        "FAIL ttp/table6.csv [ttp] General: expected 0.5, observed 0.51 (tolerance 0.005)"
    )
    # a table's own tolerance wins over the file's
    doc["tables"]["ttp/table6.csv"]["tolerance"] = {"abs": 0.02}
    assert set(ex.check(tmp_path / "c", doc)["status"]) == {"OK"}


def test_counts_must_match_exactly_and_nan_only_nan(tmp_path):
    doc = ex.record(_tree(tmp_path / "a"), configuration="t")
    moved = ex.check(_tree(tmp_path / "b", queries=26), doc)
    assert set(moved.loc[moved["column"] == "queries", "status"]) == {"FAIL"}
    frame = pd.read_csv(tmp_path / "b" / "ttp" / "table6.csv")
    frame.loc[1, "Avg"] = 0.4
    frame.loc[1, "queries"] = 25
    frame.to_csv(tmp_path / "b" / "ttp" / "table6.csv", index=False)
    got = ex.check(tmp_path / "b", doc).set_index(["row", "column"])["status"]
    assert got[("ttp", "Avg")] == "FAIL"


def test_missing_and_new_rows_columns_and_tables(tmp_path):
    doc = ex.record(_tree(tmp_path / "a"), configuration="t")
    doc["tables"]["ttp/table7.csv"] = {"key": ["method"], "rows": {"ttp": {"Avg": 0.1}}}
    doc["tables"]["ttp/table6.csv"]["rows"]["gone"] = {"General": 0.1}
    del doc["tables"]["ttp/table6.csv"]["rows"]["bm25"]["Avg"]
    report = ex.check(_tree(tmp_path / "b"), doc)
    status = {(r.file, r.row, r.column): r.status for r in report.itertuples(index=False)}
    assert status[("ttp/table7.csv", "", "")] == "MISSING"
    assert status[("ttp/table6.csv", "gone", "")] == "MISSING"
    assert status[("ttp/table6.csv", "bm25", "Avg")] == "NEW"
    assert len(ex.failures(report)) == 2


def test_cli_exit_status_and_malformed_files(tmp_path, capsys):
    tree = _tree(tmp_path / "a")
    out = tmp_path / "exp.yaml"
    assert ex.main(["record", str(tree), "--out", str(out)]) == 0
    assert yaml.safe_load(out.read_text())["configuration"] == "exp"
    assert ex.main(["check", str(tree), str(out), "--csv", str(tmp_path / "r.csv")]) == 0
    _tree(tmp_path / "a", recall=0.9)
    assert ex.main(["check", str(tree), str(out)]) == 1
    assert "FAIL ttp/table6.csv [ttp] General" in capsys.readouterr().out
    twice = tmp_path / "twice.yaml"
    twice.write_text("tables: {}\ntables: {}\n")
    with pytest.raises(ex.ExpectedFileError, match="twice.yaml:2"):
        ex.load(twice)
    with pytest.raises(ex.ExpectedFileError, match="'tables' must map"):
        ex.check(tree, {"tables": {}}, where="x.yaml")
    with pytest.raises(ex.ExpectedFileError, match="needs 'key' and 'rows'"):
        ex.check(tree, {"tables": {"ttp/table6.csv": {}}}, where="x.yaml")


def test_the_configurations_expected_files_are_well_formed():
    """Each configuration names an expected file that lists only headline tables, keyed as
    :data:`expected.TABLES` says."""
    for name in ("config.yaml", "tiny.yaml"):
        cfg = yaml.safe_load((ROOT / "config" / name).read_text())
        path = ROOT / cfg["paper"]["expected"]
        doc = ex.load(path)
        assert doc["configuration"] == path.stem
        for rel, table in doc["tables"].items():
            assert tuple(table["key"]) == ex.TABLES[rel], rel
            assert table["rows"], rel


def test_render_markdown_lists_every_value(tmp_path):
    doc = ex.record(_tree(tmp_path), configuration="t")
    text = ex.render_markdown(doc, "exp.yaml")
    assert "| method | General | Avg | queries |" in text
    assert "| bm25 | 0.25 | 0.3 | 25 |" in text
    assert "| ttp | 0.5 | n/a | 25 |" in text
    assert "absolute 0.005" in text


def test_the_documentation_is_rendered_from_the_sample_file():
    """docs/expected_results.md is the rendering of config/expected/sample.yaml (regenerate:
    python -m personalir.report.expected render config/expected/sample.yaml --out
    docs/expected_results.md)."""
    source = "config/expected/sample.yaml"
    want = ex.render_markdown(ex.load(ROOT / source), source)
    assert (ROOT / "docs" / "expected_results.md").read_text(encoding="utf-8") == want
