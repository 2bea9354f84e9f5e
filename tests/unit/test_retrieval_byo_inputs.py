"""Every input error of ``pqb-evaluate`` stops with ``file:line: reason`` (or ``file: byte
offset N: reason``) and exit status 2, without a traceback: one case per kind, on the tiny
released setting of tests/fixtures/byo.py (one domain; the B9999 queries dropped)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from personalir.queries.benchmark_format import from_released, write_benchmark
from personalir.retrieval.evaluate import OFFLINE_VARIABLES, main
from tests.fixtures import byo

D = "Musical_Instruments"
KEPT = [r for r in from_released(byo.RELEASED, D) if r["product"] != "B9999"]
GOOD_RUN = byo.graded_run(KEPT)


@pytest.fixture(autouse=True)
def _offline_variables_restored(monkeypatch):
    for name in OFFLINE_VARIABLES:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)


def _lines(text: str, number: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[number - 1] = new
    return "".join(lines)


def _released_with_duplicate_uid(path: Path) -> None:
    # indent=1: "B0001" on line 2, its first entry's "{" on line 3, "asin" line 4, "uid" line 5
    text = json.dumps(byo.RELEASED, indent=1)
    lines = text.splitlines(keepends=True)
    assert lines[4].strip() == '"uid": "u1",'
    lines.insert(5, '   "uid": "u9",\n')
    path.write_text("".join(lines))


def _benchmark_with_duplicate_text(path: Path) -> None:
    write_benchmark(path, KEPT)
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"text": ', '"text": "twice", "text": ', 1)
    path.write_text("".join(lines))


# name -> (what to write: run text or bytes, query file, config; extra options; expected stderr)
CASES = {
    "unknown query id": (
        {"run": _lines(GOOD_RUN, 2, "nope Q0 B0001 1 1.0 t\n")},
        [],
        r"m_Musical_Instruments\.run:2: unknown query id 'nope' \(not in the queries\)",
    ),
    "unknown document id": (
        {"run": _lines(GOOD_RUN, 1, f"{KEPT[0]['query_id']} Q0 B7777 1 9.0 t\n")},
        [],
        r"\.run:1: unknown document id 'B7777' \(not in the corpus\)",
    ),
    "wrong field count": (
        {"run": _lines(GOOD_RUN, 3, "a b c\n")},
        [],
        r"\.run:3: expected 6 fields 'qid Q0 docid rank score tag', got 3",
    ),
    "rank not an integer": (
        {"run": _lines(GOOD_RUN, 1, f"{KEPT[0]['query_id']} Q0 B0001 one 9.0 t\n")},
        [],
        r"\.run:1: rank 'one' is not an integer",
    ),
    "document listed twice": (
        {"run": GOOD_RUN + f"{KEPT[0]['query_id']} Q0 {KEPT[0]['product']} 5 1.0 t\n"},
        [],
        rf"\.run:{GOOD_RUN.count(chr(10)) + 1}: document 'B0001' listed twice",
    ),
    "blank line": ({"run": GOOD_RUN + "\n"}, [], rf"\.run:{GOOD_RUN.count(chr(10)) + 1}: blank"),
    "run not UTF-8": (
        {"run": GOOD_RUN.encode() + b"q Q0 B0001 1 1.0 caf\xe9\n"},
        [],
        rf"\.run: byte offset {len(GOOD_RUN.encode()) + 20}: not valid UTF-8 \(invalid "
        rf"continuation byte: byte\(s\) e9, on line {GOOD_RUN.count(chr(10)) + 1}\)",
    ),
    "run empty": (
        {"run": ""},
        [],
        r"m_Musical_Instruments\.run: the run of 'm' has no lines; pass --allow-empty-run",
    ),
    "run missing": ({}, [], r"m_Musical_Instruments\.run: No such file or directory"),
    "run lists a dropped query": (
        {"run": "Musical_Instruments:B9999:syn:0-1:a:0 Q0 B0001 1 1.0 t\n" + GOOD_RUN},
        [],
        r"\.run:1: query 'Musical_Instruments:B9999:syn:0-1:a:0' was dropped \(its product is "
        r"not in the corpus: --unknown-products drop\)",
    ),
    "queries not UTF-8": (
        {"run": GOOD_RUN, "queries": b'{"B0001": [{"asin": "B0001", "uid": "u1",\n\xff'},
        [],
        r"released_Musical_Instruments\.json: byte offset 42: not valid UTF-8 \(invalid start "
        r"byte: byte\(s\) ff, on line 2\)",
    ),
    "queries empty file": (
        {"run": GOOD_RUN, "queries": ""},
        [],
        r"released_Musical_Instruments\.json: no queries in the file \(an empty query set\)",
    ),
    "released {}": (
        {"run": GOOD_RUN, "queries": "{}"},
        [],
        r"released_Musical_Instruments\.json: no queries in the file",
    ),
    "released: a key twice": (
        {"run": GOOD_RUN, "queries": _released_with_duplicate_uid},
        [],
        r"released_Musical_Instruments\.json:6: key 'uid' is given twice in one JSON object",
    ),
    "released-v0 JSONL: a key twice": (
        {
            "run": GOOD_RUN,
            "queries": '{"asin": "B0001", "uid": "u1", "query": "a b"}\n'
            '{"asin": "B0001", "uid": "u2", "query": "c d", "query": "e f"}\n',
        },
        [],
        r"released_Musical_Instruments\.json:2: key 'query' is given twice",
    ),
    "released-v0 JSONL: bad line": (
        {"run": GOOD_RUN, "queries": '{"asin": "B0001", "uid": "u1", "query": "a b"}\n{oops\n'},
        [],
        r"released_Musical_Instruments\.json:2: invalid JSON line",
    ),
    "benchmark: a key twice": (
        {"run": GOOD_RUN, "benchmark": _benchmark_with_duplicate_text},
        ["--query-format", "benchmark"],
        r"benchmark_Musical_Instruments\.jsonl:2: key 'text' is given twice",
    ),
    "config: unknown key": (
        {"run": GOOD_RUN, "config": "seed: 1\nretrieval:\n  nope: 1\n"},
        [],
        r"config\.yaml:3: unknown config key 'retrieval\.nope'",
    ),
    "config: not YAML": (
        {"run": GOOD_RUN, "config": "seed: 1\nretrieval: [\n"},
        [],
        r"config\.yaml:3: not valid YAML",
    ),
}


def _setup(tmp_path: Path, writes: dict, extra: list[str]) -> list[str]:
    byo.write_catalogue(tmp_path / f"meta_{D}.jsonl")
    queries = byo.write_released(tmp_path / f"released_{D}.json")
    config = byo.write_small_config(tmp_path / "config.yaml")
    for key, path in (
        ("run", tmp_path / f"m_{D}.run"),
        ("queries", queries),
        ("config", config),
        ("benchmark", tmp_path / f"benchmark_{D}.jsonl"),
    ):
        value = writes.get(key)
        if callable(value):
            value(path)
        elif isinstance(value, bytes):
            path.write_bytes(value)
        elif value is not None:
            path.write_text(value, encoding="utf-8")
    if "benchmark" in writes:
        queries = tmp_path / f"benchmark_{D}.jsonl"
    argv = ["--domains", D, "--meta", str(tmp_path / "meta_{domain}.jsonl")]
    argv += ["--queries", str(queries).replace(D, "{domain}"), "--query-format", "released"]
    argv += ["--unknown-products", "drop", "--config", str(config), "--out", str(tmp_path / "o")]
    argv += ["--run", "m=" + str(tmp_path / "m_{domain}.run"), *extra]
    return argv


@pytest.mark.parametrize("case", list(CASES))
def test_input_error_names_file_and_line_and_exits_2(case, tmp_path, capsys):
    writes, extra, expected = CASES[case]
    with pytest.raises(SystemExit) as exc:
        main(_setup(tmp_path, writes, extra))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert re.search(r"pqb-evaluate: error: \S*" + expected, err), err
    assert "Traceback" not in err


def test_the_good_run_of_the_cases_evaluates(tmp_path, capsys):
    """The cases' baseline is valid: each error above comes from its one change."""
    assert main(_setup(tmp_path, {"run": GOOD_RUN}, [])) == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["retrievers"][0]["values"]


def test_export_of_an_empty_query_set_is_an_error(tmp_path, capsys):
    (tmp_path / f"released_{D}.json").write_text("{}")
    argv = ["export-queries", "--domains", D, "--query-format", "released"]
    argv += [
        "--queries",
        str(tmp_path / "released_{domain}.json"),
        "--out",
        str(tmp_path / "q.tsv"),
    ]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert f"released_{D}.json: no queries in the file" in capsys.readouterr().err


def test_console_command_exits_2_without_traceback(tmp_path):
    """The same through the interpreter, as a user sees it."""
    argv = _setup(tmp_path, {"run": _lines(GOOD_RUN, 2, "nope Q0 B0001 1 1.0 t\n")}, [])
    proc = subprocess.run(
        [sys.executable, "-m", "personalir.retrieval.evaluate", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )
    assert proc.returncode == 2, proc.stderr
    assert f"m_{D}.run:2: unknown query id 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr
