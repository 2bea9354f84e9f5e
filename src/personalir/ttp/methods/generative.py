"""Baselines that change the query before a bi-encoder retrieves: P-PRF (feedback from the
history), HyDE (a generated hypothetical product) and Decoupled-Stage (a frozen rewriter's
rewrite)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from personalir.common.causal_lm import load_causal_lm
from personalir.common.models import resolve_model
from personalir.ttp.methods.base import (
    DENSE_FINE_TUNED,
    PERSONAL_RETRIEVERS,
    PersonalRetriever,
    rank_texts,
    stage_retriever,
)
from personalir.ttp.model.bi_encoder import normalise, st_encode, st_encoder
from personalir.ttp.model.search import exact_search


@PERSONAL_RETRIEVERS.register("p_prf")
class PersonalPRF(PersonalRetriever):
    name, label, uses_history = "p_prf", "P-PRF", True
    default_params = {"beta": 0.5}
    model_roles, config_keys = ("dense",), ("p_prf",)
    paper_rows = {"table4": "p_prf"}

    @classmethod
    def params_from_config(cls, ttp):
        return dict(ttp["p_prf"])

    def rank(self, examples):
        enc = st_encoder(self.ctx.models["dense"], self.ctx.device)
        items = st_encode(enc, self.ctx.item_texts())
        queries = st_encode(enc, [ex.query for ex in examples])
        histories = [self.ctx.history_texts(ex) for ex in examples]
        unique = sorted({t for hist in histories for t in hist})
        vectors = dict(zip(unique, st_encode(enc, unique), strict=True))
        feedback = np.zeros_like(queries)
        for k, hist in enumerate(histories):
            if hist:
                feedback[k] = np.mean([vectors[t] for t in hist], axis=0)
        moved = normalise(queries + float(self.params["beta"]) * feedback)
        return exact_search(
            [ex.example_id for ex in examples], moved, self.ctx.corpus.ids, items, self.ctx.depth
        )


HYDE_PROMPT = (
    "Write the title and a one-sentence description of a product that an online store "
    "would show for the search query: {query}"
)


@PERSONAL_RETRIEVERS.register("hyde")
class HyDE(PersonalRetriever):
    name, label = "hyde", "HyDE"
    default_params = {"max_new_tokens": 24, "batch_size": 16}
    model_roles, config_keys, generates_text = ("dense", "generator"), ("hyde",), True
    paper_rows = {"table4": "hyde"}

    @classmethod
    def params_from_config(cls, ttp):
        return {k: ttp["hyde"][k] for k in ("max_new_tokens", "batch_size")}

    def generate(self, queries: Sequence[str]) -> list[str]:
        import torch

        ref = resolve_model(self.ctx.models["generator"])
        model, tok = load_causal_lm(ref, device=self.ctx.device, cache_dir=self.ctx.model_cache)
        tok.padding_side = "left"
        out = []
        bs = int(self.params["batch_size"])
        with torch.no_grad():
            for start in range(0, len(queries), bs):
                prompts = [
                    tok.apply_chat_template(
                        [{"role": "user", "content": HYDE_PROMPT.format(query=q)}],
                        tokenize=False,
                        add_generation_prompt=True,
                    )
                    for q in queries[start : start + bs]
                ]
                enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
                if self.ctx.device != "cpu":
                    enc = enc.to(model.device)
                gen = model.generate(
                    **enc,
                    do_sample=False,
                    max_new_tokens=int(self.params["max_new_tokens"]),
                    pad_token_id=tok.pad_token_id,
                )
                out += [
                    t.strip()
                    for t in tok.batch_decode(
                        gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
                    )
                ]
        return out

    def rank(self, examples):
        docs = self.generate([ex.query for ex in examples])
        self.info["hypothetical_documents"] = dict(
            zip((ex.example_id for ex in examples), docs, strict=True)
        )
        enc = st_encoder(self.ctx.models["dense"], self.ctx.device)
        items = st_encode(enc, self.ctx.item_texts())
        q = st_encode(enc, [ex.query for ex in examples])
        d = st_encode(enc, docs)
        return exact_search(
            [ex.example_id for ex in examples],
            normalise(q + d),
            self.ctx.corpus.ids,
            items,
            self.ctx.depth,
        )


@PERSONAL_RETRIEVERS.register("decoupled")
class DecoupledStage(PersonalRetriever):
    """The frozen rewriter's rewrite (``ctx.rewrites``,
    :mod:`personalir.ttp.training.decoupled`) as the query of the bi-encoder trained on
    rewrites (role ``decoupled``); an empty rewrite falls back to the query."""

    name, label, uses_history = "decoupled", "Decoupled-Stage", True
    model_roles, needs_rewrites = ("decoupled",), True
    trained_model = DENSE_FINE_TUNED
    paper_rows = {"table4": "decoupled", "table5": "decoupled", "table6": "decoupled"}

    @classmethod
    def query_text(cls, query, history_texts, rewrite, max_length):
        return rewrite or query

    def rank(self, examples):
        missing = [ex.example_id for ex in examples if ex.example_id not in self.ctx.rewrites]
        if missing:
            raise ValueError(
                f"decoupled: no rewrite for {len(missing)} example(s), e.g. {missing[:3]}"
            )
        r = stage_retriever("dense", self.ctx.models["decoupled"], self.ctx)
        texts = [
            self.query_text(ex.query, (), self.ctx.rewrites[ex.example_id], 0) for ex in examples
        ]
        self.info["rewrites"] = {
            ex.example_id: {"rewrite": t} for ex, t in zip(examples, texts, strict=True)
        }
        return rank_texts(r, examples, texts, self.ctx.depth)
