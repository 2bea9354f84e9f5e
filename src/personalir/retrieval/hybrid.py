"""Hybrid retrieval: BGE-M3's dense + sparse + multi-vector scores, and the packaged fusion.

``bge_m3`` (the paper's "BGE-M3 Hybrid", where the reference code ran dense only): with
FlagEmbedding's BGE-M3 model, every document gets

    s = (w_dense * <q, d> + w_sparse * sum_t w_q(t) w_d(t) + w_colbert * colbert(q, d)) / sum(w)

with ``colbert(q, d) = mean_t max_u <q_t, d_u>`` over the query's token vectors (FlagEmbedding's
``compute_score``) and the model card's weights 0.4 / 0.2 / 0.4. All three are computed
exactly for every document, streaming the corpus in chunks so the multi-vector
representations never all sit in memory.

``fused_dense_sparse`` (the embedded default, named as what it is): the packaged dense
bi-encoder and the packaged SPLADE, each score row min-max normalised over the corpus per
query, then ``w_dense * dense + w_sparse * sparse``. It shares the idea of BGE-M3's hybrid
(lexical and semantic matching in one score) but not its model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from personalir.common.models import resolve_model
from personalir.retrieval.base import (
    RETRIEVERS,
    QueryText,
    Ranking,
    Retriever,
    RetrieverConfigError,
    TopKAccumulator,
    chunks,
    ranking_from_scores,
)
from personalir.retrieval.corpus import Corpus
from personalir.retrieval.dense import DenseRetriever
from personalir.retrieval.sparse import SpladeRetriever
from personalir.retrieval.torchutil import maxsim_scores, setup_torch


def minmax_rows(block: np.ndarray) -> np.ndarray:
    """Scale each row to [0, 1]; a constant row becomes 0."""
    lo = block.min(axis=1, keepdims=True)
    span = block.max(axis=1, keepdims=True) - lo
    return np.where(span > 0, (block - lo) / np.where(span > 0, span, 1.0), 0.0)


@RETRIEVERS.register("fused_dense_sparse")
class FusedDenseSparseRetriever(Retriever):
    family = "hybrid"
    default_params = {
        "dense_model": "packaged:all-MiniLM-L6-v2",
        "sparse_model": "packaged:splade-tiny",
        "weights": {"dense": 0.5, "sparse": 0.5},
        "normalization": "minmax",
    }

    @classmethod
    def member_encoders(cls, params: Mapping | None) -> list[tuple[str, str]]:
        """(retriever type, model) of the runs whose encodings this one can share."""
        merged = {**cls.default_params, **(params or {})}
        return [("dense", merged["dense_model"]), ("splade", merged["sparse_model"])]

    def index(self, corpus: Corpus) -> None:
        if self.params["normalization"] not in ("minmax", "none"):
            raise RetrieverConfigError(
                f"normalization {self.params['normalization']!r} not in ['minmax', 'none']"
            )
        self.corpus = corpus
        if getattr(self, "dense", None) is None:
            self.dense = DenseRetriever(self.params["dense_model"], settings=self.settings)
            self.sparse = SpladeRetriever(self.params["sparse_model"], settings=self.settings)
        self.dense.index(corpus)
        self.sparse.index(corpus)

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        w = self.params["weights"]
        norm = minmax_rows if self.params["normalization"] == "minmax" else (lambda b: b)
        out: Ranking = {}
        blocks = zip(
            self.dense.score_blocks(queries), self.sparse.score_blocks(queries), strict=True
        )
        for (sl, dense), (_, sparse) in blocks:
            fused = w["dense"] * norm(np.asarray(dense, dtype=np.float64)) + w["sparse"] * norm(
                np.asarray(sparse, dtype=np.float64)
            )
            ids = [q.query_id for q in queries[sl]]
            out.update(ranking_from_scores(ids, self.corpus.doc_ids, fused, depth))
        return out


def lexical_matrix(weights: list[dict], vocab_size: int):
    """CSR (texts x vocabulary) from FlagEmbedding's ``{token_id: weight}`` dictionaries."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for i, lw in enumerate(weights):
        for tok, val in lw.items():
            rows.append(i)
            cols.append(int(tok))
            vals.append(float(val))
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(weights), vocab_size), dtype=np.float64)


@RETRIEVERS.register("bge_m3")
class BGEM3HybridRetriever(Retriever):
    family = "hybrid"
    default_model = "BAAI/bge-m3"
    default_params = {
        "weights": {"dense": 0.4, "sparse": 0.2, "colbert": 0.4},
        "query_max_length": 64,
        "passage_max_length": 512,
        "use_fp16": "auto",
    }

    def index(self, corpus: Corpus) -> None:
        self.corpus = corpus
        if getattr(self, "m3", None) is not None:  # loaded once, reused for every domain
            return
        setup_torch(self.settings)
        ref = resolve_model(self.model, allow_download=self.settings.allow_download)
        from FlagEmbedding import BGEM3FlagModel

        device = self.settings.torch_device()
        fp16 = self.params["use_fp16"]
        self.m3 = BGEM3FlagModel(
            ref.path,
            use_fp16=device.startswith("cuda") if fp16 == "auto" else bool(fp16),
            devices=device,
            batch_size=self.settings.batch_size,
            query_max_length=self.params["query_max_length"],
            passage_max_length=self.params["passage_max_length"],
            normalize_embeddings=True,
        )
        self.vocab_size = len(self.m3.tokenizer)

    def _encode(self, texts: Sequence[str], *, queries: bool) -> dict:
        fn = self.m3.encode_queries if queries else self.m3.encode_corpus
        return fn(
            list(texts),
            batch_size=self.settings.batch_size,
            return_dense=True,
            return_sparse=True,
            return_colbert_vecs=True,
        )

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        w = self.params["weights"]
        total = w["dense"] + w["sparse"] + w["colbert"]
        q = self._encode([x.text for x in queries], queries=True)
        q_sparse = lexical_matrix(q["lexical_weights"], self.vocab_size)
        q_colbert = [np.asarray(v, dtype=np.float32) for v in q["colbert_vecs"]]
        q_len = np.array([max(1, len(v)) for v in q_colbert], dtype=np.float64)[:, None]
        acc = TopKAccumulator(len(queries), depth)
        device = self.settings.torch_device()
        for sl in chunks(len(self.corpus), self.settings.doc_chunk):
            d = self._encode(self.corpus.texts[sl], queries=False)
            dense = q["dense_vecs"].astype(np.float64) @ d["dense_vecs"].astype(np.float64).T
            sparse = (q_sparse @ lexical_matrix(d["lexical_weights"], self.vocab_size).T).toarray()
            colbert = (
                maxsim_scores(
                    q_colbert,
                    [np.asarray(v, dtype=np.float32) for v in d["colbert_vecs"]],
                    device=device,
                )
                / q_len
            )
            acc.add(
                (w["dense"] * dense + w["sparse"] * sparse + w["colbert"] * colbert) / total,
                sl.start,
            )
        return acc.ranking([x.query_id for x in queries], self.corpus.doc_ids)
