"""Rule ttp_examples: one example set with the top-N history of each example, and its items.

The examples come from the configured source (:func:`personalir.ttp.inputs.data.load_examples`),
are capped per split, and get their selected history under the relevance model; the report
keeps the step's timings so the benchmark can add them up.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from personalir.common.device import ttp_device
from personalir.common.io import write_json
from personalir.ttp.inputs.data import Example, item_fields, load_examples, write_examples
from personalir.ttp.inputs.history import select_histories
from personalir.ttp.inputs.relevance import build_relevance


def cap_examples(examples: list[Example], split_cfg: Mapping) -> list[Example]:
    """Apply ``max_test_per_label`` (one cap for every label, or label -> cap; a label
    missing from the mapping is not capped) and ``max_train_per_set`` (first by example id)."""
    examples = sorted(examples, key=lambda e: e.example_id)
    out, per_label = [], Counter()
    train = 0
    test_cap = split_cfg["max_test_per_label"]
    for ex in examples:
        if ex.split == "test":
            cap = test_cap.get(ex.label) if isinstance(test_cap, Mapping) else test_cap
            if cap is not None and per_label[ex.label] >= cap:
                continue
            per_label[ex.label] += 1
        elif ex.split == "valid":
            pass  # validation examples are not capped (model selection reads them all)
        else:
            cap = split_cfg["max_train_per_set"]
            if cap is not None and train >= cap:
                continue
            train += 1
        out.append(ex)
    return out


def build_example_set(
    *,
    source: str,
    source_args: Mapping,
    ttp: Mapping,
    examples_out: str | Path,
    items_out: str | Path,
    report_out: str | Path,
    log=print,
) -> dict:

    t0 = time.perf_counter()
    examples, corpus = load_examples(source, **source_args)
    examples = cap_examples(examples, ttp["split"])
    t1 = time.perf_counter()
    relevance = build_relevance(dict(ttp["history"]["relevance"]), ttp_device(ttp))
    select_histories(
        examples,
        corpus,
        relevance,
        int(ttp["history"]["n"]),
        item_fields(ttp),
        int(ttp["items"]["max_features"]),
    )
    t2 = time.perf_counter()
    write_examples(examples_out, examples)
    corpus.write(items_out)
    counts = Counter((e.split, e.label) for e in examples)
    report = {
        "source": source,
        "examples": len(examples),
        "items": len(corpus),
        "by_split_label": {f"{s}/{lab}": n for (s, lab), n in sorted(counts.items())},
        "misspelled": sum(e.misspelled for e in examples),
        "mean_history": float(np.mean([len(e.history) for e in examples])) if examples else 0.0,
        "mean_selected": float(np.mean([len(e.selected_history or []) for e in examples]))
        if examples
        else 0.0,
        "relevance_model": relevance.name,
        "seconds": {"load": round(t1 - t0, 3), "history_selection": round(t2 - t1, 3)},
    }
    write_json(report_out, report)
    log(json.dumps(report))
    return report
