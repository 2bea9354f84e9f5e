"""Names that the workflow's rule modules and the evaluation share, kept light (no pandas,
no models) because every workflow start imports them: the history-length sweep's points,
the public sets' measures and the TTP-on-PQB example sets."""

from __future__ import annotations

import copy
from collections.abc import Mapping

# Table 5's measures (the paper's names -> ir_measures).
PUBLIC_MEASURES = {"HR@20": "Success@20", "nDCG@20": "nDCG@20", "Recall@20": "R@20"}


def sweep_values(ttp: Mapping) -> list[int]:
    """The sweep's history lengths, ascending ([] when the sweep is off)."""
    return sorted(int(n) for n in (ttp.get("history_sweep") or {}).get("values") or ())


def point_method(n: int) -> str:
    """The sweep point's method name in the per-query frame."""
    return f"ttp_history_n{int(n)}"


def point_ttp(ttp: Mapping, n: int) -> dict:
    """The ``ttp`` section one sweep point runs with: ``history.n = n``, the sweep's training
    cap and ``sft`` overrides, and a prompt budget grown for the longer history."""
    sweep = ttp.get("history_sweep") or {}
    out = copy.deepcopy(dict(ttp))
    main_n = int(ttp["history"]["n"])
    out["history"] = {**out["history"], "n": int(n)}
    if sweep.get("max_train_per_set") is not None:
        out["split"] = {**out["split"], "max_train_per_set": int(sweep["max_train_per_set"])}
    sft = {**out["sft"], **(sweep.get("sft") or {})}
    extra = max(0, int(n) - main_n) * int(sft["history_item_tokens"])
    sft["max_query_tokens"] = int(sft["max_query_tokens"]) + extra
    out["sft"] = sft
    return out


MODES = ("history", "no_history")
MODE_LABELS = {"history": "with", "no_history": "without", None: "not used"}
SET_PREFIX = "PQB-"
NO_HISTORY_SUFFIX = "-nohistory"
PAIR_ROLES = {"syntactic": ("a", "b"), "writing_error": ("clean", "error")}


def set_name(domain: str, mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown history mode {mode!r} (one of {MODES})")
    return SET_PREFIX + domain + (NO_HISTORY_SUFFIX if mode == "no_history" else "")


def parse_set_name(name: str) -> tuple[str, str]:
    """``PQB-<domain>[-nohistory]`` -> (domain, mode)."""
    if not name.startswith(SET_PREFIX):
        raise ValueError(f"{name!r} is not a TTP-on-PQB set name ({SET_PREFIX}<domain>)")
    rest = name[len(SET_PREFIX) :]
    if rest.endswith(NO_HISTORY_SUFFIX):
        return rest[: -len(NO_HISTORY_SUFFIX)], "no_history"
    return rest, "history"
