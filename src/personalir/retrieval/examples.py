"""A minimal bring-your-own retriever: copy this file, change ``index`` and ``rank``.

Use it without registering anything, by class path::

    retrieval:
      use: [bm25, overlap]
      retrievers:
        overlap: {class: "personalir.retrieval.examples:TermOverlapRetriever"}

or from the command line (``python -m personalir.retrieval.evaluate --class
overlap=personalir.retrieval.examples:TermOverlapRetriever ...``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from personalir.retrieval.base import QueryText, Ranking, Retriever, ranking_from_scores
from personalir.retrieval.corpus import Corpus

_WORD = re.compile(r"\w+")


class TermOverlapRetriever(Retriever):
    """Jaccard overlap of lower-cased word sets (a deliberately simple lexical baseline)."""

    family = "lexical"
    default_params = {"lowercase": True}

    def _terms(self, text: str) -> set[str]:
        return set(_WORD.findall(text.lower() if self.params["lowercase"] else text))

    def index(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.doc_terms = [self._terms(t) for t in corpus.texts]

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        scores = np.zeros((len(queries), len(self.corpus)))
        for i, q in enumerate(queries):
            terms = self._terms(q.text)
            for j, doc in enumerate(self.doc_terms):
                union = len(terms | doc)
                scores[i, j] = len(terms & doc) / union if union else 0.0
        return ranking_from_scores(
            [q.query_id for q in queries], self.corpus.doc_ids, scores, depth
        )
