"""Personalised retrievers: the TTP model and its baselines, one registered class each.

A :class:`PersonalRetriever` ranks the corpus for :class:`~personalir.ttp.inputs.data.Example`
objects (query plus selected history), so it can use the user's history. Registered in
:data:`PERSONAL_RETRIEVERS` (the config's ``ttp.methods`` lists which run):

``bm25``           query only; the retrieval stage's ``bm25`` retriever (bm25s).
``dense``          query only; the retrieval stage's ``dense`` retriever with the bi-encoder
                   fine-tuned on (query, purchased item) pairs
                   (:mod:`personalir.ttp.training.dense_ft`).
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
                   (:mod:`personalir.ttp.training.decoupled`).
``llm_embedding``  the TTP backbone as an embedder, no history and no generation (the
                   paper's Qwen-Embedding row), trained with InfoNCE alone.
``ttp``            the TTP model itself: generate ``<think>rewrite</think><embed>``, embed at
                   ``<embed>``, exact inner-product search over the items embedded by the same
                   model.

:class:`personalir.ttp.methods.pqb_adapter.PQBPersonalRetriever` adapts any of them to the retrieval
stage's ``Retriever`` interface, so the PQB evaluation can list them with ``class:``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from personalir.common.device import ttp_device
from personalir.common.registry import Registry
from personalir.retrieval.base import RETRIEVERS, QueryText, RunSettings, load_builtin_retrievers
from personalir.retrieval.corpus import corpus_from_texts
from personalir.ttp.inputs.data import Example, ItemCorpus, item_fields
from personalir.ttp.model.search import Ranking


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


@dataclass(frozen=True)
class TrainedModel:
    """A model that a rule trains for one method: the folder under the results root that
    holds it (``{name}`` and other class attributes in braces are filled from the method's
    class) and the two files of it a run depends on (config, weights).

    ``base_model_key``: a ``ttp`` config key (``section.key``) naming the untrained model that
    is used instead when ``enabled_key`` (``section.key``) is false (the dense baselines'
    ``dense.fine_tune``); None: always trained."""

    rule: str
    folder: str
    files: tuple[str, str] = ("config.json", "model.safetensors")
    enabled_key: str | None = None
    base_model_key: str | None = None


# The dense baselines' bi-encoders: fine-tuned by ``ttp_dense_ft`` when ``ttp.dense.fine_tune``,
# one folder per method, else the untrained ``ttp.dense.model``.
DENSE_FINE_TUNED = TrainedModel(
    "ttp_dense_ft", "ttp/dense/{name}", enabled_key="dense.fine_tune", base_model_key="dense.model"
)


class PersonalRetriever:
    """A TTP method. Besides ``rank``, a subclass states what its run needs (read by
    :mod:`personalir.workflow.ttp` to build the ``ttp_run`` job, so no rule names a method):

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
    ``trained_model``   the model of its own that a rule trains (a :class:`TrainedModel`);
                        a role named after a method is that method's trained model
    ``paper_rows``      the paper's row it gives per table (``table4`` ... ``figure5``; keys
                        of ``config/paper_results/ttp.yaml``); the tables' layouts, Table 5's
                        row order and Table 4's paper column are derived from these
    ``stands_in_for``   a method whose ablation rows it takes when that one is not evaluated,
                        with ``stand_in_label`` as the row's label

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
    trained_model: ClassVar[TrainedModel | None] = None
    paper_rows: ClassVar[Mapping[str, str]] = {}
    stands_in_for: ClassVar[str | None] = None
    stand_in_label: ClassVar[str | None] = None

    @classmethod
    def params_from_config(cls, ttp: Mapping[str, Any]) -> dict[str, Any]:
        """The method's parameters from the ``ttp`` config (only ``config_keys`` sections)."""
        return {}

    @classmethod
    def query_text(
        cls, query: str, history_texts: Sequence[str], rewrite: str | None, max_length: int
    ) -> str:
        """The text a bi-encoder of this method embeds for a search, in training and in its
        runs alike: the query; a method with history (``uses_history``) gets the selected
        history items' texts, one that reads rewrites (``needs_rewrites``) the frozen
        rewriter's rewrite; ``max_length`` is the bi-encoder's length in word pieces."""
        return query

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
    package="personalir.ttp.methods",
    symbol="PERSONAL_RETRIEVERS",
)


def stage_retriever(kind: str, model: str | None, ctx: RetrievalContext):
    """A retriever of the retrieval stage, indexed on the item texts."""

    load_builtin_retrievers()
    settings = RunSettings(
        device=ctx.device, seed=ctx.seed, threads=ctx.threads, model_cache=ctx.model_cache
    )
    retriever = RETRIEVERS.get(kind)(model=model, settings=settings)
    retriever.index(corpus_from_texts(ctx.corpus.ids, ctx.item_texts()))
    return retriever


def rank_texts(retriever, examples: Sequence[Example], texts: Sequence[str], depth: int):
    """Rank one text per example (its id the query id) with a retrieval-stage retriever."""

    queries = [QueryText(ex.example_id, t) for ex, t in zip(examples, texts, strict=True)]
    return retriever.rank(queries, depth)


def build_retriever(
    method: str, context: RetrievalContext, params: Mapping[str, Any] | None = None
) -> PersonalRetriever:
    return PERSONAL_RETRIEVERS.get(method)(context, params)


def method_context(
    corpus: ItemCorpus,
    ttp: Mapping,
    models: Mapping[str, str],
    *,
    depth: int,
    seed: int,
    threads: int,
    rewrites: Mapping[str, str] | None = None,
    model_cache: str | None = None,
    encoding_cache: str | None = None,
):
    """What a method's retriever is built with (a ``baselines.RetrievalContext``), its models
    on ``ttp.device``."""

    return RetrievalContext(
        corpus=corpus,
        item_fields=item_fields(ttp),
        max_features=int(ttp["items"]["max_features"]),
        depth=depth,
        seed=seed,
        threads=threads,
        models=dict(models),
        rewrites=dict(rewrites or {}),
        model_cache=model_cache or None,
        encoding_cache=encoding_cache or None,
        device=ttp_device(ttp),
    )
