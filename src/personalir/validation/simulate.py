"""Simulated annotators for the embedded default, where no people label the sample.

Five (configurable) annotators, each with a bias ``b_a ~ N(0, bias_sd)`` drawn once (in
ordinal scale steps) and an attribution reliability ``p_a`` drawn once around
``nominal_agreement`` (N(0, 0.05), clipped to [0, 1]). On an ordinal scale an annotator's
label is the judge's label moved by ``b_a + e``, ``e ~ N(0, noise_sd)``, rounded and clipped
to the scale; on a nominal scale it is the judge's label with probability ``p_a``, else one of
the other labels uniformly. The primaries label every assigned question; the adjudicator
labels only those where the primaries differ (two rounds, as with people). A question the judge
left unanswered is skipped (it stays unlabelled downstream, counted, never invented).

Every draw is seeded by (seed, annotator, item, dimension), so the labels do not depend on the
order of the items. The result is written in the CSV layout :func:`human.import_annotations`
reads and imported like any annotators' file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from personalir.common.io import atomic_open
from personalir.common.seeding import derive_seed


def _label(dim, judge_label: str, bias: float, p_keep: float, noise_sd: float, rng) -> str:
    labels = dim.labels
    if dim.scale == "ordinal":
        idx = labels.index(judge_label) + bias + rng.normal(0.0, noise_sd)
        return labels[int(np.clip(np.rint(idx), 0, len(labels) - 1))]
    if rng.random() < p_keep:
        return judge_label
    others = [label for label in labels if label != judge_label]
    return others[int(rng.integers(0, len(others)))]


def simulate_annotations(
    items,
    judgements: pd.DataFrame,
    assignment: pd.DataFrame,
    dimensions,
    *,
    annotators,
    bias_sd: float,
    noise_sd: float,
    nominal_agreement: float,
    seed: int,
) -> pd.DataFrame:
    """Annotations (``item_id, dimension, annotator, label, source``) of simulated people."""
    dims = {d.name: d for d in dimensions}
    judge = {(r.item_id, r.dimension): r.label for r in judgements.itertuples(index=False)}
    traits = {}
    for who in annotators:
        rng = np.random.default_rng(derive_seed(seed, "annotator", who))
        traits[who] = (
            float(rng.normal(0.0, bias_sd)),
            float(np.clip(nominal_agreement + rng.normal(0.0, 0.05), 0.0, 1.0)),
        )
    by_item = {it["item_id"]: it for it in items}
    roles = assignment.groupby("item_id")
    rows = []
    for item_id in sorted(by_item, key=lambda i: by_item[i]["order"]):
        if item_id not in roles.groups:
            continue
        assigned = roles.get_group(item_id)
        primaries = list(assigned[assigned["role"].str.startswith("primary_")]["annotator"])
        adjudicator = list(assigned[assigned["role"] == "adjudicator"]["annotator"])
        for name in by_item[item_id]["dimensions"]:
            if name not in dims or (item_id, name) not in judge:
                continue
            dim, truth = dims[name], judge[(item_id, name)]

            def draw(who, dim=dim, truth=truth, name=name, item_id=item_id):
                rng = np.random.default_rng(derive_seed(seed, "label", who, item_id, name))
                bias, p_keep = traits[who]
                return _label(dim, truth, bias, p_keep, noise_sd, rng)

            given = {who: draw(who) for who in primaries}
            for who, label in given.items():
                rows.append((item_id, name, who, label, f"simulated:{who}"))
            if len(set(given.values())) > 1:
                for who in adjudicator:
                    rows.append((item_id, name, who, draw(who), f"simulated:{who}"))
    return pd.DataFrame(rows, columns=["item_id", "dimension", "annotator", "label", "source"])


def write_annotations_csv(frame: pd.DataFrame, path) -> None:
    """The annotations as the CSV that :func:`human.import_annotations` reads."""
    with atomic_open(path, newline="") as fh:
        frame[["item_id", "dimension", "annotator", "label"]].to_csv(
            fh, index=False, lineterminator="\n"
        )
