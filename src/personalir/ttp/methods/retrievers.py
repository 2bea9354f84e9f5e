"""Single-stage personalised retrievers: BM25 and the dense query-only baseline (query only),
History-Aware (the serialised history prepended to the query, same bi-encoder recipe)."""

from __future__ import annotations

from personalir.ttp.inputs.history import history_aware_text, history_word_budget
from personalir.ttp.methods.base import (
    PERSONAL_RETRIEVERS,
    PersonalRetriever,
    rank_texts,
    stage_retriever,
)


@PERSONAL_RETRIEVERS.register("bm25")
class BM25(PersonalRetriever):
    name, label = "bm25", "BM25"

    def rank(self, examples):
        r = stage_retriever("bm25", None, self.ctx)
        return rank_texts(r, examples, [ex.query for ex in examples], self.ctx.depth)


@PERSONAL_RETRIEVERS.register("dense")
class DenseQueryOnly(PersonalRetriever):
    name, label = "dense", "Dense (query only)"
    model_roles = ("dense",)

    def rank(self, examples):
        r = stage_retriever("dense", self.ctx.models["dense"], self.ctx)
        return rank_texts(r, examples, [ex.query for ex in examples], self.ctx.depth)


@PERSONAL_RETRIEVERS.register("history_aware")
class HistoryAware(PersonalRetriever):
    name, label, uses_history = "history_aware", "History-Aware", True
    model_roles, config_keys = ("history_aware",), ("dense",)
    default_params = {"max_length": 128}

    @classmethod
    def params_from_config(cls, ttp):
        return {"max_length": int(ttp["dense"]["max_length"])}

    def rank(self, examples):
        r = stage_retriever("dense", self.ctx.models["history_aware"], self.ctx)
        budget = history_word_budget(int(self.params["max_length"]))
        texts = [
            history_aware_text(ex.query, self.ctx.history_texts(ex), budget) for ex in examples
        ]
        return rank_texts(r, examples, texts, self.ctx.depth)
