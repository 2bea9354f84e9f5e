"""Integrity, tried as a hostile tester would: each test reproduces one way bad bytes, bad input
or a bad configuration used to get through, through the project's real entry points.

- caches verify what they serve: 200 single-bit flips of a correction-cache segment, of an
  encoding-cache entry and of the judge's SQLite cache; never a wrong hit, never a crash, every
  damaged entry recomputed; a flipped weight in the model cache is named, and the model
  dequantised again;
- ingest refuses implausible data: the ingest rule's script on timestamps in seconds, an empty
  file (both policies), a duplicate JSON key, a changed input format (the quarantine rate);
- the configuration refuses unsafe or contradictory values when the workflow starts
  (``snakemake -n``), naming the file and line: an empty or escaping ``results_dir``, a float
  where an integer belongs, a key given twice, ``min_per_user`` above ``max_per_user``; with
  three overlays the one that sets the value, and ``--config``; a ``results_dir`` that is an
  existing file or a tool folder, a path holding a blank, ``;`` or ``$(...)``;
- secrets and caches: an API key is not sent over plain http to another host, and a model
  cache that cannot be read is reported, not taken for a cache miss;
- corruption is caught, never laundered: in a finished tiny run, one flipped byte (mtime kept)
  in each artifact kind (Parquet, JSONL, NPZ, safetensors, ``.run.gz``) stops the next run
  that would read them, naming each file, also where the folder's provenance record is gone;
  the ``provenance`` rule refuses to hash a changed file into a record; Parquet page checksums
  name a file whose data page was damaged; a killed writer's temporary files are removed by
  the next write of the same target;
- same inputs, same bytes: the tiny configuration run again with another hash seed and
  another number of parallel jobs writes byte-identical artifacts.

The bad-record corpus of the ingest step (one data-driven test, every reason) is in
``tests/unit/test_ingest.py``; the static security lint is ``tests/unit/test_bandit.py``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from personalir.common.config import REPO_ROOT, validate_config

pytestmark = pytest.mark.integration

PY = sys.executable
FLIPS = 200


def _flip_bit(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    pos = rnd.randrange(len(out))
    out[pos] ^= 1 << rnd.randrange(8)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Caches verify what they serve


def test_correction_cache_never_serves_a_flipped_bit(tmp_path):
    """The reproduction found 14 wrong corrections and 26 crashes in 200 single-bit flips."""
    from personalir.errors.cache import CorrectionCache

    pairs = [
        (f"the sentense number {i} is hear", f"The sentence number {i} is here.") for i in range(40)
    ]
    want = dict(pairs)
    clean = tmp_path / "clean"
    cache = CorrectionCache(clean, "b", "f" * 64)
    cache.put_many(pairs)
    cache.flush()
    (segment,) = sorted(cache.dir.glob("seg-*.parquet"))
    original = segment.read_bytes()
    rnd = random.Random(20)
    wrong = misses = 0
    for _ in range(FLIPS):
        segment.write_bytes(_flip_bit(original, rnd))
        fresh = CorrectionCache(clean, "b", "f" * 64)  # must not raise
        for sentence, _ in pairs:
            got = fresh.get(sentence)
            wrong += got is not None and got != want[sentence]
            misses += got is None
        info = fresh.describe()
        assert len(fresh) + info["dropped_rows"] <= len(pairs) or info["unreadable_segments"]
    assert wrong == 0
    assert misses > 0  # the flips did damage something, which was dropped, not served
    segment.write_bytes(original)
    assert CorrectionCache(clean, "b", "f" * 64).get(pairs[0][0]) == pairs[0][1]


def test_encoding_cache_never_serves_a_flipped_bit(tmp_path):
    from personalir.retrieval.encodings import EncodingCache

    key = {"encoder": "dense", "model": "m", "threads": 1}
    texts = ["a red guitar strap", "a blue capo"]
    good = np.linspace(-1, 1, 2 * 16, dtype=np.float32).reshape(2, 16)
    EncodingCache(tmp_path).dense(key, texts, lambda: good)
    path = EncodingCache(tmp_path).path(key, texts, ".npy")
    original = path.read_bytes()
    rnd = random.Random(21)
    recomputed = 0
    for _ in range(FLIPS):
        path.write_bytes(_flip_bit(original, rnd))
        cache = EncodingCache(tmp_path)
        value = cache.dense(key, texts, lambda: good.copy())
        np.testing.assert_array_equal(value, good)
        recomputed += cache.stats()["recomputed"]
        path.write_bytes(original)
    assert recomputed == FLIPS  # every flipped entry was detected (and rewritten)


def test_judge_cache_never_serves_or_raises_on_a_flipped_byte(tmp_path, caplog):
    """The reproduction: 5 of 200 single-byte flips of the judge's SQLite cache ended in an
    uncaught DatabaseError or UnicodeDecodeError that named no file."""
    import logging

    from personalir.validation.judge import ResponseCache

    records = {f"key-{i:03d}": {"content": f'{{"rating": {1 + i % 5}}}', "n": i} for i in range(60)}
    clean = tmp_path / "clean.sqlite"
    cache = ResponseCache(clean)
    for key, record in records.items():
        cache.put(key, record)
    cache.close()
    original = clean.read_bytes()
    rnd = random.Random(22)
    wrong = dropped = rebuilt = 0
    for n in range(FLIPS):
        damaged = tmp_path / f"flip-{n}.sqlite"
        data = bytearray(original)
        data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        damaged.write_bytes(bytes(data))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="personalir.validation.response_cache"):
            fresh = ResponseCache(damaged)  # must not raise
            for key, record in records.items():
                got = fresh.get(key)
                wrong += got is not None and got != record
                if got is None:
                    fresh.put(key, record)  # asked again: the answer is stored anew
            assert all(fresh.get(key) == record for key, record in records.items())
            assert len(fresh) >= len(records)  # a flipped key leaves an entry no one asks for
        rebuilt_now = getattr(fresh, "rebuilt", 0)
        if fresh.corrupt or rebuilt_now:
            assert str(damaged) in caplog.text  # the damage is named with its file
        dropped += fresh.corrupt
        rebuilt += rebuilt_now
        fresh.close()
        damaged.unlink()
    assert wrong == 0
    assert dropped + rebuilt > 0  # the flips did damage something, which was never served


@pytest.mark.slow
def test_model_cache_never_serves_a_flipped_weight(tmp_path, caplog):
    """The reproduction: one flipped byte in ``results/model_cache/`` changed a layer-0 weight
    of the dequantised SmolLM2 from 0.6747 to 0.0026, and every job went on with no warning."""
    import logging

    import torch

    from personalir.common.causal_lm import gguf_cache_key, load_causal_lm
    from personalir.common.models import resolve_model

    ref = resolve_model("packaged:SmolLM2-135M-Instruct")
    model, _ = load_causal_lm(ref, cache_dir=tmp_path)
    name = "model.layers.0.self_attn.q_proj.weight"
    good = model.state_dict()[name].clone()
    del model
    weights = tmp_path / gguf_cache_key(ref) / "model.safetensors"
    data = bytearray(weights.read_bytes())
    size = int.from_bytes(data[:8], "little")
    start = 8 + size + json.loads(data[8 : 8 + size])[name]["data_offsets"][0]
    st = weights.stat()
    data[start + 3] ^= 0x20  # an exponent bit of the tensor's first float32
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    with caplog.at_level(logging.WARNING):
        again, _ = load_causal_lm(ref, cache_dir=tmp_path)
    assert "model.safetensors does not match its recorded sha256" in caplog.text
    assert str(weights.parent) in caplog.text
    assert torch.equal(again.state_dict()[name], good)  # dequantised again, never served


# ---------------------------------------------------------------------------------------------
# Ingest refuses implausible data (the ingest rule's own script)


def _review(i: int, **over) -> dict:
    rec = {
        "rating": 5.0,
        "title": f"title {i}",
        "text": f"Review {i}. It works.",
        "images": [],
        "asin": f"B{i:09d}",
        "parent_asin": f"B{i % 7:09d}",
        "user_id": f"AUSER{i:06d}",
        "timestamp": 1_600_000_000_000 + i,
        "helpful_vote": 0,
        "verified_purchase": True,
    }
    rec.update(over)
    return rec


def _ingest(tmp_path: Path, body: bytes, **params) -> subprocess.CompletedProcess:
    src = tmp_path / "Reviews.jsonl"
    src.write_bytes(body)
    settings = {**validate_config({})["data"]["ingest"], **params}
    cmd = [
        PY,
        str(REPO_ROOT / "workflow_scripts" / "ingest.py"),
        "--table",
        "reviews",
        "--input",
        str(src),
        "--params",
        json.dumps(settings),
        "--output",
        str(tmp_path / "reviews.parquet"),
        "--quality",
        str(tmp_path / "reviews.quality.json"),
        "--quarantine",
        str(tmp_path / "reviews.quarantine.jsonl"),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT)


def _lines(records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_ingest_stops_on_timestamps_in_seconds(tmp_path):
    """A file whose timestamps are seconds (a changed export) used to pass as 1970 reviews."""
    records = [_review(i, timestamp=1_600_000_000 + i) for i in range(50)]
    done = _ingest(tmp_path, _lines(records))
    assert done.returncode != 0
    assert "quarantine_rate: 50 of 50 lines (100.0%)" in done.stderr
    assert "implausible_timestamp: 50" in done.stderr
    assert not (tmp_path / "reviews.parquet").exists()


def test_ingest_quarantines_a_few_implausible_lines_and_counts_them(tmp_path):
    records = [_review(i) for i in range(60)]
    records[3] = _review(3, timestamp=1_600_000_000)  # seconds
    records[9] = _review(9, rating=4.5)
    records[17] = _review(17, title="\u200b")
    records[21] = _review(21, user_id="AUSER 21")
    body = _lines(records).replace(
        b'{"rating": 5.0, "title": "title 30"',
        b'{"rating": 1.0, "rating": 5.0, "title": "title 30"',
    )
    done = _ingest(tmp_path, body, max_quarantine_fraction=0.1)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "reviews.quality.json").read_text())
    assert report["quarantined_by_reason"] == {
        "bad_id": 1,
        "duplicate_key": 1,
        "empty_title": 1,
        "implausible_timestamp": 1,
        "non_integral_rating": 1,
    }
    assert report["records_written"] == 55
    quarantined = [json.loads(x) for x in (tmp_path / "reviews.quarantine.jsonl").open()]
    assert [q["line"] for q in quarantined] == [4, 10, 18, 22, 31]
    assert "seconds, not ms?" in quarantined[0]["detail"]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("strict", "empty_input: the file holds no lines"),
        ("quarantine", "0 reviews; 0 line(s) read, 0 quarantined (the file is empty)"),
    ],
)
def test_ingest_of_an_empty_file_says_so(tmp_path, policy, message):
    done = _ingest(tmp_path, b"", policy=policy)
    assert done.returncode != 0 and message in done.stderr
    assert "KeyError" not in done.stderr and "Traceback" not in done.stderr


def test_ingest_caps_the_line_size(tmp_path):
    records = [_review(i) for i in range(40)]
    records[5] = _review(5, text="word " * 400)
    done = _ingest(tmp_path, _lines(records), max_line_bytes=1000)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "reviews.quality.json").read_text())
    assert report["quarantined_by_reason"] == {"line_too_long": 1}
    (q,) = [json.loads(x) for x in (tmp_path / "reviews.quarantine.jsonl").open()]
    assert q["raw_truncated"] is True and len(q["raw"]) == 1001  # the bytes read: cap + 1


# ---------------------------------------------------------------------------------------------
# The configuration refuses unsafe or contradictory values at workflow start


def _dry_run(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    """``snakemake -n`` with ``args``, then ``--configfile`` and a file holding ``text``
    (``args`` may end in other config files: they come before it)."""
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    snakemake = shutil.which("snakemake", path=str(Path(PY).parent)) or "snakemake"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    configfiles = [str(cfg)] if "--configfile" in args else ["--configfile", str(cfg)]
    return subprocess.run(
        [snakemake, "-n", "--nolock", "--cores", "1", *args, *configfiles],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )


def test_workflow_refuses_unsafe_and_contradictory_config(tmp_path):
    """``results_dir: ""`` used to plan writes at the filesystem root, ``../x`` outside the
    repository; ``min_per_user`` above ``max_per_user`` ran and selected nobody."""
    done = _dry_run(
        tmp_path,
        'seed: 1\nresults_dir: ""\ndata:\n  sentences:\n    min_per_user: 90\n',
    )
    assert done.returncode != 0
    err = done.stderr + done.stdout
    assert f"{tmp_path}/bad.yaml:2: config key 'results_dir': '' is empty" in err
    assert (
        f"{tmp_path}/bad.yaml:5: config key 'data.sentences.min_per_user': 90 must be at most "
        "'data.sentences.max_per_user' (50)" in err
    )
    assert "Job stats" not in err  # nothing was planned


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "results_dir: ../outside\n",
            "bad.yaml:1: config key 'results_dir': '../outside' has a '..' part",
        ),
        ("results_dir: /tmp/abs\n", "bad.yaml:1: config key 'results_dir': '/tmp/abs' is absolute"),
        ("threads: 7.0\n", "bad.yaml:1: config key 'threads': 7.0 is not of type 'integer'"),
        (
            "seed: 1\nthreads: 2\nthreads: 3\n",
            "bad.yaml:3: config key 'threads' is given twice (first at line 2)",
        ),
    ],
    ids=["dotdot", "absolute", "float_integer", "duplicate_key"],
)
def test_workflow_names_the_file_and_line_of_a_bad_value(tmp_path, text, expected):
    done = _dry_run(tmp_path, text)
    assert done.returncode != 0 and expected in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--configfile", "config/config.yaml", "config/tiny.yaml"),
            "bad.yaml:2: config key 'threads': -1 is less than the minimum of 1",
        ),
        (
            ("--config", "threads=-1", "--configfile", "config/config.yaml", "config/tiny.yaml"),
            "--config: config key 'threads': -1 is less than the minimum of 1",
        ),
    ],
    ids=["third_overlay", "command_line"],
)
def test_the_overlay_that_sets_a_bad_value_is_named(tmp_path, args, expected):
    """With three overlays (config.yaml, tiny.yaml, bad.yaml) the error used to name
    ``config/config.yaml:7``, whose line says ``threads: 2``: the files were searched in the
    order they were loaded, not the order in which they win."""
    done = _dry_run(tmp_path, "seed: 3\nthreads: -1\n", *args)
    err = done.stderr + done.stdout
    assert done.returncode != 0 and expected in err, err[-3000:]
    assert "config/config.yaml:" not in err and "config/tiny.yaml:" not in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "results_dir: README.md\n",
            "bad.yaml:1: config key 'results_dir': 'README.md' is an existing file, not a folder",
        ),
        ("results_dir: .snakemake\n", "names a hidden folder ('.snakemake')"),
        (
            'results_dir: "res$(touch pwned)"\n',
            "bad.yaml:1: config key 'results_dir': 'res$(touch pwned)' holds '$( )'",
        ),
        (
            'data:\n  source: local\n  local_dir: "my raw;data"\n',
            "bad.yaml:3: config key 'data.local_dir': 'my raw;data' holds ' ;'",
        ),
    ],
    ids=["existing_file", "tool_folder", "shell_substitution", "blank_and_semicolon"],
)
def test_workflow_refuses_unsafe_paths(tmp_path, text, expected):
    """``results_dir: README.md`` ended in a NotADirectoryError traceback; a ``$(...)``, blank
    or ``;`` in a path reached the rules' shell commands."""
    done = _dry_run(tmp_path, text)
    err = done.stderr + done.stdout
    assert done.returncode != 0 and expected in err, err[-3000:]
    assert "Traceback" not in err and "Job stats" not in err
    assert not (REPO_ROOT / "pwned").exists()


