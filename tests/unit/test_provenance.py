"""Provenance records, manifests and the integrity check, on tiny inline files."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from personalir.common.provenance import (
    Problem,
    format_manifest,
    model_identifiers,
    parse_manifest,
    provenance_record,
    verify_folder,
    verify_manifest,
)
from personalir.common.provenance_workflow import artifacts_by_folder, check_consumed, static_dag

# sha256 of b"hello\n" (as `printf 'hello\n' | sha256sum` prints it).
HELLO = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "results" / "data" / "X"
    d.mkdir(parents=True)
    (d / "a.txt").write_bytes(b"hello\n")
    (d / "b.txt").write_bytes(b"0123456789")
    record = provenance_record(
        d, {"a.txt": "rule_a", "b.txt": "rule_b"}, config_hash="c" * 64, label="t", models={}
    )
    (d / "provenance.json").write_text(json.dumps(record))
    return d


def test_record_names_each_artifact_its_hash_and_rule(folder):
    record = json.loads((folder / "provenance.json").read_text())
    assert record["artifacts"]["a.txt"] == {"rule": "rule_a", "sha256": HELLO, "bytes": 6}
    assert record["config"] == {"label": "t", "sha256": "c" * 64}
    assert set(record["code"]) == {"code_sha256", "files"}  # the commit goes to the log
    assert record["packages"]["python"].startswith("3.")


def test_record_is_deterministic(folder):
    args = dict(config_hash="c" * 64, label="t", models={"m": "x"})
    first = provenance_record(folder, {"a.txt": "r"}, **args)
    assert provenance_record(folder, {"a.txt": "r"}, **args) == first


def test_record_hashes_only_the_code_that_produced_the_folder(folder, tmp_path):
    work = tmp_path / "work"
    (work / "workflow_scripts").mkdir(parents=True)
    (work / "workflow_scripts" / "make_a.py").write_text("print('a')\n")
    (work / "workflow_scripts" / "other.py").write_text("print('other')\n")
    args = dict(config_hash="c" * 64, label="t", models={}, workdir=work)
    code = ["workflow_scripts/make_a.py"]
    first = provenance_record(folder, {"a.txt": "r"}, code=code, **args)
    assert first["code"]["files"] == code
    # Unrelated code changes: the record does not.
    (work / "workflow_scripts" / "other.py").write_text("print('edited')\n")
    assert provenance_record(folder, {"a.txt": "r"}, code=code, **args) == first
    # The producing code changes: so does the record.
    (work / "workflow_scripts" / "make_a.py").write_text("print('A')\n")
    second = provenance_record(folder, {"a.txt": "r"}, code=code, **args)
    assert second["code"]["code_sha256"] != first["code"]["code_sha256"]


def test_verify_folder_names_truncated_and_changed(folder):
    assert verify_folder(folder) == ([], 2)
    (folder / "b.txt").write_bytes(b"01234")
    (folder / "a.txt").write_bytes(b"HELLO\n")
    problems, checked = verify_folder(folder, relative_to=folder.parent)
    assert checked == 2
    assert [(p.path, p.kind) for p in problems] == [
        ("X/a.txt", "changed"),
        ("X/b.txt", "truncated"),
    ]
    assert str(problems[1]) == "TRUNCATED X/b.txt: 5 of 10 bytes"


def test_manifest_round_trip_and_verify(tmp_path):
    (tmp_path / "f").write_bytes(b"hello\n")
    text = format_manifest({"f": HELLO})
    assert text == f"{HELLO}  f\n"  # sha256sum's format
    assert parse_manifest(text) == {"f": HELLO}
    assert verify_manifest(tmp_path, {"f": HELLO}) == []
    problems = verify_manifest(tmp_path, {"f": "0" * 64, "g": HELLO}, present=["f", "h"])
    assert [(p.path, p.kind) for p in problems] == [
        ("f", "changed"),
        ("g", "missing"),
        ("h", "extra"),
    ]
    with pytest.raises(ValueError, match="line 1"):
        parse_manifest("not a manifest\n")


def test_model_identifiers_are_found_anywhere_in_the_config():
    config = {
        "retrieval": {"models": ["bm25", "dense"], "dense_model": "all-MiniLM-L6-v2", "k": 100},
        "ttp": {"base_model": "SmolLM2-135M", "lora": {"r": 8}},
        "seed": 1,
    }
    assert model_identifiers(config) == {
        "retrieval.models": ["bm25", "dense"],
        "retrieval.dense_model": "all-MiniLM-L6-v2",
        "ttp.base_model": "SmolLM2-135M",
    }


def test_artifacts_grouped_by_results_folder():
    produced = {
        "results/data/X/a.parquet": "ingest",
        "results/data/X/b.json": "ingest",
        "results/report/t.csv": "stats",
        "results/paper/generated/t.tex": "stats",
        "results-tiny/report/t.csv": "stats",  # another results root: no provenance folder
    }
    assert artifacts_by_folder(produced, "results") == {
        "data/X": {"a.parquet": "ingest", "b.json": "ingest"},
        "report": {"t.csv": "stats"},
        "paper/generated": {"t.tex": "stats"},
    }


def test_static_dag_follows_inputs_and_leaves_out_temporary_outputs():
    from snakemake.io import temp

    class Rule:  # the part of a Snakemake rule static_dag reads
        def __init__(self, name, inputs, outputs):
            self.name, self.inputs, self.outputs = name, inputs, outputs

        def is_producer(self, path):
            return path in [str(o) for o in self.outputs]

        def get_wildcards(self, path):
            return {}

        def expand_input(self, wildcards):
            return (self.inputs,)

        def expand_output(self, wildcards):
            return (self.outputs,)

    rules = [
        Rule("backbone", [], ["results/m/config.json", temp("results/m/weights.bin")]),
        Rule("train", ["results/m/config.json", "results/m/weights.bin"], ["results/t/a.json"]),
        Rule("all", ["results/t/a.json"], []),
    ]
    assert static_dag(["results/t/a.json"], rules) == {
        "results/t/a.json": "train",
        "results/m/config.json": "backbone",
    }


def test_check_consumed_trusts_job_records_then_provenance(folder, monkeypatch):
    monkeypatch.chdir(folder.parents[2])
    a, b = "results/data/X/a.txt", "results/data/X/b.txt"
    assert check_consumed([a, b], lambda p: False) == []  # both match provenance
    (folder / "a.txt").write_bytes(b"hello world\n")
    # Rewritten by a job Snakemake recorded (e.g. before a crash): accepted.
    assert check_consumed([a], lambda p: True) == []
    # Changed outside the workflow: named.
    assert check_consumed([a], lambda p: False) == [
        Problem(a, "changed", "sha256 a948904f2f0f..., recorded 5891b5b522d5...")
    ]
    os.remove(folder / "provenance.json")
    assert [p.kind for p in check_consumed([b], lambda p: False)] == ["unverifiable"]


def test_hello_constant():
    assert hashlib.sha256(b"hello\n").hexdigest() == HELLO
