"""Grammatical error correction backends behind one interface, chained and cached.

A backend turns a batch of sentences into their corrections (``correct``). Backends are
registered by name (:mod:`.base`) and applied in the configured order
(``errors.gec.backends``), each on the previous one's output (:mod:`.chain`); the expensive
ones keep a persistent cache keyed by sentence hash (:mod:`personalir.errors.cache`).

Registered backends, one module each: ``symspell`` (non-word spelling correction,
:mod:`.symspell`), ``quire`` (the packaged GECToR-style tagger, :mod:`.quire`) and ``gector``
(the paper's GECToR, :mod:`.gector`). Importing this package registers all three.
"""

from __future__ import annotations

from personalir.errors.gec.base import (
    GEC_BACKENDS,
    GECBackend,
    GECError,
    apply_spans,
    match_case,
)
from personalir.errors.gec.chain import BackendRun, build_backends, correct_corpus
from personalir.errors.gec.gector import GectorBackend, load_gector
from personalir.errors.gec.quire import (
    RELAXED_GATE_PAIRS,
    QuireBackend,
    quire_prefilter,
    quire_trigger_words,
)
from personalir.errors.gec.symspell import SymSpellBackend

__all__ = [
    "GEC_BACKENDS",
    "RELAXED_GATE_PAIRS",
    "BackendRun",
    "GECBackend",
    "GECError",
    "GectorBackend",
    "QuireBackend",
    "SymSpellBackend",
    "apply_spans",
    "build_backends",
    "correct_corpus",
    "load_gector",
    "match_case",
    "quire_prefilter",
    "quire_trigger_words",
]
