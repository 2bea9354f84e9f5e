"""Rule ttp_run: one method's TREC run on one example set's test queries.

A method is a registered personalised retriever (:mod:`personalir.ttp.baselines`) built from
only the config keys it reads (its class's ``params_from_config``), so a change to another
method's keys
does not re-run it. The run's info file names the method's label, models and timings.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from personalir.common.io import write_json
from personalir.ttp.data import ItemCorpus, item_fields, read_examples


def run_method(
    *,
    method: str,
    examples_path: str | Path,
    items_path: str | Path,
    ttp: Mapping,
    models: Mapping[str, str],
    rewrites_path: str | Path | None,
    seed: int,
    threads: int,
    run_out: str | Path,
    info_out: str | Path,
    model_cache: str | None = None,
    encoding_cache: str | None = None,
    log=print,
) -> dict:
    import torch

    from personalir.retrieval.runio import write_run
    from personalir.ttp.baselines import PERSONAL_RETRIEVERS, RetrievalContext, build_retriever

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    corpus = ItemCorpus.read(items_path)
    test = [e for e in read_examples(examples_path) if e.split == "test"]
    rewrites = {}
    if rewrites_path:
        from personalir.ttp.decoupled import read_rewrites

        rewrites = read_rewrites(rewrites_path)
    ctx = RetrievalContext(
        corpus=corpus,
        item_fields=item_fields(ttp),
        max_features=int(ttp["items"]["max_features"]),
        depth=int(ttp["depth"]),
        seed=seed,
        threads=threads,
        models=dict(models),
        rewrites=rewrites,
        model_cache=model_cache or None,
        encoding_cache=encoding_cache or None,
    )
    params = PERSONAL_RETRIEVERS.get(method).params_from_config(ttp)
    retriever = build_retriever(method, ctx, params)
    ranking = retriever.rank(test)
    elapsed = time.perf_counter() - t0
    write_run(run_out, ranking, tag=method)
    cls = PERSONAL_RETRIEVERS.get(method)
    info = {
        "method": method,
        "label": cls.label,
        "uses_history": cls.uses_history,
        "models": dict(models),
        "queries": len(test),
        "seconds": round(elapsed, 3),
        **retriever.info,
    }
    write_json(info_out, info)
    log(f"{method}: {len(test)} queries in {elapsed:.1f}s")
    return info