# ---------------------------------------------------------------------------------------------
# Secrets and caches


def test_api_key_not_sent_over_plain_http(monkeypatch):
    from personalir.ttp.training.teacher import OpenAICompatibleTeacher

    monkeypatch.setenv("INTEGRITY_KEY", "sk-secret")
    with pytest.raises(ValueError, match="only over https"):
        OpenAICompatibleTeacher(
            base_url="http://teacher.example.org/v1", model="m", api_key_env="INTEGRITY_KEY"
        )
    OpenAICompatibleTeacher(
        base_url="http://127.0.0.1:9/v1", model="m", api_key_env="INTEGRITY_KEY"
    )  # loopback is fine


def test_an_unreadable_model_cache_is_reported(monkeypatch, tmp_path):
    import huggingface_hub

    from personalir.common.models import ModelNotAvailableError, resolve_model

    cache = tmp_path / "hub"
    cache.mkdir()
    os.chmod(cache, 0)

    def lookup(repo_id, **kw):
        raise PermissionError(f"[Errno 13] Permission denied: '{cache}'")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lookup)
    try:
        with pytest.raises(ModelNotAvailableError, match="reading the local cache failed"):
            resolve_model("BAAI/bge-m3")
    finally:
        os.chmod(cache, 0o755)


# ---------------------------------------------------------------------------------------------
# Corruption is caught, never laundered

