"""The history-fusion baselines (UIA, MAPs-style): the attention math on hand-built vectors,
training that learns from the history, determinism, and the bi-encoder version check."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from personalir.ttp.training.fusion import (
    FusionSettings,
    _module,
    folder_fingerprint,
    fuse,
    load_fusion,
    save_fusion,
    train_fusion,
)


def _unit(x):
    x = np.asarray(x, np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_empty_history_gives_exactly_the_normalised_query():
    m = _module(3, 1)
    q = np.array([[3.0, 4.0, 0.0]], np.float32)
    fused, _ = fuse(m, q, [np.zeros((0, 3), np.float32)])
    np.testing.assert_allclose(fused, [[0.6, 0.8, 0.0]], atol=1e-7)
    assert np.isfinite(fused).all()


def test_untrained_uia_is_softmax_attention_pooling_by_hand():
    m = _module(2, 1)
    q = np.array([[1.0, 0.0]], np.float32)
    h = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    # identity projections: weights softmax(q.h / sqrt(2)) = softmax([1/sqrt2, 0])
    a = np.exp(1 / np.sqrt(2)) / (np.exp(1 / np.sqrt(2)) + 1)
    pooled = a * h[0] + (1 - a) * h[1]
    want = _unit(q[0] + 0.5 * pooled)
    fused, gate = fuse(m, q, [h])
    np.testing.assert_allclose(fused[0], want, atol=1e-6)
    assert gate.shape == (1, 1) and gate[0, 0] == 1.0


def test_untrained_maps_gate_is_uniform_and_mixes_identical_experts():
    uia, maps = _module(2, 1), _module(2, 4, noise_scale=0.0)
    q = np.array([[0.3, 0.9]], np.float32)
    h = [np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], np.float32)]
    f_maps, gate = fuse(maps, q, h)
    np.testing.assert_allclose(gate, [[0.25] * 4], atol=1e-7)
    # four identical experts mixed uniformly = one expert
    np.testing.assert_allclose(f_maps, fuse(uia, q, h)[0], atol=1e-6)


def _problem(n, seed):
    """Items on a circle; the query is noise, the target the item nearest to the history's
    mean: only the history can find it."""
    g = np.random.default_rng(seed)
    items = _unit(g.normal(size=(12, 6)))
    rows = []
    for _ in range(n):
        t = int(g.integers(12))
        hist = _unit(items[t] + 0.3 * g.normal(size=(3, 6)))
        rows.append((_unit(g.normal(size=6)), hist, t))
    return items, rows


def _mrr(module, items, rows):
    fused, _ = fuse(module, np.stack([r[0] for r in rows]), [r[1] for r in rows])
    ranks = [
        int((fused[i] @ items.T > fused[i] @ items[r[2]]).sum()) + 1 for i, r in enumerate(rows)
    ]
    return float(np.mean([1 / r for r in ranks]))


@pytest.mark.parametrize("kind", ["uia", "maps"])
def test_training_learns_from_the_history_and_is_deterministic(kind):
    items, train = _problem(64, 1)
    _, valid = _problem(24, 2)
    settings = FusionSettings(epochs=6, batch_size=16, learning_rate=0.01, experts=2)
    untrained = _mrr(_module(6, 1 if kind == "uia" else 2), items, valid)
    a, rec = train_fusion(
        kind,
        train,
        items,
        settings,
        seed=5,
        validate=lambda m: _mrr(m, items, valid),
        log=lambda s: None,
    )
    b, _ = train_fusion(
        kind,
        train,
        items,
        settings,
        seed=5,
        validate=lambda m: _mrr(m, items, valid),
        log=lambda s: None,
    )
    assert _mrr(a, items, valid) > untrained
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k]), k
    assert len(rec["epochs"]) == 6
    best = max(r["validation"] for r in rec["epochs"])
    assert rec["chosen"] == min(r["epoch"] for r in rec["epochs"] if r["validation"] == best)
    assert _mrr(a, items, valid) == pytest.approx(best, abs=1e-6)


def test_several_experts_start_apart_and_uia_at_the_identity():
    torch.manual_seed(0)
    maps = _module(3, 4)
    assert not torch.equal(maps.w_q[0], maps.w_q[1])
    assert torch.equal(_module(3, 1).w_q[0], torch.eye(3))


def test_a_module_trained_on_another_bi_encoder_is_refused(tmp_path):
    enc = tmp_path / "enc"
    enc.mkdir()
    (enc / "model.safetensors").write_bytes(b"v1")
    m = _module(2, 1)
    meta = {
        "kind": "uia",
        "dim": 2,
        "experts": 1,
        "dense_model": str(enc),
        "dense_fingerprint": folder_fingerprint(enc),
        "selection": {"chosen": 1},
    }
    save_fusion(m, tmp_path / "uia", meta)
    loaded, _ = load_fusion(tmp_path / "uia", enc)
    for k, v in m.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k])
    # the workflow's provenance record and integrity sidecars are not the model
    (enc / "provenance.json").write_text("{}")
    (enc / ".integrity").mkdir()
    (enc / ".integrity" / "x.json").write_text("{}")
    load_fusion(tmp_path / "uia", enc)
    (enc / "model.safetensors").write_bytes(b"v2")
    with pytest.raises(ValueError, match="trained on the bi-encoder"):
        load_fusion(tmp_path / "uia", enc)


def test_fit_and_rank_through_the_registered_retrievers(tmp_path):
    """The rule's path on six items and twelve searches with the packaged MiniLM."""
    from personalir.ttp.inputs.data import Example, HistoryEntry, Item, ItemCorpus, write_examples
    from personalir.ttp.methods.base import RetrievalContext, build_retriever
    from personalir.ttp.training.fusion import fit_fusion

    names = ["red capo", "blue capo", "red strap", "blue strap", "green sticks", "gold sticks"]
    corpus = ItemCorpus({f"I{i}": Item(f"I{i}", n, "Music") for i, n in enumerate(names)})
    examples = []
    for k in range(16):
        t = k % 6
        split = "train" if k < 8 else "valid" if k < 12 else "test"
        hist = [f"I{(t + 2) % 6}"] if k % 4 else []
        examples.append(
            Example(
                f"e{k:02d}",
                "t",
                "d",
                f"u{k}",
                names[t].split()[1],
                f"I{t}",
                "Broad",
                split,
                [HistoryEntry(i, 1) for i in hist],
                selected_history=hist,
            )
        )
    write_examples(tmp_path / "examples.jsonl", examples)
    corpus.write(tmp_path / "items.parquet")
    ttp = {
        "fusion": {"epochs": 2, "batch_size": 4},
        "items": {"fields": ["title"], "max_features": 3},
        "selection": {"measure": "MRR@100", "pool_size": None},
    }
    dense = "packaged:all-MiniLM-L6-v2"
    for kind in ("uia", "maps"):
        report = fit_fusion(
            kind=kind,
            examples_paths=[tmp_path / "examples.jsonl"],
            items_paths=[tmp_path / "items.parquet"],
            dense_model=dense,
            ttp=ttp,
            seed=3,
            threads=1,
            out_dir=tmp_path / kind,
            report_out=tmp_path / f"{kind}.json",
            log=lambda s: None,
        )
        assert report["train_examples"] == 8 and report["valid_examples"] == 4
        assert report["experts"] == (1 if kind == "uia" else 4)
        ctx = RetrievalContext(
            corpus=corpus,
            item_fields=("title",),
            models={"dense": dense, kind: str(tmp_path / kind)},
        )
        test = [e for e in examples if e.split == "test"]
        ranking = build_retriever(kind, ctx).rank(test)
        assert set(ranking) == {e.example_id for e in test}
        assert all(len(v) == 6 for v in ranking.values())
