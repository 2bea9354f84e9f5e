"""The interface every GEC backend implements, its registry, and helpers they share.

A backend turns a batch of sentences into their corrections (``correct``) and names
everything that changes its output (``fingerprint``), so its results can be cached by
sentence hash (:mod:`personalir.errors.cache`). Backends register by name in
:data:`GEC_BACKENDS`; the chain (:mod:`.chain`) applies them in the configured order.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from personalir.common.registry import Registry

GEC_BACKENDS: Registry[type[GECBackend]] = Registry("GEC backend")


class GECError(RuntimeError):
    """A backend cannot run as configured (missing model, package or file)."""


def package_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def json_hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class GECBackend(ABC):
    """One correction model. ``correct`` must be deterministic for a given fingerprint."""

    name: ClassVar[str]
    #: Worth a persistent cache (slow per sentence).
    cacheable: ClassVar[bool] = False

    def __init__(self, params: dict, *, threads: int = 1):
        self.params = dict(params)
        self.threads = threads
        self.counters: dict[str, int] = {}

    def prepare(self, corpus: Sequence[tuple[str, str]]) -> None:  # noqa: B027
        """See the whole (user_id, sentence) corpus before correcting (default: nothing)."""

    def wants(self, sentence: str) -> bool:
        """Whether to run on ``sentence`` at all (a pre-filter); others pass unchanged."""
        return True

    @abstractmethod
    def fingerprint(self) -> str:
        """Hash of everything that changes this backend's output for a given sentence."""

    @abstractmethod
    def correct(self, sentences: list[str]) -> list[str]:
        """Corrections of ``sentences`` (same length, same order)."""


def match_case(template: str, word: str) -> str:
    """Give ``word`` the capitalisation pattern of ``template`` (lower, Title or UPPER)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def apply_spans(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """Replace non-overlapping (start, end, replacement) spans of ``text``."""
    out, last = [], 0
    for start, end, repl in sorted(spans):
        if start < last:
            continue  # overlapping: keep the first (never produced by the decoders here)
        out.append(text[last:start])
        out.append(repl)
        last = end
    out.append(text[last:])
    return "".join(out)
