"""The TTP model as a method: generate ``<think>rewrite</think><embed>``, embed at ``<embed>``,
exact search; its RL and w/o-Intent-Q variants and the LLM-embedding baseline."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from personalir.common.device import to_device
from personalir.retrieval import encodings as e
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS, PersonalRetriever
from personalir.ttp.model.backbone import load_adapter, load_backbone
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import parse_generated, target_text
from personalir.ttp.model.search import exact_search
from personalir.ttp.training.sft_data import SFTSettings, build_prompt


@PERSONAL_RETRIEVERS.register("ttp")
class TTPRetriever(PersonalRetriever):
    """The TTP model: generate a rewrite, embed at ``<embed>``, exact search (see module doc)."""

    name, label, uses_history = "ttp", "TTP (SFT)", True
    paper_rows = dict.fromkeys(("table4", "table5", "table6", "table7", "figure5"), "ttp_sft")
    model_roles, config_keys = ("ttp_backbone", "ttp_adapter"), ("inference", "sft")
    generates_text = True
    # Which adapter ``ttp_adapter`` names: the SFT one, or an RL variant's (``rl:<variant>``).
    adapter: ClassVar[str] = "sft"
    # False: the original query replaces the generated rewrite (the paper's "w/o Intent-Q").
    intent_q: ClassVar[bool] = True
    # False: the prompt holds the query alone (the LLM-embedding baseline reads no history).
    with_history: ClassVar[bool] = True

    @classmethod
    def params_from_config(cls, ttp):
        return {
            "max_new_tokens": ttp["inference"]["max_new_tokens"],
            "batch_size": ttp["inference"]["batch_size"],
            "max_query_tokens": ttp["sft"]["max_query_tokens"],
            "max_item_tokens": ttp["sft"]["max_item_tokens"],
            "history_item_tokens": ttp["sft"]["history_item_tokens"],
            "system_prompt": ttp["sft"]["system_prompt"],
        }

    default_params = {
        "max_new_tokens": 24,
        "batch_size": 16,
        "max_query_tokens": 512,
        "max_item_tokens": 64,
        "history_item_tokens": 48,
        "system_prompt": None,
    }

    def __init__(self, context, params=None):
        super().__init__(context, params)
        self.encoder = None

    def load(self):

        model, tok, info = load_backbone(self.ctx.models["ttp_backbone"])
        adapter = self.ctx.models.get("ttp_adapter")
        if adapter:
            model = load_adapter(model, adapter)
        # Loaded on the CPU (backbone and adapter), moved once (``ttp.device``).
        model = to_device(model, self.ctx.device)
        self.encoder = TTPEncoder(
            model,
            tok,
            max_query_tokens=int(self.params["max_query_tokens"]),
            max_item_tokens=int(self.params["max_item_tokens"]),
            batch_size=int(self.params["batch_size"]),
        )
        self.info["backbone"] = info.description

    def rank(self, examples):
        import time

        if self.encoder is None:
            self.load()
        enc = self.encoder
        settings = SFTSettings(
            item_fields=self.ctx.item_fields,
            max_features=self.ctx.max_features,
            history_item_tokens=int(self.params["history_item_tokens"]),
            system_prompt=self.params["system_prompt"],
        )
        if not self.with_history:
            from dataclasses import replace

            examples = [replace(ex, selected_history=[]) for ex in examples]
        t0 = time.perf_counter()
        items = self._items(enc)
        t1 = time.perf_counter()
        prompts = [build_prompt(ex, self.ctx.corpus, enc.tokenizer, settings) for ex in examples]
        if self.intent_q:
            generated, queries, well_formed = enc.generate_and_embed(
                prompts, int(self.params["max_new_tokens"])
            )
            parsed = [parse_generated(g)[0] for g in generated]
        else:  # no generation: the query itself in the rewrite's place
            parsed = [ex.query for ex in examples]
            queries = enc.encode_queries(prompts, parsed)
            generated = [target_text(q) for q in parsed]
            well_formed = [True] * len(parsed)
        t2 = time.perf_counter()
        self.info.update(
            rewrites={
                ex.example_id: {"generated": g, "rewrite": p, "well_formed": w}
                for ex, g, p, w in zip(examples, generated, parsed, well_formed, strict=True)
            },
            well_formed_share=float(np.mean(well_formed)) if well_formed else float("nan"),
            seconds={"items": round(t1 - t0, 3), "queries": round(t2 - t1, 3)},
            items=len(items),
            queries=len(queries),
        )
        return exact_search(
            [ex.example_id for ex in examples], queries, self.ctx.corpus.ids, items, self.ctx.depth
        )

    def _items(self, enc):
        """The item embeddings: from the encoding cache when a run of the same backbone,
        adapter, settings and thread count wrote them (a method and its w/o-Intent-Q
        variant share them), else encoded (and written there)."""
        texts = self.ctx.item_texts()
        if not self.ctx.encoding_cache:
            return enc.encode_items(texts)
        import torch

        key = {
            "encoder": "ttp_items",
            "models": [e.model_fingerprint(str(self.ctx.models[r])) for r in self.model_roles],
            "settings": [enc.max_item_tokens, enc.batch_size, torch.get_num_threads()]
            # another device's encodings differ in rounding; the CPU's key is as it was
            + ([self.ctx.device] if self.ctx.device != "cpu" else []),
            "source": e.source_hash(TTPEncoder),
            "versions": e.library_versions("torch", "transformers", "peft"),
        }
        cache = e.EncodingCache(self.ctx.encoding_cache)
        items = cache.dense(key, texts, lambda: enc.encode_items(texts))
        self.info["encoding_cache"] = cache.stats()
        return items


def _ttp_variant(
    name: str, label: str, adapter: str, intent_q: bool, paper_rows: dict[str, str]
) -> type[TTPRetriever]:
    cls = type(
        f"TTP_{name}",
        (TTPRetriever,),
        {
            "name": name,
            "label": label,
            "adapter": adapter,
            "intent_q": intent_q,
            "table4_row": name == "ttp_rl",
            "paper_rows": paper_rows,
            "__doc__": f"{label}: {TTPRetriever.__doc__}",
        },
    )
    return PERSONAL_RETRIEVERS.register(name)(cls)


# The paper's Table 6 and 7 rows: one registered method per RL variant of ``ttp.rl.variants``
# (``ttp_rl`` is the ``full`` variant) and the two "w/o Intent-Q" retrievals, each with the
# paper's row it gives per table.
_ALL = ("table4", "table5", "table6", "table7", "figure5")
RL_METHOD_VARIANTS = {
    "ttp_rl": ("full", "TTP (SFT+RL)", dict.fromkeys(_ALL, "ttp_sft_rl")),
    "ttp_rl_no_dynamic_selection": (
        "no_dynamic_selection",
        "RL w/o dynamic selection",
        {"table6": "ttp_sft_rl_no_dynamic_selection", "table7": "rl_no_dynamic_selection"},
    ),
    "ttp_rl_unfrozen_reward": (
        "unfrozen_reward",
        "RL, unfrozen reward model",
        {"table7": "rl_unfrozen_reward_model"},
    ),
    "ttp_rl_no_positive_gain": (
        "no_positive_gain",
        "RL w/o positive gain (alpha = 0)",
        {"table7": "rl_no_positive_gain"},
    ),
    "ttp_rl_no_margin_gain": (
        "no_margin_gain",
        "RL w/o margin gain (beta = 0)",
        {"table7": "rl_no_margin_gain"},
    ),
}
for _name, (_variant, _label, _rows) in RL_METHOD_VARIANTS.items():
    _ttp_variant(_name, _label, f"rl:{_variant}", True, _rows)
_ttp_variant(
    "ttp_no_intent_q",
    "TTP (SFT) w/o Intent-Q",
    "sft",
    False,
    dict.fromkeys(("table6", "figure5"), "ttp_sft_no_intent_q"),
)
_ttp_variant(
    "ttp_rl_no_intent_q",
    "TTP (SFT+RL) w/o Intent-Q",
    "rl:full",
    False,
    dict.fromkeys(("table6", "figure5"), "ttp_sft_rl_no_intent_q"),
)


@PERSONAL_RETRIEVERS.register("llm_embedding")
class LLMEmbedding(TTPRetriever):
    """The paper's Qwen-Embedding row: an LLM embedder on the TTP backbone without
    generation. Its adapter (rule ``ttp_embedder``) is trained by the SFT recipe with InfoNCE
    alone on the same examples, the prompt holding the query and no history; the run embeds
    ``<think>query</think><embed>`` (nothing generated) and the items with the same model.
    Its job takes the SFT's threads: it encodes every item with the LLM."""

    name, label, uses_history = "llm_embedding", "LLM embedding (no generation)", False
    adapter, intent_q, with_history = "embedder", False, False
    paper_rows = dict.fromkeys(("table4", "table5", "table6"), "qwen_embedding")
