"""Serving in the workflow: the cache plan, the ``ttp_cached`` method's routing and version
check, Figure 8's rows and the workflow's wiring (personalir.ttp.methods.serving, .figure8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus
from personalir.ttp.methods import serving
from personalir.ttp.methods.base import RetrievalContext


def _ex(eid, user, query, label, split, n_hist=2):
    hist = [HistoryEntry(f"h{i}", i) for i in range(n_hist)]
    return Example(eid, "t", "D", user, query, "i1", label, split, hist, selected_history=[])


EXAMPLES = [
    _ex("a", "u1", "Guitar  Picks", "Broad", "train"),
    _ex("b", "u2", "guitar picks", "Broad", "valid"),
    _ex("c", "u3", "ukulele", "Broad", "train"),
    _ex("d", "u4", "ukulele", "Broad", "train"),
    _ex("e", "u5", "capo", "Broad", "train"),  # once: not frequent
    _ex("f", "u6", "red capo", "General", "train"),
    _ex("g", "u6", "red capo", "General", "train"),  # frequent, but not a cached label
    _ex("t1", "u7", "guitar picks", "Broad", "test", n_hist=5),
    _ex("t2", "u7", "Ukulele", "Broad", "test", n_hist=3),  # u7's first test search
    _ex("t3", "u8", "capo", "Broad", "test", n_hist=1),
    _ex("t4", "u1", "GUITAR PICKS", "Broad", "test", n_hist=4),  # never cached: a test query
]


def test_frequent_queries_most_issued_first_with_their_usual_form():
    got = serving.frequent_queries(EXAMPLES, labels=["Broad"], min_count=2, max_queries=None)
    # "guitar picks" and "ukulele" twice each (ties by key); the test split never counts
    assert got == [("guitar picks", "Guitar  Picks", 2), ("ukulele", "ukulele", 2)]
    assert serving.frequent_queries(EXAMPLES, labels=["Broad"], min_count=2, max_queries=1)[0][
        0
    ] == ("guitar picks")
    assert [
        q[0]
        for q in serving.frequent_queries(
            EXAMPLES, labels=["General"], min_count=2, max_queries=None
        )
    ] == ["red capo"]


def test_cache_plan_pairs_test_users_with_their_first_snapshot():
    plan, report = serving.cache_plan(EXAMPLES, labels=["Broad"], min_count=2, max_queries=None)
    assert [(p.user_id, p.query) for p in plan] == [
        ("u1", "Guitar  Picks"),
        ("u1", "ukulele"),
        ("u7", "Guitar  Picks"),
        ("u7", "ukulele"),
        ("u8", "Guitar  Picks"),
        ("u8", "ukulele"),
    ]
    u7 = [p for p in plan if p.user_id == "u7"][0]
    assert len(u7.history) == 3  # the earliest test search's history (t2), not t1's
    assert all(p.selected_history is None for p in plan)  # selected per query later
    assert report["users"] == 3 and report["pairs"] == 6
    # t1 (guitar picks), t2 (Ukulele), t4 (GUITAR PICKS) hit; t3 (capo) does not
    assert report["test_requests"] == 4 and report["test_requests_hitting"] == 3


class _FakeTeacher:
    def __init__(self, items):
        self.items, self.encoder, self.info, self.loaded = items, object(), {"backbone": "fake"}, 0

    def load(self):
        self.loaded += 1

    def _items(self, enc):
        return self.items


class _FakeStudent:
    def __init__(self):
        self.seen = []

    def rank(self, examples):
        self.seen.extend(ex.example_id for ex in examples)
        return {ex.example_id: [("i2", 0.5)] for ex in examples}


@pytest.fixture
def cached(tmp_path, monkeypatch):
    items = np.array([[1, 0], [0, 1]], dtype=np.float32)  # i1, i2
    serving.write_store(
        tmp_path / "store",
        ["u7", "u7"],
        ["guitar picks", "ukulele"],
        np.array([[0.1, 0.9], [0.9, 0.1]], dtype=np.float32),
        model_version="v1",
    )
    teacher, student = _FakeTeacher(items), _FakeStudent()
    monkeypatch.setattr(
        serving,
        "build_retriever",
        lambda name, ctx, params=None: student if name == "student" else teacher,
    )
    monkeypatch.setattr(serving, "model_version", lambda models: models["version"])
    corpus = ItemCorpus({"i1": Item("i1", "one"), "i2": Item("i2", "two")})

    def make(version="v1"):
        models = {
            "ttp_backbone": "b",
            "ttp_adapter": "a",
            "student": "s",
            "ttp_store": str(tmp_path / "store"),
            "version": version,
        }
        ctx = RetrievalContext(corpus=corpus, models=models, depth=2)
        return serving.CachedTTP(ctx, {"teacher": "ttp_rl", "teacher_params": {}})

    return make, teacher, student


def test_hits_use_the_teachers_space_and_misses_the_student(cached):
    make, teacher, student = cached
    method = make()
    tests = [e for e in EXAMPLES if e.split == "test"]
    ranking = method.rank(tests)
    assert [i for i, _ in ranking["t1"]] == ["i2", "i1"]  # u7 + guitar picks: (0.1, 0.9)
    assert ranking["t3"] == [("i2", 0.5)]  # u8 searched capo: not stored -> the student
    assert ranking["t2"][0][0] == "i1"  # u7 + Ukulele: (0.9, 0.1), capitals do not matter
    assert student.seen == ["t3", "t4"]  # t4: u1 has no store entry
    assert method.info["hits"] == 2 and method.info["misses"] == 2
    assert method.info["hit_rate"] == 0.5 and teacher.loaded == 1
    assert method.info["routes"] == {"t1": "cache", "t2": "cache", "t3": "student", "t4": "student"}


def test_a_store_of_another_model_version_is_refused(cached):
    make, _, _ = cached
    with pytest.raises(serving.StoreError, match="model version"):
        make(version="v2").rank([e for e in EXAMPLES if e.split == "test"])


def test_figure8_cache_point_is_the_hit_weighted_latency():
    from personalir.ttp.paper.figure8 import figure8_rows, pooled_hit_rate

    rows = []
    for method, value in (("ttp_rl", 0.5), ("student", 0.4), ("ttp_cached", 0.45)):
        for label in ("General", "Broad", "LongTail"):
            rows.append(
                {
                    "domain": "All",
                    "method": method,
                    "label": label,
                    "measure": "Recall@20",
                    "value": value,
                }
            )
    summary = pd.DataFrame(rows)
    latency = {
        "paths": {
            "full_ttp": {"p50_ms": 2000.0, "p95_ms": 2500.0},
            "student": {"p50_ms": 40.0, "p95_ms": 60.0},
            "cache_hit": {"p50_ms": 0.01, "p95_ms": 0.02},
            "decoupled": {"p50_ms": 2100.0, "p95_ms": 2600.0},
        }
    }
    rate = pooled_hit_rate([{"hits": 1, "misses": 3}, {"hits": 2, "misses": 4}])
    assert rate == pytest.approx(0.3)
    got = figure8_rows(summary, latency, teacher="ttp_rl", labels={}, hit_rate=rate)
    assert list(got["Path"]) == ["full TTP", "student", "cache + student"]  # no decoupled run
    cache = got[got["Path"] == "cache + student"].iloc[0]
    assert cache["p50 ms"] == pytest.approx(0.3 * 0.01 + 0.7 * 40.0)
    assert cache["p95 ms"] == pytest.approx(0.3 * 0.02 + 0.7 * 60.0)
    assert got.iloc[0]["Avg Recall@20"] == pytest.approx(0.5)
    # no latency file: no point
    assert figure8_rows(summary, {"paths": {}}, teacher="ttp_rl", labels={}, hit_rate=rate).empty


def test_workflow_wires_the_teachers_adapter_the_sets_store_and_the_teachers_run():
    from personalir.workflow import ttp as wf

    config = {
        "results_dir": "res",
        "ttp": {
            "methods": ["ttp_rl", "student", "ttp_cached"],
            "student": {"teacher": "ttp_rl"},
            "dense": {"fine_tune": True, "model": "m"},
            "hyde": {"generator": "backbone"},
            "rl": {"enabled": True, "variants": {"full": {}}},
        },
    }
    models = wf.run_models(config, "ttp_cached", "S")
    assert models == {
        "ttp_backbone": "res/ttp/backbone",
        "ttp_adapter": "res/ttp/rl/full/adapter",
        "student": "res/ttp/student/full",
        "ttp_store": "res/ttp/S/cache",
    }
    inputs = wf.run_inputs(config, "ttp_cached", "S")
    assert inputs["ttp_store"] == "res/ttp/S/cache/store.json"
    assert inputs["encodings_from"] == "res/ttp/S/runs/ttp_rl.info.json"
    assert inputs["ttp_adapter_weights"] == "res/ttp/rl/full/adapter/adapter_model.safetensors"
    assert wf.serving_methods(config) == ["ttp_cached"]
    assert set(wf.teacher_inputs(config, "S")) == {
        "backbone",
        "backbone_weights",
        "adapter",
        "adapter_weights",
    }
    config["ttp"]["student"]["teacher"] = "ttp"  # the SFT model as teacher
    assert wf.run_models(config, "ttp_cached", "S")["ttp_adapter"] == "res/ttp/sft/adapter"


def test_model_version_follows_the_weights_not_files_written_beside_them(tmp_path):
    from personalir.ttp.methods.serving import StoreError, model_version

    backbone, adapter = tmp_path / "b", tmp_path / "a"
    for folder, weights in ((backbone, b"W"), (adapter, b"A")):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(weights)
        (folder / "config.json").write_text("{}")
    models = {"ttp_backbone": str(backbone), "ttp_adapter": str(adapter)}
    v1 = model_version(models)
    (adapter / "provenance.json").write_text("{}")  # written later by the workflow
    assert model_version(models) == v1
    (adapter / "model.safetensors").write_bytes(b"A2")  # retrained
    assert model_version(models) != v1
    (adapter / "model.safetensors").unlink()
    with pytest.raises(StoreError, match="no weights"):
        model_version(models)
