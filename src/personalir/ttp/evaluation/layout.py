"""The rows of the TTP paper's ablation tables (6 and 7) and Figure 5: our method names, the
paper's row keys (``config/paper_results/ttp.yaml``) and the row labels.

Derived, not listed: each method class names the paper row it gives per table
(``paper_rows``) and, for a baseline that can take another's place, whom it stands in for
(``stands_in_for``); the paper-results file gives the rows' order."""

from __future__ import annotations

from functools import cache

import yaml

from personalir.common.config import PAPER_RESULTS
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS

SETS = ("General", "Broad", "LongTail")
COLUMNS = (*SETS, "Avg")
MEASURE = "Recall@20"


@cache
def paper_row_order(table: str) -> tuple[str, ...]:
    """The paper's row keys of ``table`` in its order (``rows`` of the table's section of the
    packaged paper-results file; Figure 5's bars of its first test set)."""
    doc = yaml.safe_load((PAPER_RESULTS / "ttp.yaml").read_text(encoding="utf-8")) or {}
    section = doc.get(table) or {}
    if "rows" in section:
        return tuple(section["rows"])
    if table == "figure5":
        return tuple(next(iter(section.values()), {}) or ())
    return tuple(section)


def stand_ins(method: str) -> list[str]:
    """The methods that take ``method``'s ablation rows when it is not evaluated."""
    return [
        n
        for n in sorted(PERSONAL_RETRIEVERS.names())
        if PERSONAL_RETRIEVERS.get(n).stands_in_for == method
    ]


def paper_layout(table: str) -> dict[str, str]:
    """Our method -> the paper's row key of ``table``, in the paper's row order; a method that
    stands in for another follows it, under the same key."""
    by_key: dict[str, list[str]] = {}
    for name in sorted(PERSONAL_RETRIEVERS.names()):
        key = PERSONAL_RETRIEVERS.get(name).paper_rows.get(table)
        if key is not None:
            by_key.setdefault(key, []).append(name)
    out: dict[str, str] = {}
    for key in paper_row_order(table):
        for method in by_key.get(key, []):
            out[method] = key
            for other in stand_ins(method):
                out.setdefault(other, key)
    return out


TABLE6 = paper_layout("table6")
TABLE7 = paper_layout("table7")
FIGURE5 = paper_layout("figure5")
TABLES = {"table6": TABLE6, "table7": TABLE7}
# The methods that can take the paper's Qwen-Embedding row, the first present one does.
QWEN_EMBEDDING_STAND_INS = tuple(m for m, key in TABLE6.items() if key == "qwen_embedding")


def _label(method: str) -> str:
    cls = PERSONAL_RETRIEVERS.get(method)
    stands_in = cls.stands_in_for is not None and cls.paper_rows.get("table6") != TABLE6[method]
    return (cls.stand_in_label or cls.label) if stands_in else cls.label


LABELS = {
    m: _label(m) if m in TABLE6 else PERSONAL_RETRIEVERS.get(m).label
    for m in dict.fromkeys([*TABLE6, *TABLE7, *FIGURE5])
}


def qwen_embedding_stand_in(present) -> str:
    """The method taking the paper's Qwen-Embedding row: ``llm_embedding`` when evaluated,
    else the query-only ``dense`` baseline."""
    return next((m for m in QWEN_EMBEDDING_STAND_INS if m in present), QWEN_EMBEDDING_STAND_INS[-1])
