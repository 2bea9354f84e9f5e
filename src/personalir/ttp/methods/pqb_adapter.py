"""A personalised retriever (:mod:`personalir.ttp.methods.base`) behind the retrieval stage's
``Retriever`` interface, so the PQB evaluation can list any TTP method with ``class:``."""

from __future__ import annotations

import json

from personalir.retrieval.base import Retriever
from personalir.ttp.inputs.data import pqb_examples
from personalir.ttp.inputs.history import select_histories
from personalir.ttp.inputs.relevance import build_relevance
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS, RetrievalContext, build_retriever


def _retrieval_base():

    return Retriever


class PQBPersonalRetriever(_retrieval_base()):
    """A personalised retriever behind the retrieval stage's ``Retriever`` interface.

    Config (``retrieval.retrievers.<name>``)::

        class: "personalir.ttp.methods.pqb_adapter:PQBPersonalRetriever"
        params: {method: history_aware, benchmark: ..., reviews: ..., products: ...,
                 meta: ..., models: {dense: ..., history_aware: ...}, n_history: 10}

    ``index`` loads the benchmark's examples (user review history as purchase history) and
    selects their histories; ``rank`` maps each query id to its example.
    """

    family = "external"
    default_params = {
        "method": "dense",
        "benchmark": None,
        "reviews": None,
        "products": None,
        "meta": None,
        "domain": "",
        "models": {},
        "method_params": {},
        "n_history": 10,
        "relevance": {"type": "dense", "model": "packaged:all-MiniLM-L6-v2"},
        "item_fields": ["title", "main_category", "features"],
        "rewrites": None,
    }

    def index(self, corpus) -> None:

        p = self.params
        examples, items = pqb_examples(
            benchmark=p["benchmark"],
            reviews=p["reviews"],
            products=p["products"],
            meta=p["meta"],
            domain=p["domain"],
        )
        extra = sorted(set(corpus.doc_ids) - set(items.ids))
        if extra:
            raise ValueError(f"corpus documents without product data: {extra[:3]}")
        fields = tuple(p["item_fields"])
        device = self.settings.torch_device()  # the retrieval stage's (retrieval.device)
        if PERSONAL_RETRIEVERS.get(p["method"]).uses_history:
            select_histories(
                examples,
                items,
                build_relevance(dict(p["relevance"]), device),
                int(p["n_history"]),
                fields,
            )
        else:
            for ex in examples:
                ex.selected_history = []
        rewrites = {}
        if p["rewrites"]:
            with open(p["rewrites"], encoding="utf-8") as fh:
                rewrites = {r["example_id"]: r["rewrite"] for r in map(json.loads, fh)}
        self.examples = {ex.example_id: ex for ex in examples}
        self.context = RetrievalContext(
            corpus=items,
            item_fields=fields,
            seed=self.settings.seed,
            threads=self.settings.threads,
            models=dict(p["models"]),
            rewrites=rewrites,
            model_cache=self.settings.model_cache,
            device=device,
        )
        self.corpus = corpus

    def rank(self, queries, depth: int):
        missing = [q.query_id for q in queries if q.query_id not in self.examples]
        if missing:
            raise ValueError(f"queries not in the benchmark file: {missing[:3]}")
        self.context.depth = depth
        retriever = build_retriever(
            self.params["method"], self.context, self.params["method_params"]
        )
        return retriever.rank([self.examples[q.query_id] for q in queries])
