"""Lexical BM25: bm25s (the workflow's retriever) and Lucene's BM25 through pyserini (parity).

``bm25``: bm25s with the reference code's settings by default (k1 = 1.5, b = 0.75, Lucene's
BM25 variant, bm25s' English stopword list, no stemming); stemming is a PyStemmer algorithm
name (``english`` = Snowball/Porter2, ``porter`` = Porter). Tokens follow bm25s (lower case,
``\\b\\w\\w+\\b``, so one-character tokens are dropped). Like Lucene, only documents that share
at least one term with the query are retrieved, best first. Ties (``ties``): ``corpus_order``
(default, what every recorded run used) puts the lower corpus position first, i.e. the lower
``parent_asin``, as every retriever of this package does; ``native`` keeps bm25s' own order,
the top-k selection ``BM25.retrieve`` uses without JAX (``bm25s.selection.topk``, numpy
backend: ``argpartition`` then an unstable ``argsort``), for comparison with plain bm25s
runs. Only the order of equal scores differs, and which equal-score documents fill the last
places at the depth.

``lucene_bm25``: Anserini's Lucene BM25 (pyserini). ``analyzer: bm25s`` indexes the very tokens
that ``bm25`` produces (pre-tokenized, whitespace analyzer), isolating the scoring function,
which is how the parity test compares the two; ``analyzer: english`` uses Anserini's default
English analyzer (Porter stemming, Lucene stopwords). Lucene stores document lengths in one
byte (lossy), so scores differ slightly from bm25s' exact lengths.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from personalir.retrieval.base import (
    RETRIEVERS,
    QueryText,
    Ranking,
    Retriever,
    RetrieverConfigError,
    top_k,
)
from personalir.retrieval.corpus import Corpus


class BM25Tokenizer:
    """bm25s' tokenizer with configured stopwords and (PyStemmer) stemming."""

    def __init__(self, stopwords: str | list[str] | None, stemmer: str | None):
        self.stopwords = stopwords or []
        self.stemmer = None
        if stemmer:
            try:
                import Stemmer
            except ImportError as exc:
                raise RetrieverConfigError(
                    "BM25 stemming needs PyStemmer: `pip install PyStemmer==3.1.0`"
                ) from exc
            if stemmer not in Stemmer.algorithms():
                raise RetrieverConfigError(
                    f"unknown stemmer {stemmer!r}; PyStemmer offers {Stemmer.algorithms()}"
                )
            self.stemmer = Stemmer.Stemmer(stemmer)

    def __call__(self, texts: Sequence[str], *, ids: bool = False):
        """Token lists, or with ``ids`` bm25s' (ids, vocabulary) tuple for indexing."""
        import bm25s

        return bm25s.tokenize(
            list(texts),
            stopwords=self.stopwords,
            stemmer=self.stemmer,
            return_ids=ids,
            show_progress=False,
        )


@RETRIEVERS.register("bm25")
class BM25Retriever(Retriever):
    family = "lexical"
    default_params = {
        "k1": 1.5,
        "b": 0.75,
        "method": "lucene",
        "stopwords": "en",
        "stemmer": None,
        "ties": "corpus_order",
    }
    TIES = ("corpus_order", "native")

    def index(self, corpus: Corpus) -> None:
        import bm25s

        if self.params["ties"] not in self.TIES:
            raise RetrieverConfigError(
                f"bm25: ties {self.params['ties']!r} not in {list(self.TIES)}"
            )
        self.corpus = corpus
        self.tokenizer = BM25Tokenizer(self.params["stopwords"], self.params["stemmer"])
        self.bm25 = bm25s.BM25(
            k1=self.params["k1"], b=self.params["b"], method=self.params["method"]
        )
        self.bm25.index(self.tokenizer(corpus.texts, ids=True), show_progress=False)

    def scores(self, tokens: list[str]) -> np.ndarray:
        ids = self.bm25.get_tokens_ids(tokens)
        if not ids:
            return np.zeros(len(self.corpus), dtype=np.float32)
        return self.bm25.get_scores_from_ids(ids)

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        doc_ids = np.asarray(self.corpus.doc_ids, dtype=object)
        out: Ranking = {}
        for q, tokens in zip(queries, self.tokenizer([q.text for q in queries]), strict=True):
            scores = self.scores(tokens)
            if self.params["ties"] == "native":
                best = native_top_k(scores, depth)
            else:
                matching = np.flatnonzero(scores > 0)
                best = matching[top_k(scores[matching], depth)]
            out[q.query_id] = list(zip(doc_ids[best].tolist(), scores[best].tolist(), strict=True))
        return out


