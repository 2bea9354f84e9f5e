"""Late interaction: ColBERTv2 through sentence-transformers' MultiVectorEncoder, and MaxSim
over an untrained encoder's token states.

``colbert``: sentence-transformers' maintained late-interaction implementation
(``MultiVectorEncoder``, which loads Stanford ColBERT checkpoints such as
``colbert-ir/colbertv2.0`` with their projection, [Q]/[D] markers, query [MASK] expansion and
punctuation skiplist). Scores are exact MaxSim, ``sum_t max_u <q_t, d_u>``, against every
document; the corpus is streamed in chunks so its token vectors never all sit in memory.
(The reference code used a home-made re-implementation instead of a ColBERT library.)

``maxsim_untrained``: the embedded default, named as what it is. The packaged
all-MiniLM-L6-v2's token states (L2-normalised, no trained projection, no markers) scored with
the same MaxSim: the late-interaction mechanism without late-interaction training.
"""

from __future__ import annotations

from collections.abc import Sequence

from personalir.common.models import resolve_model
from personalir.retrieval.base import (
    RETRIEVERS,
    QueryText,
    Ranking,
    Retriever,
    TopKAccumulator,
    chunks,
)
from personalir.retrieval.corpus import Corpus
from personalir.retrieval.torchutil import setup_torch


@RETRIEVERS.register("colbert")
class ColBERTRetriever(Retriever):
    family = "late_interaction"
    default_model = "colbert-ir/colbertv2.0"
    default_params = {"chunk_elements": 2**26}

    def _load(self, path: str):
        from sentence_transformers import MultiVectorEncoder

        return MultiVectorEncoder(path, device=self.settings.torch_device())

    def index(self, corpus: Corpus) -> None:
        self.corpus = corpus
        if getattr(self, "encoder", None) is None:  # loaded once, reused for every domain
            setup_torch(self.settings)
            ref = resolve_model(self.model, allow_download=self.settings.allow_download)
            self.encoder = self._load(ref.path)

    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        import torch

        bs = self.settings.batch_size
        q = self.encoder.encode_query(
            [x.text for x in queries], batch_size=bs, show_progress_bar=False
        )
        acc = TopKAccumulator(len(queries), depth)
        with torch.inference_mode():
            for sl in chunks(len(self.corpus), self.settings.doc_chunk):
                d = self.encoder.encode_document(
                    list(self.corpus.texts[sl]), batch_size=bs, show_progress_bar=False
                )
                scores = self.encoder.similarity(
                    q, d, chunk_elements=int(self.params["chunk_elements"])
                )
                acc.add(scores.float().cpu().numpy(), sl.start)
        return acc.ranking([x.query_id for x in queries], self.corpus.doc_ids)


@RETRIEVERS.register("maxsim_untrained")
class UntrainedMaxSimRetriever(ColBERTRetriever):
    family = "late_interaction"
    default_model = "packaged:all-MiniLM-L6-v2"

    def _load(self, path: str):
        from sentence_transformers import MultiVectorEncoder
        from sentence_transformers.base.modules import Normalize, Transformer
        from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask

        modules = [
            Transformer(path),
            MultiVectorMask(),
            Normalize(module_input_name="token_embeddings"),
        ]
        return MultiVectorEncoder(modules=modules, device=self.settings.torch_device())
