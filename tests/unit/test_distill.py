"""The distilled student's objective (personalir.ttp.training.distill) on hand-built embeddings."""

from __future__ import annotations

import math

import pytest
import torch

from personalir.ttp.training.distill import (
    VARIANTS,
    distillation_loss,
    info_nce,
    student_views,
    variant_terms,
)

# Two rows, orthogonal unit embeddings: row i's positive is row i (q_p, qr_p) ...
Q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
P = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # same directions, other lengths (cosine)
# ... and the intent-enhanced view swaps them, so <q, q_r> puts each row on the wrong one.
QR = torch.tensor([[0.0, 1.0], [1.0, 0.0]])

# Golden values at tau = 1: cosine logits [[1, 0], [0, 1]] give -log(e / (e + 1)) per row,
# logits [[0, 1], [1, 0]] give -log(1 / (1 + e)).
ALIGNED = math.log(1 + math.exp(-1))  # 0.313262
CROSSED = math.log(1 + math.e)  # 1.313262


def test_info_nce_golden_values():
    assert float(info_nce(Q, P, 1.0)) == pytest.approx(ALIGNED, abs=1e-6)
    assert float(info_nce(Q, QR, 1.0)) == pytest.approx(CROSSED, abs=1e-6)
    # tau = 0.5 doubles the logits: -log(e^2 / (e^2 + 1))
    assert float(info_nce(Q, P, 0.5)) == pytest.approx(math.log(1 + math.exp(-2)), abs=1e-6)


def test_three_terms_with_equal_weights():
    total, parts = distillation_loss(Q, QR, P, temperature=1.0)
    # q_p aligned; qr_p crossed (q_r's rows point at the other item); q_qr crossed.
    assert parts == pytest.approx({"q_p": ALIGNED, "qr_p": CROSSED, "q_qr": CROSSED}, abs=1e-6)
    assert float(total) == pytest.approx(ALIGNED + 2 * CROSSED, abs=1e-6)


@pytest.mark.parametrize(
    "variant, expected",
    [
        ("full", ALIGNED + 2 * CROSSED),
        ("no_qr_p", ALIGNED + CROSSED),
        ("no_q_qr", ALIGNED + CROSSED),
        ("no_qr_p_no_q_qr", ALIGNED),
    ],
)
def test_table8_variants_drop_their_terms(variant, expected):
    total, parts = distillation_loss(Q, QR, P, terms=variant_terms(variant), temperature=1.0)
    assert set(parts) == set(VARIANTS[variant])
    assert float(total) == pytest.approx(expected, abs=1e-6)


def test_rows_sharing_an_item_are_no_negatives():
    # Both rows bought item "a": with the mask each row's only candidate is its own positive.
    total, parts = distillation_loss(Q, Q, P, terms=("q_p",), temperature=1.0, item_ids=["a", "a"])
    assert parts["q_p"] == pytest.approx(0.0, abs=1e-6)
    _, unmasked = distillation_loss(Q, Q, P, terms=("q_p",), temperature=1.0)
    assert unmasked["q_p"] == pytest.approx(ALIGNED, abs=1e-6)


def test_gradients_reach_every_view():
    q, qr, p = (t.clone().requires_grad_(True) for t in (Q + 0.1, QR + 0.2, P))
    total, _ = distillation_loss(q, qr, p, temperature=0.5)
    total.backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in (q, qr, p))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown student variant 'x'"):
        variant_terms("x")
    with pytest.raises(ValueError, match="non-empty subset"):
        distillation_loss(Q, QR, P, terms=("q_q",))
    with pytest.raises(ValueError, match="temperature must be positive"):
        info_nce(Q, P, 0.0)
    with pytest.raises(ValueError, match="anchors"):
        info_nce(Q, P[:1], 1.0)


def test_views_share_the_template_and_differ_only_in_the_query():
    q, qr = student_views(["Blue Guitar Strap"], "strap", "blue leather guitar strap")
    assert q.replace("User Query: strap", "User Query: blue leather guitar strap") == qr
    assert "[1] Blue Guitar Strap" in q
    assert student_views([], "strap", "  ") == (student_views([], "strap", "strap")[0],) * 2
