"""Rule ttp_run: one method's TREC run on one example set's test queries.

A method is a registered personalised retriever (:mod:`personalir.ttp.methods.base`) built from
only the config keys it reads (its class's ``params_from_config``), so a change to another
method's keys
does not re-run it. The run's info file names the method's label, models and timings.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from personalir.common.io import write_json
from personalir.common.seeding import rng
from personalir.retrieval.runio import write_run
from personalir.ttp.evaluation.relevance_eval import (
    relevance_examples,
    relevance_of_ranking,
    split_known,
)
from personalir.ttp.inputs.data import ItemCorpus, read_examples
from personalir.ttp.inputs.relevance_set import read_relevance_pairs
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS, build_retriever, method_context
from personalir.ttp.training.decoupled import read_rewrites


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

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    corpus = ItemCorpus.read(items_path)
    test = [e for e in read_examples(examples_path) if e.split == "test"]
    rewrites = {}
    if rewrites_path:
        rewrites = read_rewrites(rewrites_path)
    ctx = method_context(
        corpus,
        ttp,
        models,
        depth=int(ttp["depth"]),
        seed=seed,
        threads=threads,
        rewrites=rewrites,
        model_cache=model_cache,
        encoding_cache=encoding_cache,
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


def relevance_method(
    *,
    method: str,
    pairs_path: str | Path,
    items_path: str | Path,
    ttp: Mapping,
    models: Mapping[str, str],
    seed: int,
    threads: int,
    out: str | Path,
    model_cache: str | None = None,
    encoding_cache: str | None = None,
    log=print,
) -> dict:
    """Rule ttp_relevance: one method's history-free Spearman on a Relevance set
    (:mod:`personalir.ttp.evaluation.relevance_eval`)."""
    import torch

    cls = PERSONAL_RETRIEVERS.get(method)
    if cls.needs_rewrites:
        raise ValueError(
            f"{method}: reads the rewriter's rewrites of the test searches, which a Relevance "
            "set does not have; remove it from ttp.relevance.methods"
        )
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    corpus = ItemCorpus.read(items_path)
    pairs, left_out = split_known(read_relevance_pairs(pairs_path), corpus.ids)
    if not pairs:
        raise ValueError(f"{pairs_path}: no pair's item is in {items_path}")
    examples = relevance_examples(pairs, domain=Path(items_path).parent.name)
    ctx = method_context(
        corpus,
        ttp,
        models,
        depth=len(corpus),  # every item scored
        seed=seed,
        threads=threads,
        model_cache=model_cache,
        encoding_cache=encoding_cache,
    )
    retriever = build_retriever(method, ctx, cls.params_from_config(ttp))
    evaluation = ttp.get("evaluation") or {}
    result = relevance_of_ranking(
        retriever.rank(examples),
        pairs,
        samples=int(evaluation.get("bootstrap_samples", 0)),
        confidence=float(evaluation.get("confidence", 0.95)),
        gen=rng(seed, "relevance_ci", method),
    )
    report = {
        "method": method,
        "label": cls.label,
        "uses_history": cls.uses_history,
        "history": "none (every search has an empty history)",
        "models": dict(models),
        **result,
        "pairs_item_not_in_corpus": left_out,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    write_json(out, report)
    log(f"{method}: Spearman {result['spearman']} over {result['pairs']} pairs")
    return report