# One artifact of each kind in the tiny run, each read by a later rule.
VICTIMS = {
    "parquet": "data/Musical_Instruments/reviews.parquet",
    "jsonl": "sample_world/Musical_Instruments/Musical_Instruments.jsonl",
    "npz": "syntax/Musical_Instruments/rule_vectors.npz",
    "safetensors": "syntax/Musical_Instruments/encoder.safetensors",
    "run.gz": "retrieval/Musical_Instruments/bm25.run.gz",
}


@pytest.mark.tiny_run
@pytest.mark.slow
def test_a_flipped_byte_in_any_artifact_stops_the_run_naming_it(tiny_run, tmp_path):
    from .tiny import TINY_RESULTS, flip_byte, linked_copy, run_tiny

    work = linked_copy(tiny_run["work"], tmp_path / "flipped")
    results = work / TINY_RESULTS
    for rel in VICTIMS.values():
        flip_byte(results / rel)
    # Rerunning every folder's provenance job reads every artifact: the case where a re-hash
    # used to launder the flipped files into fresh records.
    before = {p: p.read_bytes() for p in results.rglob("provenance.json")}
    proc = run_tiny(work, "--forcerun", "provenance")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "artifacts changed outside the workflow" in out
    for kind, rel in VICTIMS.items():
        assert f"CHANGED {TINY_RESULTS}/{rel}" in out, (kind, out[-3000:])
    assert {p: p.read_bytes() for p in results.rglob("provenance.json")} == before