def native_top_k(scores: np.ndarray, depth: int) -> np.ndarray:
    """bm25s' own top-k order (as ``BM25.retrieve`` with numpy), matching documents only."""
    from bm25s.selection import topk

    k = min(int(depth), scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    top_scores, indices = topk(scores, k=k, backend="numpy", sorted=True)
    return np.asarray(indices)[np.asarray(top_scores) > 0]


def _ensure_java_home() -> None:
    if os.environ.get("JAVA_HOME"):
        return
    java = shutil.which("java")
    if java is None:
        raise RetrieverConfigError(
            "pyserini needs a Java runtime (11 or newer for pyserini 0.25.0): install one "
            "(Debian: openjdk-17-jre-headless) or set JAVA_HOME"
        )
    os.environ["JAVA_HOME"] = str(Path(os.path.realpath(java)).parents[1])


def anserini_classes():
    """Anserini's Java indexer, searcher and whitespace analyzer (pyserini's jar, via pyjnius).

    Only ``pyserini.pyclass`` is imported: pyserini's search package would also import its
    neural encoders (torch, transformers, an OpenAI client) and take ~20 s more to start.
    """
    _ensure_java_home()
    try:
        from pyserini.pyclass import autoclass
    except ImportError as exc:
        raise RetrieverConfigError(
            "lucene_bm25 needs pyserini: `pip install pyserini==0.25.0 openai==2.33.0` "
            f"and Java 11+ ({exc})"
        ) from exc
    return (
        autoclass("io.anserini.index.SimpleIndexer"),
        autoclass("io.anserini.search.SimpleSearcher"),
        autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer"),
    )


@RETRIEVERS.register("lucene_bm25")
class LuceneBM25Retriever(Retriever):
    family = "lexical"
    default_params = {
        "k1": 1.5,
        "b": 0.75,
        "analyzer": "bm25s",
        "stopwords": "en",
        "stemmer": None,
    }

    def index(self, corpus: Corpus) -> None:
        if self.params["analyzer"] not in ("bm25s", "english"):
            raise RetrieverConfigError(
                f"lucene_bm25: analyzer {self.params['analyzer']!r} not in ['bm25s', 'english']"
            )
        JIndexer, JSearcher, JWhitespaceAnalyzer = anserini_classes()
        self.corpus = corpus
        self.tokenizer = None
        texts = list(corpus.texts)
        args = []
        if self.params["analyzer"] == "bm25s":
            self.tokenizer = BM25Tokenizer(self.params["stopwords"], self.params["stemmer"])
            texts = [" ".join(toks) for toks in self.tokenizer(texts)]
            args = ["-pretokenized"]
        self._dir = tempfile.mkdtemp(prefix="lucene_bm25_")
        # One thread and corpus order, so Lucene's internal ids (its tie-break) follow ours.
        argv = ["-index", self._dir, "-input", "", "-collection", "JsonCollection"]
        indexer = JIndexer([*argv, "-threads", "1", *args])
        for doc_id, text in zip(corpus.doc_ids, texts, strict=True):
            indexer.addRawDocument(json.dumps({"id": doc_id, "contents": text}))
        indexer.close()
        self.searcher = JSearcher(self._dir)
        self.searcher.set_bm25(float(self.params["k1"]), float(self.params["b"]))
        if self.tokenizer is not None:
            self.searcher.set_analyzer(JWhitespaceAnalyzer())

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        texts = [q.text for q in queries]
        if self.tokenizer is not None:
            texts = [" ".join(toks) for toks in self.tokenizer(texts)]
        out: Ranking = {}
        for q, text in zip(queries, texts, strict=True):
            hits = self.searcher.search(text, int(depth)) if text.strip() else []
            out[q.query_id] = [(h.docid, float(h.score)) for h in hits]
        return out

    def close(self) -> None:
        if getattr(self, "_dir", None):
            self.searcher.close()
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
