"""Model selection on the validation split: which SFT epoch and which GRPO step is kept.

Training writes a candidate after every SFT epoch and after every GRPO step; each candidate
retrieves the validation examples (split ``valid``: users held out of training and of the
test split, :func:`personalir.ttp.inputs.data.user_split`) exactly as the final evaluation
retrieves the test examples (generate ``<think>rewrite</think><embed>``, embed, exact
search) and is scored with ``ttp.selection.measure``. The best candidate is kept; a tie goes
to the earlier one (less training). The test split is never read here.

``pool_size`` bounds the cost on small machines: the validation queries rank the items of
their own example set's corpus, cut to the validation targets plus a seeded sample of the
other items up to ``pool_size`` items (``null``: every item, as the test evaluation does).
The pool only ranks candidates against each other; its values are not comparable to the
test tables' (said in every selection record).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from personalir.common.models import resolve_model
from personalir.common.seeding import rng
from personalir.ttp.inputs.data import Example, ItemCorpus
from personalir.ttp.model.prompts import parse_generated
from personalir.ttp.model.search import MEASURES, exact_search, per_query_measures
from personalir.ttp.training.sft_data import build_prompt


@dataclass(frozen=True)
class SelectionSettings:
    measure: str = "MRR@100"
    pool_size: int | None = None
    max_new_tokens: int = 24

    @classmethod
    def from_config(cls, ttp: Mapping) -> SelectionSettings:

        sel = ttp.get("selection") or {}
        measure = sel.get("measure", cls.measure)
        if measure not in MEASURES:
            raise ValueError(f"ttp.selection.measure {measure!r} not one of {sorted(MEASURES)}")
        return cls(
            measure=measure,
            pool_size=sel.get("pool_size"),
            max_new_tokens=int(
                (ttp.get("inference") or {}).get("max_new_tokens", cls.max_new_tokens)
            ),
        )


def candidate_pool(
    examples: Sequence[Example], corpus: ItemCorpus, pool_size: int | None, seed: int
) -> list[str]:
    """Item ids ranked for ``examples``: every target, then a seeded sample of the other
    items up to ``pool_size`` (all items when ``pool_size`` is None), in corpus order."""
    ids = list(corpus.ids)
    if pool_size is None or pool_size >= len(ids):
        return ids
    targets = {ex.target for ex in examples}
    others = [i for i in ids if i not in targets]
    extra = max(0, int(pool_size) - len(targets))
    picked = set(rng(seed, "ttp_selection_pool").permutation(len(others))[:extra].tolist())
    keep = targets | {others[j] for j in picked}
    return [i for i in ids if i in keep]


class ValidationScorer:
    """Scores an encoder's model on the validation examples (one call per candidate)."""

    def __init__(
        self,
        sets: Sequence[tuple[Sequence[Example], ItemCorpus]],
        settings: SelectionSettings,
        sft_settings,
        *,
        seed: int,
    ):
        self.settings = settings
        self.sft = sft_settings
        self.sets = []
        for examples, corpus in sets:
            valid = [ex for ex in examples if ex.split == "valid"]
            if valid:
                pool = candidate_pool(valid, corpus, settings.pool_size, seed)
                self.sets.append((valid, corpus, pool))

    @property
    def examples(self) -> int:
        return sum(len(v) for v, _, _ in self.sets)

    @property
    def pool_items(self) -> int:
        return sum(len(p) for _, _, p in self.sets)

    def encode_items(self, encoder, texts):
        return encoder.encode_items(texts)

    def encode_queries(self, encoder, prompts, examples):
        """(query embeddings, well-formed flags): generate ``<think>rewrite</think><embed>``
        and embed at ``<embed>``, as the TTP run does."""
        _, queries, flags = encoder.generate_and_embed(prompts, self.settings.max_new_tokens)
        return queries, flags

    def score(self, encoder) -> dict:
        """Every measure's mean over the validation examples, the well-formed share and the
        seconds it took."""
        import pandas as pd

        t0 = time.perf_counter()
        frames, well = [], []
        for valid, corpus, pool in self.sets:
            texts = [corpus[i].text(self.sft.item_fields, self.sft.max_features) for i in pool]
            items = self.encode_items(encoder, texts)
            prompts = [build_prompt(ex, corpus, encoder.tokenizer, self.sft) for ex in valid]
            queries, flags = self.encode_queries(encoder, prompts, valid)
            ranking = exact_search([ex.example_id for ex in valid], queries, pool, items, 100)
            run = {q: [d for d, _ in docs] for q, docs in ranking.items()}
            frames.append(per_query_measures(valid, run, "candidate"))
            well += list(flags)
        frame = pd.concat(frames, ignore_index=True)
        out = {m: round(float(frame[m].mean()), 6) for m in MEASURES}
        out["well_formed_share"] = round(float(np.mean(well)), 6)
        out["seconds"] = round(time.perf_counter() - t0, 3)
        return out


