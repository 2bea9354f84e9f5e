"""Writing-error profiles and personalised error injection (PQB stages 09-10).

Data flow: user sentences -> GEC backends (:mod:`.gec`, cached by sentence hash) -> ERRANT
edits typed by mechanism with syntactic context (:mod:`.edits`) -> per-user profiles with
Laplace smoothing, shrinkage and an explicit fallback (:mod:`.profiles`) -> constrained
injection (:mod:`.inject`) and the error-sampling evaluation (:mod:`.sampling`).

The API for the query stage::

    from personalir.errors import Injector, load_profiles
    profiles = load_profiles("results/errors/<Domain>/profiles.json")
    injector = Injector(core_terms="protect")          # or stage.make_injector(config["errors"])
    result = injector.inject(query, core_terms, profiles[user_id], n_edits=1, seed=seed)
    result.text, result.edits, result.shortfall

See docs/errors.md for the formulas, the constraints and the evaluation protocol.
"""

from __future__ import annotations

from pathlib import Path

from personalir.errors.inject import Constraints, InjectedEdit, InjectionResult, Injector, inject
from personalir.errors.mechanisms import MECHANISM_NAMES, classify
from personalir.errors.profiles import ErrorProfile, ProfileParams, ProfileSet


def load_profiles(path: str | Path) -> ProfileSet:
    """The profiles a run of ``errors_profiles`` wrote (``profiles.json``)."""
    import json

    return ProfileSet.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


__all__ = [
    "MECHANISM_NAMES",
    "Constraints",
    "ErrorProfile",
    "InjectedEdit",
    "InjectionResult",
    "Injector",
    "ProfileParams",
    "ProfileSet",
    "classify",
    "inject",
    "load_profiles",
]
