"""Single-stage personalised retrievers: BM25 and the dense query-only baseline (query only),
History-Aware (the serialised history prepended to the query, same bi-encoder recipe); every
method whose bi-encoder ``ttp_dense_ft`` fine-tunes derives from :class:`FineTunedDense`."""

from __future__ import annotations

from personalir.ttp.inputs.history import history_aware_text, history_word_budget
from personalir.ttp.methods.base import (
    DENSE_FINE_TUNED,
    PERSONAL_RETRIEVERS,
    PersonalRetriever,
    rank_texts,
    stage_retriever,
)


@PERSONAL_RETRIEVERS.register("bm25")
class BM25(PersonalRetriever):
    name, label = "bm25", "BM25"
    paper_rows = {"table4": "bm25", "table5": "bm25"}

    def rank(self, examples):
        r = stage_retriever("bm25", None, self.ctx)
        return rank_texts(r, examples, [ex.query for ex in examples], self.ctx.depth)


class FineTunedDense(PersonalRetriever):
    """A bi-encoder of its own, fine-tuned by ``ttp_dense_ft`` on (:meth:`query_text`,
    purchased item) pairs (:data:`DENSE_FINE_TUNED`), ranking with the same text."""

    trained_model = DENSE_FINE_TUNED
    config_keys = ("dense",)
    default_params = {"max_length": 128}

    @classmethod
    def params_from_config(cls, ttp):
        return {"max_length": int(ttp["dense"]["max_length"])}

    def rank(self, examples):
        r = stage_retriever("dense", self.ctx.models[self.name], self.ctx)
        max_length = int(self.params.get("max_length", 0))
        texts = [
            self.query_text(
                ex.query,
                self.ctx.history_texts(ex) if self.uses_history else (),
                self.ctx.rewrites.get(ex.example_id),
                max_length,
            )
            for ex in examples
        ]
        return rank_texts(r, examples, texts, self.ctx.depth)


@PERSONAL_RETRIEVERS.register("dense")
class DenseQueryOnly(FineTunedDense):
    name, label = "dense", "Dense (query only)"
    model_roles = ("dense",)
    # the query alone: no settings of its own
    config_keys, default_params = (), {}
    # a BERT-family bi-encoder, contrastive only: the paper's BERT-base row
    paper_rows = {"table4": "bert_base"}
    stands_in_for = "llm_embedding"
    stand_in_label = "Query-only dense (stand-in for Qwen-Embedding)"

    @classmethod
    def params_from_config(cls, ttp):
        return {}


@PERSONAL_RETRIEVERS.register("history_aware")
class HistoryAware(FineTunedDense):
    """The selected history serialised before the query (:func:`history_aware_text`), the
    oldest items dropped first to leave room for the query."""

    name, label, uses_history = "history_aware", "History-Aware", True
    model_roles = ("history_aware",)
    paper_rows = {"table4": "history_aware", "table5": "history_aware"}

    @classmethod
    def query_text(cls, query, history_texts, rewrite, max_length):
        return history_aware_text(query, history_texts, history_word_budget(max_length))
