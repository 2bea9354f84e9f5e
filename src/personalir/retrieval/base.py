"""The retriever interface, the registry of retriever types, and deterministic top-k.

A retriever indexes a :class:`~personalir.retrieval.corpus.Corpus` and ranks query texts to a
depth (>= 200 in the workflow). It is one class registered under a type name::

    @RETRIEVERS.register("my_type")
    class MyRetriever(Retriever):
        family = "dense"
        default_params = {"max_length": 256}
        def index(self, corpus): ...
        def rank(self, queries, depth): ...   # -> {query_id: [(doc_id, score), ...]}

in a module of this package (found without a list, see :mod:`personalir.common.registry`),
and one config entry (``retrieval.retrievers.<name>: {type: my_type, model: ..., params: ...}``)
or, without registering, a class path (``class: "my_package.module:MyRetriever"``).

Ties: every ranking of this package orders documents by score, highest first, then by corpus
position (documents are sorted by id), so equal scores never depend on an algorithm's whim.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from personalir.common.device import resolve_device
from personalir.common.registry import Registry
from personalir.retrieval.corpus import Corpus

FAMILIES = (
    "lexical",
    "learned_sparse",
    "dense",
    "hybrid",
    "late_interaction",
    "llm_reranker",
    "external",
)
#: The PQB paper's retrieval systems (its tables' rows, as named in
#: ``config/paper_results/pqb.yaml``) -> (family, retriever type; None: any type of the family).
#: A retriever of that family (and type) stands in for the system beside the paper's values.
PAPER_SYSTEMS = {"BM25": ("lexical", None), "SPLADE": ("learned_sparse", None)}
PAPER_SYSTEMS |= {"GTE-base": ("dense", None), "BGE-M3 Hybrid": ("hybrid", None)}
PAPER_SYSTEMS |= {"ColBERTv2": ("late_interaction", None)}
PAPER_SYSTEMS |= {"Llama-3.1-8B": ("llm_reranker", "llm_prompt")}
PAPER_SYSTEMS |= {"Qwen3-Reranker-8B": ("llm_reranker", "llm_yesno")}

Ranking = dict[str, list[tuple[str, float]]]


def paper_system(family: str | None, type_: str | None) -> str | None:
    """The paper's system a retriever of ``family`` and ``type_`` stands in for, if any."""
    for paper, (fam, typ) in PAPER_SYSTEMS.items():
        if family == fam and typ in (None, type_):
            return paper
    return None


class RetrieverConfigError(ValueError):
    """A retriever entry of the config is unusable (unknown type, parameter or class)."""


@dataclass(frozen=True)
class QueryText:
    query_id: str
    text: str
    domain: str = ""
    pair_id: str = ""
    kind: str = ""

    @classmethod
    def from_record(cls, rec: Mapping) -> QueryText:
        return cls(
            rec["query_id"],
            rec["text"],
            rec.get("domain", ""),
            rec.get("pair_id", ""),
            rec.get("kind", ""),
        )


@dataclass(frozen=True)
class RunSettings:
    """Settings shared by every retriever of a run (from ``retrieval.*`` of the config)."""

    device: str = "cpu"
    batch_size: int = 32
    seed: int = 0
    threads: int = 1
    allow_download: bool = False
    doc_chunk: int = 4096
    query_chunk: int = 256
    # Dequantised copies of GGUF models shared with the other stages; None: dequantise on load.
    model_cache: str | None = None
    # Corpus and query encodings shared between runs (retrieval.encodings); None: none.
    encoding_cache: str | None = None

    @classmethod
    def from_config(
        cls,
        section: Mapping,
        *,
        seed: int,
        threads: int,
        model_cache: str | None = None,
        encoding_cache: str | None = None,
    ) -> RunSettings:
        return cls(
            device=section.get("device", "cpu"),
            batch_size=int(section.get("batch_size", 32)),
            seed=seed,
            threads=threads,
            allow_download=bool(section.get("allow_download", False)),
            doc_chunk=int(section.get("doc_chunk", 4096)),
            query_chunk=int(section.get("query_chunk", 256)),
            model_cache=model_cache or None,
            encoding_cache=encoding_cache or None,
        )

    def torch_device(self) -> str:

        return resolve_device(self.device, "retrieval.device")


class Retriever(ABC):
    """Index a corpus, rank queries. Subclasses set ``family`` and ``default_params``."""

    family: ClassVar[str] = "external"
    default_params: ClassVar[dict[str, Any]] = {}
    default_model: ClassVar[str | None] = None
    needs_first_stage: ClassVar[bool] = False

    def __init__(
        self,
        model: str | None = None,
        params: Mapping[str, Any] | None = None,
        settings: RunSettings | None = None,
    ):
        self.model = model if model is not None else self.default_model
        self.settings = settings or RunSettings()
        self.params = merge_params(type(self).__name__, self.default_params, params or {})
        self.corpus: Corpus | None = None

    @abstractmethod
    def index(self, corpus: Corpus) -> None:
        """Prepare to rank the documents of ``corpus``."""

    @abstractmethod
    def rank(self, queries: Sequence[QueryText], depth: int) -> Ranking:
        """Query id -> [(doc id, score)], best first, at most ``depth`` documents."""

    def select_queries(self, queries: Sequence[QueryText]) -> list[QueryText]:
        """The queries this retriever evaluates (all by default; rerankers may bound it)."""
        return list(queries)

    def set_first_stage(self, run: Mapping[str, Sequence[str]]) -> None:
        raise RetrieverConfigError(f"{type(self).__name__} does not take a first-stage run")

    def describe(self) -> dict:
        return {
            "class": f"{type(self).__module__}:{type(self).__qualname__}",
            "family": self.family,
            "model": self.model,
            "params": dict(self.params),
        }


