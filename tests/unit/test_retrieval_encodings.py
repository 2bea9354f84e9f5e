"""The encoding cache shared by retrieval runs: what it keys on, and that a run reading
another run's encodings ranks exactly as one that computes them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from personalir.retrieval.base import QueryText, RunSettings
from personalir.retrieval.corpus import corpus_from_texts
from personalir.retrieval.dense import DenseRetriever
from personalir.retrieval.encodings import EncodingCache
from personalir.retrieval.hybrid import FusedDenseSparseRetriever
from personalir.retrieval.sparse import SpladeRetriever
from personalir.workflow import support as workflow_support
from tests.fixtures import models as tm

TEXTS = [
    "Lunar Labs controller charging station, midnight black.",
    "Stormbyte charging station for Xbox Series X, white.",
    "HexaCore thumb grips for PC, red.",
    "Arcbolt wired gamepad for PC, blue.",
    "Blitzwave wireless headset with microphone, camo.",
]
CORPUS = corpus_from_texts([f"B{i:03d}" for i in range(len(TEXTS))], TEXTS)
QUERIES = [
    QueryText("q1", "lunar labs charging station", "D"),
    QueryText("q2", "wired arcbolt gamepad", "D"),
    QueryText("q3", "headset microphone", "D"),
]
KEY = {"encoder": "dense", "model": "m", "threads": 1}


def test_dense_entries_round_trip_and_count_hits(tmp_path):
    cache = EncodingCache(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return np.arange(6, dtype=np.float32).reshape(2, 3)

    first = cache.dense(KEY, ["a", "b"], compute)
    second = cache.dense(KEY, ["a", "b"], compute)
    assert len(calls) == 1 and cache.stats() == {
        "hits_this_run": 1,
        "misses_this_run": 1,
        "recomputed": 0,
    }
    np.testing.assert_array_equal(first, second)
    assert second.dtype == np.float32
    # the entry and its checksum; no temporary file left
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".npy", ".sha256"]


@pytest.mark.parametrize(
    "other",
    [
        ({**KEY, "threads": 2}, ["a", "b"]),  # a setting differs
        (KEY, ["b", "a"]),  # same texts, other order
        (KEY, ["ab", ""]),  # same characters, other split
    ],
)
def test_entries_differ_by_every_input(tmp_path, other):
    cache = EncodingCache(tmp_path)
    assert cache.path(KEY, ["a", "b"], ".npy") != cache.path(*other, ".npy")


def test_sparse_entries_round_trip(tmp_path):
    cache = EncodingCache(tmp_path)
    matrix = sp.csr_matrix(np.array([[0, 1.5, 0], [2.0, 0, 0]], dtype=np.float32))
    cache.sparse({**KEY, "encoder": "splade"}, ["a", "b"], lambda: matrix)
    read = cache.sparse({**KEY, "encoder": "splade"}, ["a", "b"], lambda: pytest.fail("computed"))
    assert (read != matrix).nnz == 0 and read.dtype == np.float32


def test_a_damaged_entry_is_recomputed(tmp_path):
    cache = EncodingCache(tmp_path)
    path = cache.path(KEY, ["a"], ".npy")
    path.write_bytes(b"not an array")
    value = cache.dense(KEY, ["a"], lambda: np.ones((1, 2), dtype=np.float32))
    assert value.shape == (1, 2) and cache.stats() == {
        "hits_this_run": 0,
        "misses_this_run": 1,
        "recomputed": 1,
    }
    np.testing.assert_array_equal(np.load(path), value)


def _damage(kind, path, other):
    data = bytearray(path.read_bytes())
    if kind == "bit_flip":  # one bit of the last float: still a valid .npy of the right shape
        data[-1] ^= 0x01
        path.write_bytes(bytes(data))
    elif kind == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif kind == "swapped":  # another entry's file and checksum moved into this one's place
        path.write_bytes(other.read_bytes())
        path.with_name(path.name + ".sha256").write_bytes(
            other.with_name(other.name + ".sha256").read_bytes()
        )
    elif kind == "no_checksum":
        path.with_name(path.name + ".sha256").unlink()


@pytest.mark.parametrize("kind", ["bit_flip", "truncated", "swapped", "no_checksum"])
def test_a_corrupted_entry_is_never_served(tmp_path, kind):
    cache = EncodingCache(tmp_path)
    good = np.arange(4, dtype=np.float32).reshape(2, 2)
    cache.dense(KEY, ["a", "b"], lambda: good)
    cache.dense(KEY, ["c", "d"], lambda: good + 100)
    path, other = cache.path(KEY, ["a", "b"], ".npy"), cache.path(KEY, ["c", "d"], ".npy")
    _damage(kind, path, other)
    fresh = EncodingCache(tmp_path)
    value = fresh.dense(KEY, ["a", "b"], lambda: good.copy())
    np.testing.assert_array_equal(value, good)
    assert fresh.stats() == {"hits_this_run": 0, "misses_this_run": 1, "recomputed": 1}
    # and it was repaired: the next read is a verified hit
    again = EncodingCache(tmp_path)
    np.testing.assert_array_equal(
        again.dense(KEY, ["a", "b"], lambda: pytest.fail("computed")), good
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_models")
    words = tm.vocabulary(TEXTS + [q.text for q in QUERIES])
    return {
        "splade": str(tm.save_splade(root / "splade", words)),
        "dense": str(tm.save_bert_encoder(root / "dense", words)),
    }


def _fused(tiny, settings):
    params = {"dense_model": tiny["dense"], "sparse_model": tiny["splade"]}
    retriever = FusedDenseSparseRetriever(params=params, settings=settings)
    retriever.index(CORPUS)
    return retriever, retriever.rank(QUERIES, 5)


def test_the_fused_run_reads_its_members_encodings_and_ranks_the_same(tiny, tmp_path):
    settings = RunSettings(threads=1, batch_size=2, encoding_cache=str(tmp_path / "enc"))
    for kind, model in ((DenseRetriever, tiny["dense"]), (SpladeRetriever, tiny["splade"])):
        member = kind(model, settings=settings)
        member.index(CORPUS)
        member.rank(QUERIES, 5)
        assert member.encoder.cache.stats() == {
            "hits_this_run": 0,
            "misses_this_run": 2,
            "recomputed": 0,
        }

    fused, shared = _fused(tiny, settings)
    assert fused.dense.encoder.cache.stats() == {
        "hits_this_run": 2,
        "misses_this_run": 0,
        "recomputed": 0,
    }
    assert fused.sparse.encoder.cache.stats() == {
        "hits_this_run": 2,
        "misses_this_run": 0,
        "recomputed": 0,
    }
    # Every encoding came from the cache, so neither model was loaded.
    assert "model" not in vars(fused.dense.encoder)
    assert "_loaded" not in vars(fused.sparse.encoder)
    _, alone = _fused(tiny, dataclasses.replace(settings, encoding_cache=None))
    assert shared == alone


def test_another_setting_does_not_read_the_entry(tiny, tmp_path):
    settings = RunSettings(threads=1, batch_size=2, encoding_cache=str(tmp_path))
    DenseRetriever(tiny["dense"], settings=settings).index(CORPUS)
    other = DenseRetriever(tiny["dense"], params={"max_length": 8}, settings=settings)
    other.index(CORPUS)
    assert other.encoder.cache.stats() == {
        "hits_this_run": 0,
        "misses_this_run": 1,
        "recomputed": 0,
    }


def _retrieval(**extra):
    return {
        "use": ["bm25", "splade_tiny", "minilm", "fused", "other_dense"],
        "run_files": {},
        "retrievers": {
            "bm25": {"type": "bm25"},
            "splade_tiny": {"type": "splade", "model": "packaged:splade-tiny"},
            "minilm": {"type": "dense"},  # the dense default model
            "fused": {"type": "fused_dense_sparse"},
            "other_dense": {"type": "dense", "model": "thenlper/gte-base"},
        },
        **extra,
    }


def test_the_workflow_runs_the_fused_job_after_its_members():
    donors = workflow_support.retrieval_encoding_donors
    assert donors(_retrieval(), "fused") == ["splade_tiny", "minilm"]
    assert donors(_retrieval(), "minilm") == []
    assert donors(_retrieval(encoding_cache=False), "fused") == []
