"""Learned sparse retrieval: SPLADE.

A text's weight for vocabulary term v is ``max_t log(1 + relu(logit[t, v]))`` over its tokens t
(the MLM head's logits; padding excluded), the SPLADE max-pooling, computed as
``log(1 + relu(max_t logit[t, v]))`` (the same: the transform is monotone). The score of a
document is the dot product of the query's and the document's sparse vectors, computed
exactly over the whole corpus with scipy sparse matrices. Packaged default: SPLADE-tiny
(BERT 2 x 128); paper scale: ``naver/splade-cocondenser-ensembledistil``.
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


class SpladeEncoder:
    def __init__(self, model: str, settings, *, batch_size: int):
        torch = setup_torch(settings)
        ref = resolve_model(model, allow_download=settings.allow_download)
        self._path = ref.path
        self.device = settings.torch_device()
        self.batch_size = batch_size
        self.torch = torch
        self.cache = EncodingCache(settings.encoding_cache) if settings.encoding_cache else None
        self._key = {
            "encoder": "splade",
            "model": ref.path,
            "files": model_fingerprint(ref.path),
            "batch_size": batch_size,
            "device": str(self.device),
            "threads": settings.threads,
            "code": source_hash(SpladeEncoder),
            "versions": library_versions("transformers", "torch"),
        }

    @functools.cached_property
    def _loaded(self):
        """(tokenizer, model), loaded on the first cache miss: a job whose every encoding is
        cached never loads them."""
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        # self._path is a local folder (resolve_model), not a hub id.
        tokenizer = AutoTokenizer.from_pretrained(self._path)  # nosec B615
        mlm = AutoModelForMaskedLM.from_pretrained(self._path)  # nosec B615
        return tokenizer, mlm.eval().to(self.device)

    @property
    def tokenizer(self):
        return self._loaded[0]

    @property
    def model(self):
        return self._loaded[1]

    def encode(self, texts: Sequence[str], max_length: int):
        """CSR matrix (texts x vocabulary) of SPLADE weights."""
        if self.cache is None:
            return self._compute(texts, max_length)
        key = {**self._key, "max_length": max_length}
        return self.cache.sparse(key, texts, lambda: self._compute(texts, max_length))

    def _compute(self, texts: Sequence[str], max_length: int):
        import scipy.sparse as sp

        torch = self.torch
        order = np.argsort([len(t) for t in texts], kind="stable")
        rows, cols, vals = [], [], []
        with torch.inference_mode():
            for sl in chunks(len(texts), self.batch_size):
                idx = order[sl]
                enc = self.tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                ).to(self.device)
                logits = self.model(**enc).logits
                # log1p(relu(.)) is monotone: take the max over each text's own tokens first
                # (one pass over the logits instead of three full-size element-wise ones).
                mask = enc["attention_mask"].bool()
                peaks = torch.stack([logits[i][mask[i]].amax(dim=0) for i in range(len(idx))])
                rep = torch.log1p(torch.relu(peaks)).float().cpu().numpy()
                r, c = np.nonzero(rep)
                rows.append(idx[r])
                cols.append(c)
                vals.append(rep[r, c])
        shape = (len(texts), self.model.config.vocab_size)
        if not rows:
            return sp.csr_matrix(shape, dtype=np.float32)
        return sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=shape,
            dtype=np.float32,
        )


@RETRIEVERS.register("splade")
class SpladeRetriever(Retriever):
    family = "learned_sparse"
    default_model = "packaged:splade-tiny"
    default_params = {"max_length": 256, "query_max_length": 64, "batch_size": 16}

    def index(self, corpus: Corpus) -> None:
        self.corpus = corpus
        if getattr(self, "encoder", None) is None:  # loaded once, reused for every domain
            self.encoder = SpladeEncoder(
                self.model, self.settings, batch_size=self.params["batch_size"]
            )
        self.docs = self.encoder.encode(corpus.texts, self.params["max_length"]).T.tocsr()

    def score_blocks(self, queries: Sequence[QueryText]):
        """(slice, scores block) over query chunks, every document scored."""
        reps = self.encoder.encode([q.text for q in queries], self.params["query_max_length"])
        for sl in chunks(len(queries), self.settings.query_chunk):
            yield sl, (reps[sl] @ self.docs).toarray()

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        out: Ranking = {}
        for sl, block in self.score_blocks(queries):
            ids = [q.query_id for q in queries[sl]]
            out.update(ranking_from_scores(ids, self.corpus.doc_ids, block, depth))
        return out
