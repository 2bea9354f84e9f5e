"""Atomic writes, registries, seeds, fingerprints."""

import gzip
import json
import os

import pandas as pd
import pytest

from personalir.common.fingerprint import diff_fingerprints, fingerprint, fingerprint_tree
from personalir.common.hf_files import stable_tokenizer_config
from personalir.common.io import atomic_open, write_json, write_jsonl, write_parquet
from personalir.common.registry import Registry
from personalir.common.seeding import derive_seed


def test_atomic_open_leaves_no_file_on_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert not target.exists()
    assert os.listdir(tmp_path) == []  # the temporary file is gone too


def test_atomic_open_replaces_existing(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with atomic_open(target) as fh:
        fh.write("new")
    assert target.read_text() == "new"


def test_json_is_deterministic(tmp_path):
    write_json(tmp_path / "a.json", {"b": 1, "a": [1, 2]})
    assert (tmp_path / "a.json").read_text() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'


def test_parquet_bytes_are_deterministic(tmp_path):
    df = pd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    write_parquet(tmp_path / "a.parquet", df)
    write_parquet(tmp_path / "b.parquet", df)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_registry_names_and_errors():
    reg = Registry("retriever")

    @reg.register("bm25")
    class BM25:
        pass

    assert reg.get("bm25") is BM25 and "bm25" in reg and reg.names() == ["bm25"]
    with pytest.raises(KeyError, match="unknown retriever 'dense'; registered: bm25"):
        reg.get("dense")
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("bm25")(BM25)


def test_derive_seed_is_stable():
    # Golden value: sha256-based, independent of PYTHONHASHSEED and process.
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert derive_seed(1, "a") != derive_seed(1, "b") != derive_seed(2, "a")
    assert 0 <= derive_seed(1, "a") < 2**63


def test_fingerprint_kinds(tmp_path):
    write_jsonl(tmp_path / "r.jsonl", [{"i": i} for i in range(20)])
    fp = fingerprint(tmp_path / "r.jsonl")
    assert fp["rows"] == 20 and fp["records"] == {
        "0": {"i": 0},
        "1": {"i": 1},
        "17": {"i": 17},
        "19": {"i": 19},
    }
    write_parquet(tmp_path / "t.parquet", pd.DataFrame({"x": [0.1234567891, 2.0]}))
    fp = fingerprint(tmp_path / "t.parquet")
    assert fp["rows"] == 2 and fp["records"]["0"] == {"x": 0.123457}
    (tmp_path / "c.json").write_text(json.dumps({"a": 1}))
    assert fingerprint(tmp_path / "c.json") == {"kind": "json", "content": {"a": 1}}


def test_fingerprint_run_files_and_timings(tmp_path):
    lines = [f"q{i // 3} Q0 d{i} {i % 3 + 1} {1.0 / (i + 1):.7f} bm25" for i in range(21)]
    with gzip.open(tmp_path / "x.run.gz", "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    (tmp_path / "x.trec").write_text("\n".join(lines) + "\n")
    fp = fingerprint(tmp_path / "x.run.gz")
    assert fp == fingerprint(tmp_path / "x.trec")
    # Golden: 21 lines over q0..q6; line 17 is q5's third document, score 1/18.
    assert fp["kind"] == "trec_run" and fp["rows"] == 21 and fp["queries"] == 7
    assert fp["records"]["17"] == ["q5", "d17", 3, 0.055556, "bm25"]
    (tmp_path / "t.csv").write_text("model,auroc,seconds\na,0.5,1.2\nb,0.6,3.4\n")
    fp = fingerprint(tmp_path / "t.csv")
    assert fp["header"] == "model,auroc" and fp["records"] == {"0": "a,0.5", "1": "b,0.6"}
    (tmp_path / "r.json").write_text(json.dumps({"n": 3, "seconds": 1.5, "load_seconds": 2}))
    assert fingerprint(tmp_path / "r.json")["content"] == {"n": 3}


def test_fingerprint_tree_leaves_out_negated_patterns(tmp_path):
    for name in ("a.jsonl", "search_log.jsonl"):
        write_jsonl(tmp_path / "d" / name, [{"i": 1}])
    assert list(fingerprint_tree(tmp_path, ["d/*.jsonl", "!d/search_log.jsonl"])) == ["d/a.jsonl"]


def test_diff_fingerprints_reports_changes():
    exp = {"a": {"rows": 2}, "b": {"rows": 1}}
    act = {"a": {"rows": 3}, "c": {"rows": 1}}
    assert diff_fingerprints(exp, act) == [
        "a: 3 records, expected 2",
        "b: missing",
        "c: not in the expected fingerprints",
    ]


def test_diff_fingerprints_lets_floats_differ_by_a_cpu_ulp_and_nothing_else():
    # A score on another CPU: the sixth decimal moved (a float32 ulp of the raw score).
    run = {"kind": "trec_run", "rows": 2, "records": {"0": ["q", "d1", 1, 0.983441, "t"]}}
    ulp = {**run, "records": {"0": ["q", "d1", 1, 0.98344, "t"]}}
    assert diff_fingerprints({"r": run}, {"r": ulp}) == []
    moved = {**run, "records": {"0": ["q", "d1", 1, 0.9834, "t"]}}
    assert diff_fingerprints({"r": run}, {"r": moved}) == [
        "r: content differs at /records/0[3]: 0.983441 -> 0.9834"
    ]
    swapped = {**run, "records": {"0": ["q", "d2", 1, 0.983441, "t"]}}
    assert diff_fingerprints({"r": run}, {"r": swapped}) == [
        "r: content differs at /records/0[1]: 'd1' -> 'd2'"
    ]
    # Integers, booleans and hashes stay exact; a key that appears is a difference.
    report = {"kind": "json", "content": {"n": 3, "ok": True, "share": 0.5}}
    for changed in ({"n": 4}, {"ok": False}, {"extra": 1}):
        act = {**report, "content": {**report["content"], **changed}}
        assert diff_fingerprints({"j": report}, {"j": act}), changed
    assert diff_fingerprints({"b": {"sha256": "a"}}, {"b": {"sha256": "b"}})
    assert diff_fingerprints({"r": run}, {"r": ulp}, tol=0.0)


def test_output_folder_from_the_files_a_rule_names(tmp_path):
    from personalir.common.cli import OutputLayoutError, output_folder, require_written

    layout = {"adapter": "adapter/adapter_config.json", "loss": "loss.json"}
    named = {
        "adapter": tmp_path / "sft/adapter/adapter_config.json",
        "loss": tmp_path / "sft/loss.json",
    }
    assert output_folder(named, layout) == tmp_path / "sft"
    with pytest.raises(OutputLayoutError, match="--loss .*writes it as"):
        output_folder({**named, "loss": tmp_path / "other/loss.json"}, layout)
    with pytest.raises(OutputLayoutError, match="--adapter"):
        output_folder({**named, "adapter": tmp_path / "sft/adapter/config.json"}, layout)
    with pytest.raises(OutputLayoutError, match="not written: --adapter .*--loss"):
        require_written(named)
    for path in named.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    require_written(named)


# ----------------------------------------------------------------- same inputs, same bytes
def test_timings_and_cache_counts_go_to_the_log_not_the_artifact(tmp_path, caplog):
    import logging

    from personalir.common.io import drop_volatile_columns, is_volatile, split_volatile

    report = {
        "records": 10,
        "seconds": {"load": 1.5, "train": 2.0},
        "parse_seconds": 0.3,
        "steps_per_s": 4.0,
        "seconds_setup": 1.0,
        "steps_this_run": 3,
        "from_cache": 7,
        "runs": [{"name": "a", "seconds": 0.1, "step_time": 0.2}],
        "timeout_s": 30,  # a setting, not a timing
        "settings": {"max_seconds_unused": 1},
    }
    kept, facts = split_volatile(report)
    assert kept == {
        "records": 10,
        "runs": [{"name": "a"}],
        "timeout_s": 30,
        "settings": {"max_seconds_unused": 1},
    }
    assert facts["seconds"] == {"load": 1.5, "train": 2.0}
    assert facts["runs[0].step_time"] == 0.2 and facts["from_cache"] == 7
    with caplog.at_level(logging.INFO, logger="personalir.common.io"):
        write_json(tmp_path / "r.json", report)
    assert json.loads((tmp_path / "r.json").read_text()) == kept
    assert "run facts of" in caplog.text and '"parse_seconds": 0.3' in caplog.text
    write_json(tmp_path / "bench.json", report, keep_timings=True)
    assert json.loads((tmp_path / "bench.json").read_text()) == report
    frame = pd.DataFrame({"model": ["a"], "auroc": [0.5], "seconds": [1.2]})
    assert list(drop_volatile_columns(tmp_path / "t.csv", frame).columns) == ["model", "auroc"]
    assert not is_volatile("timeout_s") and is_volatile("train_runtime")


def test_adapter_config_modules_are_sorted(tmp_path):
    from personalir.common.causal_lm import stable_adapter_config

    (tmp_path / "adapter_config.json").write_text(
        json.dumps({"r": 8, "target_modules": ["v_proj", "gate_proj", "q_proj"]})
    )
    stable_adapter_config(tmp_path)
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    assert config == {"r": 8, "target_modules": ["gate_proj", "q_proj", "v_proj"]}


def test_saved_tokenizer_bytes_do_not_follow_the_offline_setting(tmp_path):
    """``save_pretrained`` writes ``local_files_only`` as the loading shell's HF_HUB_OFFLINE
    said; the TTP store's model version and the fusion fingerprints hash these files."""
    import subprocess
    import sys

    from personalir.common.models import resolve_model

    source = resolve_model("packaged:all-MiniLM-L6-v2").path
    script = (
        "import sys; from transformers import AutoTokenizer; "
        "from personalir.common.hf_files import stable_tokenizer_config as s; "
        "AutoTokenizer.from_pretrained(sys.argv[1]).save_pretrained(sys.argv[2]); "
        "print(open(sys.argv[2] + '/tokenizer_config.json').read().count('local_files_only')); "
        "s(sys.argv[2]); s(sys.argv[2])"
    )
    saved = {}
    for offline in ("1", "0"):
        env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
        env["HF_HUB_OFFLINE"] = offline
        out = tmp_path / f"offline{offline}"
        done = subprocess.run(
            [sys.executable, "-c", script, str(source), str(out)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == "1"  # transformers wrote the key: the fix has work to do
        saved[offline] = (out / "tokenizer_config.json").read_bytes()
    assert saved["1"] == saved["0"]
    config = json.loads(saved["1"])
    assert "local_files_only" not in config and config["do_lower_case"] is True
    (tmp_path / "bare").mkdir()
    stable_tokenizer_config(tmp_path / "bare")  # no tokenizer saved there: nothing to do


def test_epoch_candidate_metadata_is_one_json_value(tmp_path):
    """safetensors writes several metadata keys in a per-process order; one key is stable."""
    import torch
    from safetensors import safe_open

    from personalir.ttp.training.sft import epoch_candidates, save_candidate

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))

    save_candidate(tmp_path / "epoch-000001.safetensors", Model(), "key", 3, 1.0)
    with safe_open(str(tmp_path / "epoch-000001.safetensors"), framework="pt") as fh:
        assert list(fh.metadata()) == ["personalir"]
    assert epoch_candidates(tmp_path, "key") == [
        {"epoch": 1.0, "step": 3, "path": tmp_path / "epoch-000001.safetensors"}
    ]


def test_write_records_apply_to_the_file_its_writer_created(tmp_path):
    from personalir.common.io import written_record

    target = tmp_path / "a.json"
    write_json(target, {"v": 1})
    record = written_record(target)
    assert record and record["bytes"] == target.stat().st_size
    os.utime(target)  # Snakemake touches every output after its job: the same file
    assert written_record(target) == record
    target.write_bytes(target.read_bytes())  # rewritten in place (same inode)
    assert written_record(target) == record
    copy = tmp_path / "copy.json"
    copy.write_bytes(target.read_bytes())
    os.replace(copy, target)  # replaced by another file (a DVC checkout): no longer applies
    assert written_record(target) is None