def merge_params(owner: str, defaults: Mapping[str, Any], given: Mapping[str, Any]) -> dict:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise RetrieverConfigError(
            f"{owner}: unknown parameter(s) {unknown}; known: {sorted(defaults)}"
        )
    return {**defaults, **given}


# Built-in types live in this package's modules that register into RETRIEVERS (found by
# discovery, see personalir.common.registry); those modules import no model library at module
# level, so listing the registry stays cheap.
RETRIEVERS: Registry[type[Retriever]] = Registry(
    "retriever type",
    required=("family", "default_params"),
    package="personalir.retrieval",
    symbol="RETRIEVERS",
)


def load_builtin_retrievers() -> Registry[type[Retriever]]:
    RETRIEVERS.discover()
    return RETRIEVERS


def import_class(path: str) -> type:
    """``package.module:ClassName`` -> the class (error names what is missing)."""
    if ":" not in path:
        raise RetrieverConfigError(f"class path {path!r} must look like 'package.module:Class'")
    module_name, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise RetrieverConfigError(
            f"cannot import module {module_name!r} of {path!r}: {exc}"
        ) from exc
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise RetrieverConfigError(f"module {module_name!r} has no attribute {qualname!r}")
        obj = getattr(obj, part)
    if not inspect.isclass(obj):
        raise RetrieverConfigError(f"{path!r} is not a class")
    return obj


@dataclass(frozen=True)
class RetrieverSpec:
    """One ``retrieval.retrievers.<name>`` entry of the config."""

    name: str
    type: str | None = None
    cls: str | None = None
    model: str | None = None
    label: str | None = None
    params: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> RetrieverSpec:
        if bool(entry.get("type")) == bool(entry.get("class")):
            raise RetrieverConfigError(
                f"retrieval.retrievers.{name}: give exactly one of 'type' (a registered retriever "
                "type) or 'class' (a 'module:Class' path)"
            )
        return cls(
            name=name,
            type=entry.get("type"),
            cls=entry.get("class"),
            model=entry.get("model"),
            label=entry.get("label"),
            params=dict(entry.get("params") or {}),
        )

    def retriever_class(self) -> type[Retriever]:
        if self.type:
            registry = load_builtin_retrievers()
            try:
                return registry.get(self.type)
            except KeyError as exc:
                raise RetrieverConfigError(
                    f"retrieval.retrievers.{self.name}: {exc.args[0]}"
                ) from None
        klass = import_class(self.cls or "")
        missing = [m for m in ("index", "rank") if not callable(getattr(klass, m, None))]
        if missing:
            raise RetrieverConfigError(
                f"retrieval.retrievers.{self.name}: class {self.cls!r} lacks {missing} "
                "(implement personalir.retrieval.base.Retriever)"
            )
        return klass

    def build(self, settings: RunSettings) -> Retriever:
        klass = self.retriever_class()
        try:
            return klass(model=self.model, params=self.params, settings=settings)
        except RetrieverConfigError as exc:
            raise RetrieverConfigError(f"retrieval.retrievers.{self.name}: {exc}") from None


# --- deterministic top-k ------------------------------------------------------------------


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores of a 1-D array; ties go to the lower index."""
    scores = np.asarray(scores)
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -scores[cand]))
    return cand[order[:k]]


class TopKAccumulator:
    """Running top-k per query over score blocks of consecutive document ranges."""

    def __init__(self, n_queries: int, k: int):
        self.k = k
        self.scores = np.empty((n_queries, 0), dtype=np.float64)
        self.index = np.empty((n_queries, 0), dtype=np.int64)

    def add(self, block: np.ndarray, doc_offset: int) -> None:
        block = np.asarray(block, dtype=np.float64)
        if np.isnan(block).any():
            raise ValueError("scores contain NaN")
        n_q, n_d = block.shape
        idx = np.broadcast_to(np.arange(doc_offset, doc_offset + n_d), (n_q, n_d))
        scores = np.concatenate([self.scores, block], axis=1)
        index = np.concatenate([self.index, idx], axis=1)
        order = np.lexsort((index, -scores), axis=1)[:, : self.k]
        self.scores = np.take_along_axis(scores, order, axis=1)
        self.index = np.take_along_axis(index, order, axis=1)

    def ranking(self, query_ids: Sequence[str], doc_ids: Sequence[str]) -> Ranking:
        return {
            qid: [
                (doc_ids[j], float(s)) for j, s in zip(self.index[i], self.scores[i], strict=True)
            ]
            for i, qid in enumerate(query_ids)
        }


def ranking_from_scores(
    query_ids: Sequence[str], doc_ids: Sequence[str], scores: np.ndarray, depth: int
) -> Ranking:
    """Rank every row of a (queries x documents) score matrix."""
    out: Ranking = {}
    for i, qid in enumerate(query_ids):
        best = top_k(scores[i], depth)
        out[qid] = [(doc_ids[j], float(scores[i, j])) for j in best]
    return out


def chunks(n: int, size: int):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))
