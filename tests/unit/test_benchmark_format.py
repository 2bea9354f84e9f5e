"""Benchmark JSONL and the released PQB format (round trip and bad input)."""

import json

import pytest

from personalir.queries.benchmark_format import (
    BenchmarkFormatError,
    from_released,
    read_benchmark,
    to_released,
    write_benchmark,
)

RELEASED = {
    "B01": [
        {
            "asin": "B01",
            "uid": "u1",
            "syntax_query": "fender black strings",
            "typo_query": "fendr black strings",
        },
        {"asin": "B01", "uid": "u2", "syntax_query": "black fender strings", "typo_query": None},
        {"asin": "B01", "uid": "u3", "syntax_query": "strings fender black", "typo_query": None},
    ],
}


def test_released_to_records_pairs():
    recs = from_released(RELEASED, "Musical_Instruments")
    syn = [r for r in recs if r["kind"] == "syntactic"]
    err = [r for r in recs if r["kind"] == "writing_error"]
    assert len(syn) == 6  # three users -> three pairs -> six queries
    assert len({r["pair_id"] for r in syn}) == 3
    assert [(r["role"], r["text"]) for r in err] == [
        ("clean", "fender black strings"),
        ("error", "fendr black strings"),
    ]


def test_round_trip_through_jsonl_and_released(tmp_path):
    recs = from_released(RELEASED, "Musical_Instruments")
    path = tmp_path / "benchmark.jsonl"
    assert write_benchmark(path, recs) == len(recs)
    back = read_benchmark(path)
    assert back == recs
    assert to_released(back) == RELEASED


def test_bad_lines_are_named(tmp_path):
    recs = from_released(RELEASED, "Musical_Instruments")
    path = tmp_path / "b.jsonl"
    lines = [json.dumps(r) for r in recs]
    lines[2] = lines[2].replace('"role": "a"', '"role": "clean"')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchmarkFormatError, match=r"b.jsonl:3: role 'clean' not valid"):
        read_benchmark(path)
    path.write_text(lines[0] + "\n{not json\n")
    with pytest.raises(BenchmarkFormatError, match=r"b.jsonl:2: invalid JSON"):
        read_benchmark(path)


def test_incomplete_pair_rejected(tmp_path):
    recs = from_released(RELEASED, "Musical_Instruments")[:-1]
    with pytest.raises(BenchmarkFormatError, match="has roles"):
        write_benchmark(tmp_path / "x.jsonl", recs)
