"""Personalised retrievers: the TTP model and its baselines, one registered class each.

A :class:`PersonalRetriever` ranks the corpus for :class:`~personalir.ttp.data.Example`
objects (query plus selected history), so it can use the user's history. Registered in
:data:`PERSONAL_RETRIEVERS` (the config's ``ttp.methods`` lists which run):

``bm25``           query only; the retrieval stage's ``bm25`` retriever (bm25s).
``dense``          query only; the retrieval stage's ``dense`` retriever with the bi-encoder
                   fine-tuned on (query, purchased item) pairs (:mod:`personalir.ttp.dense_ft`).
``history_aware``  the selected history prepended... appended after the query (so truncation
                   keeps the query), same bi-encoder recipe fine-tuned on that text:
                   contrastive only, no rewriting.
``p_prf``          personalised pseudo-relevance feedback: the query embedding moved towards
                   the mean embedding of the selected history items (Rocchio,
                   ``q' = q + beta * mean(h)``) under the query-only dense model. (PBR's P-PRF
                   generates its feedback with an LLM; this variant uses the history items
                   themselves as the feedback documents.)
``hyde``           HyDE: a generator LLM writes a hypothetical product for the query; the
                   query-only dense model embeds query and document, averaged.
``decoupled``      Decoupled-Stage: a separate rewriter (the TTP SFT recipe with the token
                   loss alone, then frozen) rewrites the query; a bi-encoder fine-tuned on
                   (rewrite, purchased item) pairs retrieves with the rewrite
                   (:mod:`personalir.ttp.decoupled`).
``llm_embedding``  the TTP backbone as an embedder, no history and no generation (the
                   paper's Qwen-Embedding row), trained with InfoNCE alone.
``ttp``            the TTP model itself: generate ``<think>rewrite</think><embed>``, embed at
                   ``<embed>``, exact inner-product search over the items embedded by the same
                   model.

:class:`personalir.ttp.pqb_adapter.PQBPersonalRetriever` adapts any of them to the retrieval
stage's ``Retriever`` interface, so the PQB evaluation can list them with ``class:``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from personalir.common.registry import Registry
from personalir.ttp.data import Example, ItemCorpus
from personalir.ttp.evaluate import Ranking, exact_search


@dataclass
class RetrievalContext:
    """What every personalised retriever may use."""

    corpus: ItemCorpus
    item_fields: tuple[str, ...] = ("title", "main_category", "features")
    max_features: int = 3
    depth: int = 100
    seed: int = 0
    threads: int = 1
    models: dict[str, str] = field(default_factory=dict)  # role -> model name or folder
    rewrites: dict[str, str] = field(default_factory=dict)  # example id -> TTP rewrite
    # Where dequantised copies of GGUF models are kept (top-level ``model_cache``); None: none.
    model_cache: str | None = None
    # Item encodings shared between runs of the same model (personalir.retrieval.encodings);
    # None: every run encodes its items.
    encoding_cache: str | None = None
    # Torch device of the methods' models (``ttp.device``, resolved: cpu, cuda, cuda:<n>).
    device: str = "cpu"

    def item_texts(self) -> list[str]:
        return self.corpus.texts(self.item_fields, self.max_features)

    def history_texts(self, ex: Example) -> list[str]:
        if ex.selected_history is None:
            raise ValueError(f"{ex.example_id}: history selection has not been run")
        return [
            self.corpus[i].text(self.item_fields, self.max_features) for i in ex.selected_history
        ]


class PersonalRetriever:
    """A TTP method. Besides ``rank``, a subclass states what its run needs (read by
    :mod:`personalir.ttp.workflow` to build the ``ttp_run`` job, so no rule names a method):

    ``label``           its row in the Table 4 layout (rows follow ``ttp.methods``)
    ``uses_history``    whether it reads the selected history (the Table 4 claims group by it)
    ``model_roles``     the :attr:`RetrievalContext.models` roles it loads: ``dense``,
                        ``history_aware``, ``decoupled`` (the fine-tuned bi-encoder folders
                        when ``ttp.dense.fine_tune``), ``generator`` (HyDE's LLM),
                        ``ttp_backbone``, ``ttp_adapter`` (the SFT LoRA adapter)
    ``config_keys``     the ``ttp`` sections its parameters come from (a change re-runs it)
    ``needs_rewrites``  whether it reads the frozen rewriter's rewrites (``rewrites.json``)
    ``generates_text``  whether it generates with a causal LM (its job takes SFT's threads)
    ``table4_row``      whether it is a row of Table 4 (ablation variants are not)

    and :meth:`params_from_config` builds its parameters from those sections.
    """

    name: ClassVar[str] = "personal"
    label: ClassVar[str] = "Personal"
    uses_history: ClassVar[bool] = False
    default_params: ClassVar[dict[str, Any]] = {}
    model_roles: ClassVar[tuple[str, ...]] = ()
    config_keys: ClassVar[tuple[str, ...]] = ()
    needs_rewrites: ClassVar[bool] = False
    generates_text: ClassVar[bool] = False
    # Whether the method is a row of Table 4 (the ablations are rows of Tables 6 and 7).
    table4_row: ClassVar[bool] = True

    @classmethod
    def params_from_config(cls, ttp: Mapping[str, Any]) -> dict[str, Any]:
        """The method's parameters from the ``ttp`` config (only ``config_keys`` sections)."""
        return {}

    def __init__(self, context: RetrievalContext, params: Mapping[str, Any] | None = None):
        unknown = sorted(set(params or {}) - set(self.default_params))
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {unknown}")
        self.ctx = context
        self.params = {**self.default_params, **(params or {})}
        self.info: dict[str, Any] = {}

    def rank(self, examples: Sequence[Example]) -> Ranking:
        raise NotImplementedError


PERSONAL_RETRIEVERS: Registry[type[PersonalRetriever]] = Registry(
    "personalised retriever",
    required=(
        "label",
        "uses_history",
        "model_roles",
        "config_keys",
        "needs_rewrites",
        "generates_text",
    ),
    package="personalir.ttp",
    symbol="PERSONAL_RETRIEVERS",
)


def stage_retriever(kind: str, model: str | None, ctx: RetrievalContext):
    """A retriever of the retrieval stage, indexed on the item texts."""
    from personalir.retrieval.base import RETRIEVERS, RunSettings, load_builtin_retrievers
    from personalir.retrieval.corpus import corpus_from_texts

    load_builtin_retrievers()
    settings = RunSettings(
        device=ctx.device, seed=ctx.seed, threads=ctx.threads, model_cache=ctx.model_cache
    )
    retriever = RETRIEVERS.get(kind)(model=model, settings=settings)
    retriever.index(corpus_from_texts(ctx.corpus.ids, ctx.item_texts()))
    return retriever


def rank_texts(retriever, examples: Sequence[Example], texts: Sequence[str], depth: int):
    """Rank one text per example (its id the query id) with a retrieval-stage retriever."""
    from personalir.retrieval.base import QueryText

    queries = [QueryText(ex.example_id, t) for ex, t in zip(examples, texts, strict=True)]
    return retriever.rank(queries, depth)


@PERSONAL_RETRIEVERS.register("bm25")
class BM25(PersonalRetriever):
    name, label = "bm25", "BM25"

    def rank(self, examples):
        r = stage_retriever("bm25", None, self.ctx)
        return rank_texts(r, examples, [ex.query for ex in examples], self.ctx.depth)


@PERSONAL_RETRIEVERS.register("dense")
class DenseQueryOnly(PersonalRetriever):
    name, label = "dense", "Dense (query only)"
    model_roles = ("dense",)

    def rank(self, examples):
        r = stage_retriever("dense", self.ctx.models["dense"], self.ctx)
        return rank_texts(r, examples, [ex.query for ex in examples], self.ctx.depth)


def history_aware_text(
    query: str, history_texts: Sequence[str], max_history_words: int | None = None
) -> str:
    """The serialised history prepended to the query, as the paper builds History-Aware:
    ``history: h1 | h2 | ... [SEP] query: q`` (oldest first). The encoder truncates from the
    end, so with ``max_history_words`` the oldest items are dropped first until the history
    has at most that many words, and the query is never cut."""
    kept = list(history_texts)
    if max_history_words is not None:
        while kept and sum(len(t.split()) for t in kept) > max_history_words:
            kept.pop(0)
    return "history: " + " | ".join(kept) + " [SEP] query: " + query


def history_word_budget(max_length: int) -> int:
    """Words of history that leave room for the query within ``max_length`` word pieces
    (product titles take about 1.5 word pieces per word; half the budget is left over)."""
    return max(1, max_length // 3)


@PERSONAL_RETRIEVERS.register("history_aware")
class HistoryAware(PersonalRetriever):
    name, label, uses_history = "history_aware", "History-Aware", True
    model_roles, config_keys = ("history_aware",), ("dense",)
    default_params = {"max_length": 128}

    @classmethod
    def params_from_config(cls, ttp):
        return {"max_length": int(ttp["dense"]["max_length"])}

    def rank(self, examples):
        r = stage_retriever("dense", self.ctx.models["history_aware"], self.ctx)
        budget = history_word_budget(int(self.params["max_length"]))
        texts = [
            history_aware_text(ex.query, self.ctx.history_texts(ex), budget) for ex in examples
        ]
        return rank_texts(r, examples, texts, self.ctx.depth)


def _st_encoder(model: str, device: str = "cpu"):
    from sentence_transformers import SentenceTransformer

    from personalir.common.models import resolve_model

    return SentenceTransformer(resolve_model(model).path, device=device)


def _st_encode(encoder, texts: Sequence[str]) -> np.ndarray:
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


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


@PERSONAL_RETRIEVERS.register("p_prf")
class PersonalPRF(PersonalRetriever):
    name, label, uses_history = "p_prf", "P-PRF", True
    default_params = {"beta": 0.5}
    model_roles, config_keys = ("dense",), ("p_prf",)

    @classmethod
    def params_from_config(cls, ttp):
        return dict(ttp["p_prf"])

    def rank(self, examples):
        enc = _st_encoder(self.ctx.models["dense"], self.ctx.device)
        items = _st_encode(enc, self.ctx.item_texts())
        queries = _st_encode(enc, [ex.query for ex in examples])
        histories = [self.ctx.history_texts(ex) for ex in examples]
        unique = sorted({t for hist in histories for t in hist})
        vectors = dict(zip(unique, _st_encode(enc, unique), strict=True))
        feedback = np.zeros_like(queries)
        for k, hist in enumerate(histories):
            if hist:
                feedback[k] = np.mean([vectors[t] for t in hist], axis=0)
        moved = _normalise(queries + float(self.params["beta"]) * feedback)
        return exact_search(
            [ex.example_id for ex in examples], moved, self.ctx.corpus.ids, items, self.ctx.depth
        )


HYDE_PROMPT = (
    "Write the title and a one-sentence description of a product that an online store "
    "would show for the search query: {query}"
)


@PERSONAL_RETRIEVERS.register("hyde")
class HyDE(PersonalRetriever):
    name, label = "hyde", "HyDE"
    default_params = {"max_new_tokens": 24, "batch_size": 16}
    model_roles, config_keys, generates_text = ("dense", "generator"), ("hyde",), True

    @classmethod
    def params_from_config(cls, ttp):
        return {k: ttp["hyde"][k] for k in ("max_new_tokens", "batch_size")}

    def generate(self, queries: Sequence[str]) -> list[str]:
        import torch

        from personalir.common.causal_lm import load_causal_lm
        from personalir.common.models import resolve_model

        ref = resolve_model(self.ctx.models["generator"])
        model, tok = load_causal_lm(ref, device=self.ctx.device, cache_dir=self.ctx.model_cache)
        tok.padding_side = "left"
        out = []
        bs = int(self.params["batch_size"])
        with torch.no_grad():
            for start in range(0, len(queries), bs):
                prompts = [
                    tok.apply_chat_template(
                        [{"role": "user", "content": HYDE_PROMPT.format(query=q)}],
                        tokenize=False,
                        add_generation_prompt=True,
                    )
                    for q in queries[start : start + bs]
                ]
                enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
                if self.ctx.device != "cpu":
                    enc = enc.to(model.device)
                gen = model.generate(
                    **enc,
                    do_sample=False,
                    max_new_tokens=int(self.params["max_new_tokens"]),
                    pad_token_id=tok.pad_token_id,
                )
                out += [
                    t.strip()
                    for t in tok.batch_decode(
                        gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
                    )
                ]
        return out

    def rank(self, examples):
        docs = self.generate([ex.query for ex in examples])
        self.info["hypothetical_documents"] = dict(
            zip((ex.example_id for ex in examples), docs, strict=True)
        )
        enc = _st_encoder(self.ctx.models["dense"], self.ctx.device)
        items = _st_encode(enc, self.ctx.item_texts())
        q = _st_encode(enc, [ex.query for ex in examples])
        d = _st_encode(enc, docs)
        return exact_search(
            [ex.example_id for ex in examples],
            _normalise(q + d),
            self.ctx.corpus.ids,
            items,
            self.ctx.depth,
        )


@PERSONAL_RETRIEVERS.register("decoupled")
class DecoupledStage(PersonalRetriever):
    """The frozen rewriter's rewrite (``ctx.rewrites``, :mod:`personalir.ttp.decoupled`) as
    the query of the bi-encoder trained on rewrites (role ``decoupled``); an empty rewrite
    falls back to the query."""

    name, label, uses_history = "decoupled", "Decoupled-Stage", True
    model_roles, needs_rewrites = ("decoupled",), True

    def rank(self, examples):
        missing = [ex.example_id for ex in examples if ex.example_id not in self.ctx.rewrites]
        if missing:
            raise ValueError(
                f"decoupled: no rewrite for {len(missing)} example(s), e.g. {missing[:3]}"
            )
        r = stage_retriever("dense", self.ctx.models["decoupled"], self.ctx)
        texts = [self.ctx.rewrites[ex.example_id] or ex.query for ex in examples]
        self.info["rewrites"] = {
            ex.example_id: {"rewrite": t} for ex, t in zip(examples, texts, strict=True)
        }
        return rank_texts(r, examples, texts, self.ctx.depth)


@PERSONAL_RETRIEVERS.register("ttp")
class TTPRetriever(PersonalRetriever):
    """The TTP model: generate a rewrite, embed at ``<embed>``, exact search (see module doc)."""

    name, label, uses_history = "ttp", "TTP (SFT)", True
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
        from personalir.ttp.device import to_device
        from personalir.ttp.model import TTPEncoder, load_adapter, load_backbone

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

        from personalir.ttp.prompts import parse_generated, target_text
        from personalir.ttp.sft import SFTSettings, build_prompt

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

        from personalir.retrieval import encodings as e
        from personalir.ttp.model import TTPEncoder

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


def _ttp_variant(name: str, label: str, adapter: str, intent_q: bool) -> type[TTPRetriever]:
    cls = type(
        f"TTP_{name}",
        (TTPRetriever,),
        {
            "name": name,
            "label": label,
            "adapter": adapter,
            "intent_q": intent_q,
            "table4_row": name == "ttp_rl",
            "__doc__": f"{label}: {TTPRetriever.__doc__}",
        },
    )
    return PERSONAL_RETRIEVERS.register(name)(cls)


# The paper's Table 6 and 7 rows: one registered method per RL variant of ``ttp.rl.variants``
# (``ttp_rl`` is the ``full`` variant) and the two "w/o Intent-Q" retrievals.
RL_METHOD_VARIANTS = {
    "ttp_rl": ("full", "TTP (SFT+RL)"),
    "ttp_rl_no_dynamic_selection": ("no_dynamic_selection", "RL w/o dynamic selection"),
    "ttp_rl_unfrozen_reward": ("unfrozen_reward", "RL, unfrozen reward model"),
    "ttp_rl_no_positive_gain": ("no_positive_gain", "RL w/o positive gain (alpha = 0)"),
    "ttp_rl_no_margin_gain": ("no_margin_gain", "RL w/o margin gain (beta = 0)"),
}
for _name, (_variant, _label) in RL_METHOD_VARIANTS.items():
    _ttp_variant(_name, _label, f"rl:{_variant}", True)
_ttp_variant("ttp_no_intent_q", "TTP (SFT) w/o Intent-Q", "sft", False)
_ttp_variant("ttp_rl_no_intent_q", "TTP (SFT+RL) w/o Intent-Q", "rl:full", False)


@PERSONAL_RETRIEVERS.register("llm_embedding")
class LLMEmbedding(TTPRetriever):
    """The paper's Qwen-Embedding row: an LLM embedder on the TTP backbone without
    generation. Its adapter (rule ``ttp_embedder``) is trained by the SFT recipe with InfoNCE
    alone on the same examples, the prompt holding the query and no history; the run embeds
    ``<think>query</think><embed>`` (nothing generated) and the items with the same model.
    Its job takes the SFT's threads: it encodes every item with the LLM."""

    name, label, uses_history = "llm_embedding", "LLM embedding (no generation)", False
    adapter, intent_q, with_history = "embedder", False, False


def build_retriever(
    method: str, context: RetrievalContext, params: Mapping[str, Any] | None = None
) -> PersonalRetriever:
    return PERSONAL_RETRIEVERS.get(method)(context, params)
