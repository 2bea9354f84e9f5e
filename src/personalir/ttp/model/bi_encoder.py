"""The sentence-transformers bi-encoder that several baselines embed with (loaded by name or
folder, L2-normalised embeddings)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from personalir.common.models import resolve_model


def st_encoder(model: str, device: str = "cpu"):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model(model).path, device=device)


def st_encode(encoder, texts: Sequence[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, encoder.get_sentence_embedding_dimension()), np.float32)
    return np.asarray(
        encoder.encode(
            list(texts),
            batch_size=64,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        ),
        dtype=np.float32,
    )


def normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
