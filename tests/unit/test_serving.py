"""The personalised embedding cache and its routing (personalir.ttp.methods.serving)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from personalir.ttp.methods.serving import (
    CachedServer,
    StoreError,
    hit_rate,
    open_store,
    query_key,
    write_store,
)

V1 = "ttp-adapter:sha256:aaaa"
E = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)


@pytest.fixture
def store_dir(tmp_path):
    folder = tmp_path / "store"
    write_store(folder, ["u1", "u1", "u2"], ["Guitar  Strap", "capo", "tuner"], E, model_version=V1)
    return folder


def student_of(dim, value=7.0):
    calls = []

    def student(users, queries):
        calls.append(list(zip(users, queries, strict=True)))
        return np.full((len(users), dim), value, dtype=np.float32)

    return student, calls


def test_hits_come_from_the_store_and_misses_from_the_student(store_dir):
    store = open_store(store_dir, model_version=V1)
    assert len(store) == 3 and store.dim == 3
    student, calls = student_of(3)
    server = CachedServer(store, student)
    out = server.embed(["u1", "u2", "u1", "u3"], ["guitar strap", "tuner", "pick", "capo"])
    np.testing.assert_array_equal(out[0], E[0])  # spaces and capitals do not matter
    np.testing.assert_array_equal(out[1], E[2])
    np.testing.assert_array_equal(out[2], np.full(3, 7.0))  # u1 never searched "pick"
    np.testing.assert_array_equal(out[3], np.full(3, 7.0))  # "capo" is u1's, not u3's
    assert calls == [[("u1", "pick"), ("u3", "capo")]]  # one batch of the misses only
    assert (server.hits, server.misses, server.hit_rate()) == (2, 2, 0.5)
    assert server.routes == ["cache", "cache", "student", "student"]


def test_all_hits_never_call_the_student(store_dir):
    student, calls = student_of(3)
    server = CachedServer(open_store(store_dir, model_version=V1), student)
    server.embed(["u1"], ["capo"])
    assert calls == [] and server.hit_rate() == 1.0


def test_hit_rate_without_serving(store_dir):
    store = open_store(store_dir, model_version=V1)
    rate = hit_rate(store, [("u1", "CAPO"), ("u2", "capo"), ("u2", "tuner ")])
    assert rate == {"requests": 3, "hits": 2, "misses": 1, "hit_rate": pytest.approx(2 / 3)}
    assert hit_rate(store, [])["hit_rate"] is None


def test_a_store_of_another_model_version_is_refused(store_dir):
    with pytest.raises(StoreError, match="built by model version .*aaaa.*not 'ttp-adapter:v2'"):
        open_store(store_dir, model_version="ttp-adapter:v2")


def test_damaged_or_swapped_files_are_refused(store_dir, tmp_path):
    other = tmp_path / "other"
    write_store(other, ["u9"], ["x"], E[:1], model_version=V1)
    (store_dir / "embeddings.parquet").write_bytes((other / "embeddings.parquet").read_bytes())
    with pytest.raises(StoreError, match="not the file .*store.json records"):
        open_store(store_dir, model_version=V1)
    meta = json.loads((other / "store.json").read_text())
    (other / "store.json").write_text(json.dumps({**meta, "format": "x"}))
    with pytest.raises(StoreError, match="format 'x'"):
        open_store(other, model_version=V1)
    (other / "store.json").write_text("{")
    with pytest.raises(StoreError, match="not a readable store record"):
        open_store(other, model_version=V1)


def test_writing_checks_its_input(tmp_path):
    with pytest.raises(ValueError, match="two different embeddings for user 'u1'"):
        write_store(tmp_path / "s", ["u1", "u1"], ["a", "A "], E[:2], model_version=V1)
    meta = write_store(tmp_path / "t", ["u1", "u1"], ["a", "A "], E[[0, 0]], model_version=V1)
    assert meta["pairs"] == 1  # an identical repeat is kept once
    with pytest.raises(ValueError, match="aligned"):
        write_store(tmp_path / "u", ["u1"], ["a", "b"], E[:2], model_version=V1)
    with pytest.raises(ValueError, match="model_version"):
        write_store(tmp_path / "v", ["u1"], ["a"], E[:1], model_version="")


def test_a_student_in_another_space_is_named(store_dir):
    student, _ = student_of(5)
    server = CachedServer(open_store(store_dir, model_version=V1), student)
    with pytest.raises(ValueError, match=r"the student gave \(1, 5\) for 1 misses of dim 3"):
        server.embed(["u7"], ["anything"])


def test_query_key():
    assert query_key("  Blue\tGuitar   STRAP ") == "blue guitar strap"
