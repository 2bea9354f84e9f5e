"""Exact inner-product search and the per-query measures of one relevant item (ir_measures).

Measures (one relevant item per query, the purchased one), named as in the TTP paper and
computed by ir_measures from the run's order:

=============  =============
Recall@10      ``R@10``
Recall@20      ``R@20``
Recall@100     ``R@100``
MRR@100        ``RR@100``
HR@20          ``Success@20``
nDCG@20        ``nDCG@20``
=============  =============

A query the run does not list retrieves nothing (every measure 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from personalir.ttp.inputs.data import Example

MEASURES = {
    "Recall@10": "R@10",
    "Recall@20": "R@20",
    "Recall@100": "R@100",
    "MRR@100": "RR@100",
    "HR@20": "Success@20",
    "nDCG@20": "nDCG@20",
}
Ranking = dict[str, list[tuple[str, float]]]


def exact_search(
    query_ids: Sequence[str],
    query_emb: np.ndarray,
    item_ids: Sequence[str],
    item_emb: np.ndarray,
    depth: int,
) -> Ranking:
    """Inner-product search over every item (faiss ``IndexFlatIP``); best first."""
    import faiss

    index = faiss.IndexFlatIP(item_emb.shape[1])
    index.add(np.ascontiguousarray(item_emb, dtype=np.float32))
    k = min(depth, len(item_ids))
    scores, idx = index.search(np.ascontiguousarray(query_emb, dtype=np.float32), k)
    return {
        qid: [(item_ids[j], float(s)) for j, s in zip(idx[i], scores[i], strict=True) if j >= 0]
        for i, qid in enumerate(query_ids)
    }


def per_query_measures(
    examples: Sequence[Example], run: Mapping[str, Sequence[str]], method: str
) -> pd.DataFrame:
    """One row per example: identity columns, rank of the target, every measure."""
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in MEASURES.values()]
    qrels = {ex.example_id: {ex.target: 1} for ex in examples}
    scored = {
        ex.example_id: {d: float(len(docs) - i) for i, d in enumerate(docs)}
        for ex in examples
        if (docs := list(run.get(ex.example_id, ())))
    }
    values = {str(m): {} for m in measures}
    for metric in ir_measures.iter_calc(measures, qrels, scored):
        values[str(metric.measure)][metric.query_id] = float(metric.value)
    rows = []
    for ex in examples:
        docs = list(run.get(ex.example_id, ()))
        row = {
            "method": method,
            "example_id": ex.example_id,
            "domain": ex.domain,
            "label": ex.label,
            "misspelled": ex.misspelled,
            "rank": docs.index(ex.target) + 1 if ex.target in docs else 0,
        }
        for name, code in MEASURES.items():
            key = str(ir_measures.parse_measure(code))
            row[name] = values[key].get(ex.example_id, 0.0)
        rows.append(row)
    return pd.DataFrame(rows)
