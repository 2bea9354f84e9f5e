"""Same-product contrastive encoder: loss, cohorts, training, safetensors round trip."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from personalir.syntax.encoder import (
    EncoderSettings,
    build_cohorts,
    cohort_infonce,
    load_encoder,
    pack_batches,
    train_encoder,
)


def test_cohort_infonce_matches_a_hand_computation():
    z = torch.nn.functional.normalize(
        torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]), dim=1
    )
    users = torch.tensor([0, 0, 1, 2, 2])
    cohort = torch.tensor([0, 0, 0, 1, 1])
    loss, n = cohort_infonce(z, users, cohort, tau=0.5)
    # Anchors 0 and 1 have a positive (each other) and a negative (row 2) in cohort 0; row 2
    # has no positive; rows 3-4 share a user, but cohort 1 has no negative -> not anchors.
    sim = (z @ z.T / 0.5).numpy()
    a0 = -(sim[0, 1] - np.log(np.exp(sim[0, 1]) + np.exp(sim[0, 2])))
    a1 = -(sim[1, 0] - np.log(np.exp(sim[1, 0]) + np.exp(sim[1, 2])))
    assert n == 2
    assert float(loss) == pytest.approx((a0 + a1) / 2, rel=1e-6)


def test_cohorts_take_sentences_about_the_product_first():
    rows_by_user = {0: np.array([0, 1, 2, 3]), 1: np.array([4, 5, 6]), 2: np.array([7])}
    row_product = np.array(["p", "q", "q", "p", "q", "p", "q", "p"])
    settings = EncoderSettings(sentences_per_user=2, max_users_per_cohort=8)
    cohorts = build_cohorts(
        rows_by_user, row_product, {"p": [0, 1, 2], "q": [0]}, settings, np.random.default_rng(0)
    )
    # Product q has one modelled reviewer and user 2 has one sentence: one cohort, about p.
    assert [c.product for c in cohorts] == ["p"]
    (c,) = cohorts
    assert sorted(c.rows[c.users == 0].tolist()) == [0, 3]
    assert c.rows[c.users == 1].tolist()[0] == 5
    batches = pack_batches(cohorts * 3, batch_size=5, generator=np.random.default_rng(0))
    assert [sum(len(x.rows) for x in b) for b in batches] == [8, 4]


def _synthetic(n_users=12, per_user=20, vocab=60, seed=0):
    """Each user prefers a few 'rules'; products shared by groups of four users."""
    gen = np.random.default_rng(seed)
    rows, cols, user = [], [], []
    for u in range(n_users):
        favourite = gen.choice(vocab, 6, replace=False)
        for _ in range(per_user):
            picked = np.r_[gen.choice(favourite, 3), gen.choice(vocab, 3)]
            rows += [len(user)] * len(picked)
            cols += picked.tolist()
            user.append(u)
    x = sp.csr_matrix((np.full(len(rows), 0.5, np.float32), (rows, cols)), shape=(len(user), vocab))
    x.sum_duplicates()
    user = np.asarray(user)
    split = np.where(np.arange(len(user)) % 5 == 0, "calib", "train").astype(object)
    products = {f"p{g}": list(range(4 * g, 4 * g + 4)) for g in range(n_users // 4)}
    row_product = np.array([f"p{u // 4}" for u in user])
    return x, user, split, row_product, products


def test_training_learns_users_deterministically_and_round_trips(tmp_path):
    torch.set_num_threads(1)
    x, user, split, row_product, products = _synthetic()
    settings = EncoderSettings(
        svd_dim=16,
        hidden=(16,),
        dim=4,
        epochs=15,
        patience=15,
        batch_size=32,
        sentences_per_user=4,
        max_users_per_cohort=4,
        lr=0.01,
        temperature=0.5,
    )
    enc = train_encoder(x, user, split, row_product, products, settings, seed=11)
    first = enc.history[0]["calib_loss"]
    assert min(h["calib_loss"] for h in enc.history[1:]) < first - 0.1
    z = enc.encode(x)
    assert z.shape == (x.shape[0], 4)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)
    # Same-user sentences end up closer than those of the users they were contrasted with
    # (same product group); across groups the loss sets no constraint.
    sims = z @ z.T
    same = user[:, None] == user[None, :]
    group = (user[:, None] // 4) == (user[None, :] // 4)
    assert sims[same & ~np.eye(len(user), dtype=bool)].mean() > sims[group & ~same].mean() + 0.3
    again = train_encoder(x, user, split, row_product, products, settings, seed=11)
    np.testing.assert_array_equal(again.encode(x), z)
    enc.save(tmp_path / "enc.safetensors", tmp_path / "enc.json", [f"r{i}" for i in range(60)])
    loaded, vocab = load_encoder(tmp_path / "enc.safetensors", tmp_path / "enc.json")
    assert vocab[:2] == ["r0", "r1"] and loaded.best_epoch == enc.best_epoch
    np.testing.assert_array_equal(loaded.encode(x), z)


def test_training_without_any_cohort_fails_loudly():
    x, user, split, row_product, _ = _synthetic(n_users=4)
    with pytest.raises(ValueError, match="no training cohort"):
        train_encoder(
            x,
            user,
            split,
            row_product,
            {"p0": [0]},
            EncoderSettings(svd_dim=8, hidden=(), dim=4, epochs=1),
            seed=1,
        )
