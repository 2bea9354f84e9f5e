"""Relevance models: score (text, item text) pairs for history selection and rewrite gains.

Registered by name in :data:`RELEVANCE_MODELS`:

``dense``     a sentence-transformers bi-encoder, cosine similarity (default: the packaged
              all-MiniLM-L6-v2, offline);
``reranker``  a cross-encoder through FlagEmbedding's ``FlagReranker`` (the paper's
              bge-reranker-v2-m3 by config; needs the model in the local hub cache),
              sigmoid-normalised scores.

Both expose ``score(queries, texts)`` for aligned lists of pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from personalir.common.models import resolve_model
from personalir.common.registry import Registry


class RelevanceModel:
    name = "relevance"

    def score(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError


RELEVANCE_MODELS: Registry[type[RelevanceModel]] = Registry("relevance model")


@RELEVANCE_MODELS.register("dense")
class DenseRelevance(RelevanceModel):
    """Cosine similarity of a bi-encoder; embeddings are cached per distinct text."""

    def __init__(
        self,
        model: str = "packaged:all-MiniLM-L6-v2",
        batch_size: int = 64,
        allow_download: bool = False,
        max_length: int | None = None,
        device: str = "cpu",
    ):
        from sentence_transformers import SentenceTransformer

        ref = resolve_model(model, allow_download=allow_download)
        self.name = f"dense:{model}"
        self.encoder = SentenceTransformer(ref.path, device=device)
        if max_length:
            self.encoder.max_seq_length = int(max_length)
        self.batch_size = batch_size
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            emb = self.encoder.encode(
                missing,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            for t, e in zip(missing, emb, strict=True):
                self._cache[t] = np.asarray(e, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.encoder.get_sentence_embedding_dimension()), np.float32)
        return np.stack([self._cache[t] for t in texts])

    def score(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        if len(queries) != len(texts):
            raise ValueError("queries and texts must be aligned")
        q = self.embed(queries)
        d = self.embed(texts)
        return np.einsum("ij,ij->i", q, d).astype(np.float64) if len(q) else np.zeros(0)


@RELEVANCE_MODELS.register("reranker")
class RerankerRelevance(RelevanceModel):
    """FlagEmbedding's cross-encoder reranker (bge-reranker-v2-m3 at paper scale)."""

    def __init__(
        self,
        model: str = "BAAI/bge-reranker-v2-m3",
        batch_size: int = 32,
        allow_download: bool = False,
        max_length: int = 512,
        use_fp16: bool = False,
        device: str = "cpu",
    ):
        from FlagEmbedding import FlagReranker

        ref = resolve_model(model, allow_download=allow_download)
        self.name = f"reranker:{model}"
        self.model = FlagReranker(
            ref.path,
            use_fp16=use_fp16,
            batch_size=batch_size,
            max_length=max_length,
            devices=[device],
        )

    def score(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        if len(queries) != len(texts):
            raise ValueError("queries and texts must be aligned")
        if not queries:
            return np.zeros(0)
        scores = self.model.compute_score(
            [[q, t] for q, t in zip(queries, texts, strict=True)], normalize=True
        )
        return np.atleast_1d(np.asarray(scores, dtype=np.float64))


def build_relevance(section: dict, device: str = "cpu") -> RelevanceModel:
    """From the config section ``{type, model, batch_size, ...}``, on ``device`` (a resolved
    ``ttp.device``; passed only when not the CPU, every model's default)."""
    kwargs = {k: v for k, v in section.items() if k != "type" and v is not None}
    if device != "cpu":
        kwargs["device"] = device
    return RELEVANCE_MODELS.get(section["type"])(**kwargs)
