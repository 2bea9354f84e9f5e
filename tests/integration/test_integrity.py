"""Integrity, tried as a hostile tester would: each test reproduces one way bad bytes, bad input
or a bad configuration used to get through, through the project's real entry points.

- caches verify what they serve: 200 single-bit flips of a correction-cache segment and of an
  encoding-cache entry; never a wrong hit, never a crash, every damaged entry recomputed;
- ingest refuses implausible data: the ingest rule's script on timestamps in seconds, an empty
  file (both policies), a duplicate JSON key, a changed input format (the quarantine rate);
- the configuration refuses unsafe or contradictory values when the workflow starts
  (``snakemake -n``), naming the file and line: an empty or escaping ``results_dir``, a float
  where an integer belongs, a key given twice, ``min_per_user`` above ``max_per_user``;
- secrets and caches: an API key is not sent over plain http to another host, and a model
  cache that cannot be read is reported, not taken for a cache miss.

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
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)


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


def _dry_run(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    snakemake = shutil.which("snakemake", path=str(Path(PY).parent)) or "snakemake"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    return subprocess.run(
        [snakemake, "-n", "--nolock", "--cores", "1", "--configfile", str(cfg)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=300,
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


# ---------------------------------------------------------------------------------------------
# Secrets and caches


def test_api_key_not_sent_over_plain_http(monkeypatch):
    from personalir.ttp.teacher import OpenAICompatibleTeacher

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
