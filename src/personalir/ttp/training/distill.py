"""The distilled student's training objective (TTP paper, section 5.1 and Table 8).

An encoder-only bi-encoder learns to embed a search without generating anything. Each
training row has three texts, all encoded by the student:

``q``    the original-query view: the instruction + history + query template
         (:func:`personalir.ttp.model.prompts.query_user_content`) with the user's query;
``q_r``  the teacher's intent-enhanced view: the same template with the teacher's (TTP's)
         rewrite in place of the query;
``p+``   the purchased item's text.

The loss is a sum with equal weights (1:1:1) of in-batch InfoNCE terms over cosine
similarities at temperature ``tau``:

``q_p``    <q, p+>    the original view retrieves the item (what serving uses);
``qr_p``   <q_r, p+>  the intent-enhanced view retrieves the item;
``q_qr``   <q, q_r>   the original view is pulled towards the intent-enhanced one.

Table 8's rows are :data:`VARIANTS`: the full objective and three ablations that drop
``qr_p``, ``q_qr`` or both. In every term the other rows of the batch are the negatives; a row
whose item is also another row's item is no negative for it (the same masking as the dense
baselines' fine-tuning, :mod:`personalir.ttp.training.dense_ft`).
"""

from __future__ import annotations

from collections.abc import Sequence

from personalir.ttp.model.prompts import query_user_content

TERMS = ("q_p", "qr_p", "q_qr")
#: Table 8's rows: which terms each student is trained with (equal weights).
VARIANTS: dict[str, tuple[str, ...]] = {
    "full": ("q_p", "qr_p", "q_qr"),
    "no_qr_p": ("q_p", "q_qr"),
    "no_q_qr": ("q_p", "qr_p"),
    "no_qr_p_no_q_qr": ("q_p",),
}


def variant_terms(variant: str) -> tuple[str, ...]:
    try:
        return VARIANTS[variant]
    except KeyError:
        raise ValueError(
            f"unknown student variant {variant!r}; known: {', '.join(VARIANTS)}"
        ) from None


def info_nce(anchors, positives, temperature: float, same=None):
    """Mean in-batch InfoNCE of row ``i`` of ``anchors`` against row ``i`` of ``positives``.

    Both are L2-normalised first (cosine similarity). ``same``: an optional boolean
    ``[n, n]`` matrix, True where rows ``i`` and ``j`` share their target, so that ``j`` is no
    negative for ``i`` (the diagonal is ignored).
    """
    import torch
    import torch.nn.functional as F

    if anchors.shape != positives.shape or anchors.ndim != 2:
        raise ValueError(f"anchors {tuple(anchors.shape)} and positives {tuple(positives.shape)}")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    n = anchors.shape[0]
    sims = F.normalize(anchors, dim=-1) @ F.normalize(positives, dim=-1).T / temperature
    if same is not None:
        eye = torch.eye(n, dtype=torch.bool, device=sims.device)
        sims = sims.masked_fill(same.to(sims.device) & ~eye, float("-inf"))
    return F.cross_entropy(sims, torch.arange(n, device=sims.device))


def same_target(item_ids: Sequence[str]):
    """The ``same`` mask of :func:`info_nce` for rows whose targets are ``item_ids``."""
    import torch

    return torch.tensor([[a == b for b in item_ids] for a in item_ids], dtype=torch.bool)


def distillation_loss(
    q,
    q_r,
    p,
    *,
    terms: Sequence[str] = TERMS,
    temperature: float = 0.05,
    item_ids: Sequence[str] | None = None,
):
    """``(total, {term: value})``: the sum with equal weights of the chosen InfoNCE terms.

    ``q``, ``q_r`` and ``p`` are ``[batch, dim]`` embeddings of the original view, the
    intent-enhanced view and the purchased item of each row. ``item_ids``: the rows' item
    ids (rows sharing an item are no negatives for each other in the terms with ``p``;
    rows' views are always distinct texts, so ``q_qr`` masks nothing).
    """
    unknown = [t for t in terms if t not in TERMS]
    if unknown or not terms:
        raise ValueError(f"terms must be a non-empty subset of {TERMS}, got {list(terms)}")
    same = same_target(item_ids) if item_ids is not None else None
    pairs = {"q_p": (q, p, same), "qr_p": (q_r, p, same), "q_qr": (q, q_r, None)}
    parts = {t: info_nce(pairs[t][0], pairs[t][1], temperature, pairs[t][2]) for t in terms}
    total = sum(parts.values())
    return total, {t: float(v.detach()) for t, v in parts.items()}


def student_views(history_texts: Sequence[str], query: str, rewrite: str) -> tuple[str, str]:
    """The original-query view and the intent-enhanced view of one search, as texts.

    An empty rewrite (the teacher kept nothing, or wrote no well-formed rewrite) falls back
    to the query, so the intent-enhanced view equals the original one.
    """

    rewrite = rewrite.strip() or query
    return query_user_content(history_texts, query), query_user_content(history_texts, rewrite)
