"""The claim record shared by both papers' claim checks: one verdict per paper claim.

A verdict is ``{id, table, text, status, measured, margin, ci_low, ci_high, detail}``:
``status`` is ``held``, ``not held`` or ``not applicable``; ``margin`` and its CI are in
points (x100), positive when the claim holds. A claim that the run cannot evaluate (a method
or a test set missing, too few queries) is ``not applicable`` with the reason in ``detail``,
never silently dropped. NaN becomes ``null`` when the verdicts are written (:func:`json_safe`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

NAN = float("nan")
STATUSES = ("held", "not held", "not applicable")


def points(x: float) -> str:
    """A fraction as signed points with two decimals (``+1.25``), ``nan`` for NaN."""
    return "nan" if math.isnan(x) else f"{100 * x:+.2f}"


def record(
    claim: Mapping,
    status: str,
    measured: str,
    margin: float,
    lo: float,
    hi: float,
    detail: str,
) -> dict:
    """The verdict record of ``claim`` (its ``id``, ``table`` and ``text``) in the canonical
    key order; a list of tables is joined with ``+``."""
    if status not in STATUSES:
        raise ValueError(f"{claim['id']}: unknown claim status {status!r}")
    table = claim.get("table", "")
    return {
        "id": claim["id"],
        "table": "+".join(table) if isinstance(table, list) else table,
        "text": claim.get("text", ""),
        "status": status,
        "measured": measured,
        "margin": margin,
        "ci_low": lo,
        "ci_high": hi,
        "detail": detail,
    }


def verdict(
    claim: Mapping,
    held: bool,
    margin: float,
    lo: float,
    hi: float,
    *,
    measured: str = "",
    detail: str = "",
) -> dict:
    """The verdict on ``claim`` from its margin (a fraction) and the margin's CI; a NaN
    margin (a test set without matched queries) makes it not applicable."""
    status = "not applicable" if math.isnan(margin) else ("held" if held else "not held")
    if math.isnan(margin):
        detail = (detail + "; " if detail else "") + "a test set has no matched queries"
    return record(claim, status, measured, 100 * margin, 100 * lo, 100 * hi, detail)


def not_applicable(claim: Mapping, reason: str) -> dict:
    """The verdict on a claim the run cannot evaluate, with the reason."""
    return record(claim, "not applicable", "", NAN, NAN, NAN, reason)


def json_safe(obj):
    """NaN -> None (recursively), so a claims file is strict JSON."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_safe(v) for v in obj]
    return obj
