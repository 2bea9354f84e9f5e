"""The history-fusion baselines of Table 4 as methods: UIA and MAPs-style, the fusion module
(:mod:`personalir.ttp.training.fusion`) over the frozen query-only bi-encoder."""

from __future__ import annotations

import numpy as np

from personalir.ttp.methods.base import PERSONAL_RETRIEVERS, PersonalRetriever, TrainedModel
from personalir.ttp.model.bi_encoder import normalise, st_encode, st_encoder
from personalir.ttp.model.search import exact_search
from personalir.ttp.training.fusion import fuse, load_fusion


class _FusionRetriever(PersonalRetriever):
    uses_history = True
    config_keys = ("fusion",)
    # its attention module, trained by ttp_fusion over the query-only bi-encoder (role dense)
    trained_model = TrainedModel(
        "ttp_fusion", "ttp/fusion/{name}", files=("fusion.json", "fusion.safetensors")
    )

    def rank(self, examples):
        dense = self.ctx.models["dense"]
        module, meta = load_fusion(self.ctx.models[self.name], dense)
        enc = st_encoder(dense, self.ctx.device)
        items = st_encode(enc, self.ctx.item_texts())
        q = st_encode(enc, [ex.query for ex in examples])
        hist = [
            st_encode(enc, self.ctx.history_texts(ex)).reshape(-1, items.shape[1])
            for ex in examples
        ]
        fused, gate = fuse(module, q, hist)
        self.info.update(
            chosen_epoch=meta["selection"]["chosen"],
            empty_history_share=float(np.mean([len(h) == 0 for h in hist])) if hist else 0.0,
        )
        if meta["experts"] > 1 and len(gate):
            self.info["mean_gate"] = [round(float(g), 4) for g in gate.mean(axis=0)]
        return exact_search(
            [ex.example_id for ex in examples],
            normalise(fused),
            self.ctx.corpus.ids,
            items,
            self.ctx.depth,
        )


@PERSONAL_RETRIEVERS.register("uia")
class UIA(_FusionRetriever):
    """UIA: the query attends over the history (see the module docstring)."""

    name, label = "uia", "UIA"
    paper_rows = {"table4": "uia"}
    model_roles = ("dense", "uia")


@PERSONAL_RETRIEVERS.register("maps")
class MAPsStyle(_FusionRetriever):
    """MAPs-style: a query-gated mixture of attention experts (see the module docstring)."""

    name, label = "maps", "MAPs-style"
    paper_rows = {"table4": "maps", "table5": "maps_quoted"}
    model_roles = ("dense", "maps")