class RewriteScorer(ValidationScorer):
    """Scores a rewriter (Decoupled-Stage's first stage) on the validation examples: its
    generated rewrites are the queries of a fixed bi-encoder (``dense_model``, a
    sentence-transformers model: the dense baselines' base model, not yet fine-tuned on any
    rewrite), which ranks the same pool as :class:`ValidationScorer`. The rewriter's own
    ``<embed>`` state is never used: only its text reaches the second stage."""

    def __init__(
        self, sets, settings, sft_settings, *, seed: int, dense_model: str, device: str = "cpu"
    ):
        super().__init__(sets, settings, sft_settings, seed=seed)
        self.dense_model = dense_model
        self.device = device
        self._model = None
        self._items: dict[tuple[str, ...], np.ndarray] = {}  # the bi-encoder is fixed

    def _bi_encoder(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                resolve_model(self.dense_model).path, device=self.device
            )
        return self._model

    def encode_items(self, encoder, texts):
        key = tuple(texts)
        if key not in self._items:
            model = self._bi_encoder()
            self._items[key] = model.encode(
                list(texts), convert_to_numpy=True, normalize_embeddings=True
            )
        return self._items[key]

    def encode_queries(self, encoder, prompts, examples):

        generated, _, flags = encoder.generate_and_embed(prompts, self.settings.max_new_tokens)
        rewrites = [
            parse_generated(g)[0] or ex.query for g, ex in zip(generated, examples, strict=True)
        ]
        model = self._bi_encoder()
        return model.encode(rewrites, convert_to_numpy=True, normalize_embeddings=True), flags


class EmbedderScorer(ValidationScorer):
    """Scores the LLM embedder (the Qwen-Embedding baseline) as its run retrieves: every
    validation example without its history, the query in the rewrite's place
    (``<think>query</think><embed>``), nothing generated."""

    def __init__(self, sets, settings, sft_settings, *, seed: int):
        from dataclasses import replace

        stripped = [
            ([replace(ex, selected_history=[]) for ex in examples], corpus)
            for examples, corpus in sets
        ]
        super().__init__(stripped, settings, sft_settings, seed=seed)

    def encode_queries(self, encoder, prompts, examples):
        queries = encoder.encode_queries(list(prompts), [ex.query for ex in examples])
        return queries, [True] * len(examples)


def choose(candidates: Sequence[Mapping], measure: str) -> Mapping:
    """The candidate with the highest ``measure``; the earliest among equals."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    best = candidates[0]
    for c in candidates[1:]:
        if c["validation"][measure] > best["validation"][measure]:
            best = c
    return best


def selection_record(
    candidates: Sequence[Mapping], chosen: Mapping | None, scorer: ValidationScorer, unit: str
) -> dict:
    """What the selection saw and kept (written into the stage's report)."""
    s = scorer.settings
    return {
        "unit": unit,
        "measure": s.measure,
        "validation_examples": scorer.examples,
        "pool_items": scorer.pool_items,
        "pool_size": s.pool_size,
        "note": (
            "validation queries rank their set's validation targets plus a seeded sample of "
            "other items; values rank candidates only and are not comparable to test tables"
            if s.pool_size is not None
            else "validation queries rank every item of their set"
        ),
        "candidates": [dict(c) for c in candidates],
        "chosen": chosen[unit] if chosen is not None else None,
    }
