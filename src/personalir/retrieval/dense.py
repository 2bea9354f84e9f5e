"""Dense bi-encoders through sentence-transformers, with exact inner-product search.

Any sentence-transformers model works by name (hub id or folder): packaged default
all-MiniLM-L6-v2, paper scale ``thenlper/gte-base``. Embeddings are L2-normalised by default
(cosine); the search is exhaustive (every document scored, the result faiss' IndexFlatIP would
give) with ties broken by corpus position. ``encode_query``/``encode_document`` apply the
model's own query/document prompts when it defines them; ``query_prompt``/``document_prompt``
override them (e.g. ``"query: "`` for E5).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from personalir.common.models import resolve_model
from personalir.retrieval.base import (
    RETRIEVERS,
    QueryText,
    Ranking,
    Retriever,
    chunks,
    ranking_from_scores,
)
from personalir.retrieval.corpus import Corpus
from personalir.retrieval.encodings import (
    EncodingCache,
    library_versions,
    model_fingerprint,
    source_hash,
)
from personalir.retrieval.torchutil import setup_torch


class DenseEncoder:
    def __init__(self, model: str, settings, params: dict):
        setup_torch(settings)
        ref = resolve_model(model, allow_download=settings.allow_download)
        self._path, self._device = ref.path, settings.torch_device()
        self.params = params
        self.batch_size = settings.batch_size
        self.cache = EncodingCache(settings.encoding_cache) if settings.encoding_cache else None
        self._key = {
            "encoder": "dense",
            "model": ref.path,
            "files": model_fingerprint(ref.path),
            "batch_size": self.batch_size,
            "device": settings.torch_device(),
            "threads": settings.threads,
            "code": source_hash(DenseEncoder),
            "versions": library_versions("sentence-transformers", "transformers", "torch"),
        }

    @functools.cached_property
    def model(self):
        """The sentence-transformers model, loaded on the first cache miss: a job whose every
        encoding is cached never loads it."""
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(self._path, device=self._device)
        if self.params.get("max_length"):
            st.max_seq_length = int(self.params["max_length"])
        return st

    def _encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        if self.cache is None:
            return self._compute(texts, role)
        key = {
            **self._key,
            "role": role,
            "normalize": bool(self.params.get("normalize", True)),
            "max_length": self.params.get("max_length"),
            "prompt": self.params.get(f"{role}_prompt"),
        }
        return self.cache.dense(key, texts, lambda: self._compute(texts, role))

    def _compute(self, texts: Sequence[str], role: str) -> np.ndarray:
        prompt = self.params.get(f"{role}_prompt")
        fn = getattr(self.model, f"encode_{role}", None) or self.model.encode
        kwargs = {"prompt": prompt} if prompt else {}
        emb = fn(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=bool(self.params.get("normalize", True)),
            show_progress_bar=False,
            **kwargs,
        )
        return np.asarray(emb, dtype=np.float32)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "document")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query")


@RETRIEVERS.register("dense")
class DenseRetriever(Retriever):
    family = "dense"
    default_model = "packaged:all-MiniLM-L6-v2"
    default_params = {
        "normalize": True,
        "max_length": None,
        "query_prompt": None,
        "document_prompt": None,
    }

    def index(self, corpus: Corpus) -> None:
        self.corpus = corpus
        if getattr(self, "encoder", None) is None:  # loaded once, reused for every domain
            self.encoder = DenseEncoder(self.model, self.settings, self.params)
        self.docs = self.encoder.encode_documents(corpus.texts)

    def score_blocks(self, queries: Sequence[QueryText]):
        reps = self.encoder.encode_queries([q.text for q in queries])
        for sl in chunks(len(queries), self.settings.query_chunk):
            yield sl, reps[sl] @ self.docs.T

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        out: Ranking = {}
        for sl, block in self.score_blocks(queries):
            ids = [q.query_id for q in queries[sl]]
            out.update(ranking_from_scores(ids, self.corpus.doc_ids, block, depth))
        return out