@pytest.mark.slow
def test_a_bit_rotted_artifact_is_caught_without_its_folders_provenance(tmp_path):
    """A folder whose provenance record is not written yet (a run killed before it): the
    record the file's writer left still names the damaged file, and no record is written
    over it. The damage is done in place, as bit rot does (same file, same mtime)."""
    from .small_run import DATA_TARGETS, DOMAIN, local_run, small_workflow

    work = small_workflow(tmp_path / "rot")
    local_run(work, *DATA_TARGETS)
    victim = work / "results" / "data" / DOMAIN / "reviews.parquet"
    record = work / "results" / "data" / DOMAIN / "provenance.json"
    st = victim.stat()
    with open(victim, "r+b") as fh:
        fh.seek(st.st_size // 2)
        byte = fh.read(1)
        fh.seek(st.st_size // 2)
        fh.write(bytes([byte[0] ^ 0x10]))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    record.unlink()
    proc = local_run(work, *DATA_TARGETS, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"CHANGED results/data/{DOMAIN}/reviews.parquet" in out, out[-3000:]
    assert not record.exists()


def test_provenance_refuses_to_record_a_changed_file(tmp_path):
    from personalir.common.io import write_json

    folder = tmp_path / "results" / "x"
    write_json(folder / "a.json", {"value": 1})
    st = (folder / "a.json").stat()
    (folder / "a.json").write_text('{\n  "value": 2\n}\n')  # same length, other bytes
    os.utime(folder / "a.json", ns=(st.st_atime_ns, st.st_mtime_ns))
    proc = subprocess.run(
        [
            PY,
            str(REPO_ROOT / "workflow_scripts" / "provenance.py"),
            "--folder",
            str(folder),
            "--artifacts",
            '{"a.json": "rule_a"}',
            "--config-sha256",
            "0" * 64,
            "--label",
            "t",
            "--models",
            "{}",
            "--output",
            str(folder / "provenance.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode != 0
    assert f"{folder / 'a.json'}: changed" in proc.stderr
    assert not (folder / "provenance.json").exists()


def test_parquet_page_checksums_name_a_damaged_file(tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq

    from personalir.common.io import (
        CorruptArtifact,
        read_parquet,
        read_parquet_table,
        write_parquet,
    )

    path = tmp_path / "t.parquet"
    frame = pd.DataFrame({"ts": np.arange(1_000, dtype=np.int64) * 1_000_003})
    write_parquet(path, frame)
    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    # A byte inside the column chunk's last data page (past its page header).
    start = column.dictionary_page_offset if column.has_dictionary_page else None
    start = start or column.data_page_offset
    data[start + column.total_compressed_size - 16] ^= 0x20
    path.write_bytes(bytes(data))
    for reader in (read_parquet, read_parquet_table):
        with pytest.raises(CorruptArtifact, match=f"{path}: not a readable Parquet file"):
            reader(path)


def test_a_killed_writers_temporary_files_are_removed_by_the_next_write(tmp_path):
    from personalir.common.io import temp_prefix, write_json

    target = tmp_path / "out" / "report.json"
    target.parent.mkdir()
    # What a writer killed mid-write leaves: its temporary file, named after its (gone) pid.
    dead = subprocess.run(
        [PY, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stale = target.parent / temp_prefix(target).replace(f"-{os.getpid()}-", f"-{dead}-")
    stale = stale.with_name(stale.name + "abc123.tmp")
    stale.write_text("half")
    live = target.parent / (temp_prefix(target) + "live.tmp")  # this process: still writing
    live.write_text("busy")
    other = target.parent / ".other.json.tmp-elsewhere-1-x.tmp"
    other.write_text("not ours")
    write_json(target, {"ok": True})
    assert not stale.exists()
    assert live.exists() and other.exists()
    assert json.loads(target.read_text()) == {"ok": True}


# ---------------------------------------------------------------------------------------------
# Same inputs, same bytes


def tracked_outputs(work) -> dict[str, str]:
    """sha256 of every artifact the workflow records (each folder's provenance.json entries and
    the records themselves): what DVC tracks. Caches (model, encoding and judge caches, keyed
    by file times or filled in job order) are not among them."""
    from personalir.common.provenance import build_manifest

    from .tiny import TINY_RESULTS

    paths = []
    for record in sorted((work / TINY_RESULTS).rglob("provenance.json")):
        folder = record.parent.relative_to(work)
        paths.append(record.relative_to(work).as_posix())
        paths += [(folder / n).as_posix() for n in json.loads(record.read_text())["artifacts"]]
    return build_manifest(work, paths)


@pytest.mark.tiny_run
@pytest.mark.slow
def test_tiny_run_again_with_another_hash_seed_and_job_count_gives_the_same_bytes(
    tiny_run, tmp_path
):
    from .small_run import must
    from .tiny import run_tiny
    from .workflow import copy_workflow

    work = copy_workflow(tmp_path / "again")
    must(run_tiny(work, "--cores", "3", PYTHONHASHSEED="4242"))
    first, second = tracked_outputs(tiny_run["work"]), tracked_outputs(work)
    assert len(first) > 200 and any(p.endswith("paper/ttp.pdf") for p in first)
    assert sorted(first) == sorted(second)
    differ = sorted(p for p in first if first[p] != second[p])
    assert not differ, differ
